#!/usr/bin/env python3
"""Writes an invented roster: one sample school by default, or a district.

Each school has 3 grades with 10, 12 and 9 classes of 28-32 students, a
homeroom teacher per class, a volunteer-duty teacher per grade, three gate
teachers and an admin; the sample school has two rules (rules.csv). tokens.csv holds the SHA-256 of each teacher's demo
token, which is "demo-<teacher_id>". Deterministic: same arguments, same files.

usage: make-roster.py OUT_DIR [--schools N] [--rules] [--service]
"""
import argparse
import csv
import hashlib
import os
import random

SURNAMES = "김 이 박 최 정 강 조 윤 장 임 한 오 서 신 권 황 안 송 류 홍".split()
SYLLABLES = "민 서 지 현 우 준 하 윤 도 예 수 연 은 주 시 태 건 채 유 아 성 재 영 진 나 다 소 희 원 호".split()
CLASSES = {1: 10, 2: 12, 3: 9}


def name(rng):
    return rng.choice(SURNAMES) + rng.choice(SYLLABLES) + rng.choice(SYLLABLES)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--schools", type=int, default=1)
    parser.add_argument("--rules", action="store_true", help="the sample's rules.csv for every school (measuring their cost)")
    parser.add_argument("--service", action="store_true",
                        help="the sample's 교내봉사 policy, sittings and calendar for every school (measuring their cost)")
    args = parser.parse_args()
    rng = random.Random(20261130)
    os.makedirs(args.out, exist_ok=True)
    if args.schools == 1:
        school_ids = [("demo-hs", "한빛고등학교")]
    else:
        school_ids = [(f"school-{i:03d}", f"제{i}고등학교") for i in range(1, args.schools + 1)]

    with open(os.path.join(args.out, "schools.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["school_id", "name", "timezone", "digest_time", "service_due_days"])
        service = args.schools == 1 or args.service
        for school_id, school_name in school_ids:
            w.writerow([school_id, school_name, "Asia/Seoul", "08:50", 5 if service else ""])

    # The sample school's 교내봉사 sittings and calendar (README, "The roster's files").
    if service:
        with open(os.path.join(args.out, "service_slots.csv"), "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["school_id", "weekday", "time", "place", "capacity"])
            for school_id, _ in school_ids:
                for weekday in ("tue", "thu"):
                    w.writerow([school_id, weekday, "16:00", "학생부 상담실", 10])
        with open(os.path.join(args.out, "calendar.csv"), "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["school_id", "date", "end_date", "name"])
            w.writerow(["*", "2026-12-25", "", "성탄절"])
            w.writerow(["*", "2027-01-01", "", "신정"])
            for school_id, _ in school_ids:
                w.writerow([school_id, "2027-04-15", "", "개교기념일"])

    # The sample school's rules that flag repeats (README, "The roster's files").
    if args.schools == 1 or args.rules:
        with open(os.path.join(args.out, "rules.csv"), "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["school_id", "reason", "count", "days", "notify", "label", "urgent"])
            for school_id, _ in school_ids:
                w.writerow([school_id, "*", 3, 7, "homeroom+admin", "학생부장 상담 대상", "false"])
                w.writerow([school_id, "*", 10, 30, "homeroom+volunteer_duty+admin", "선도위원회 검토 대상", "true"])

    students = open(os.path.join(args.out, "students.csv"), "w", newline="", encoding="utf-8")
    teachers = open(os.path.join(args.out, "teachers.csv"), "w", newline="", encoding="utf-8")
    tokens = open(os.path.join(args.out, "tokens.csv"), "w", newline="", encoding="utf-8")
    sw, tw, kw = (csv.writer(x, lineterminator="\n") for x in (students, teachers, tokens))
    sw.writerow(["school_id", "student_id", "grade", "class", "number", "name", "photo_url"])
    tw.writerow(["school_id", "teacher_id", "name", "email", "role", "grade", "class"])
    kw.writerow(["token_sha256", "teacher_id"])

    def teacher(school_id, teacher_id, role, grade="", klass=""):
        tw.writerow([school_id, teacher_id, name(rng), f"{teacher_id}@{school_id}.school.example", role, grade, klass])
        kw.writerow([hashlib.sha256(f"demo-{teacher_id}".encode()).hexdigest(), teacher_id])

    for school_id, _ in school_ids:
        prefix = "" if args.schools == 1 else f"{school_id}-"
        for grade, classes in CLASSES.items():
            teacher(school_id, f"{prefix}t-vd-{grade}", "volunteer_duty", grade)
            for klass in range(1, classes + 1):
                # 1학년 2반's homeroom teacher takes turns at the gate too (roles joined by +).
                role = "homeroom+gate" if (grade, klass) == (1, 2) else "homeroom"
                teacher(school_id, f"{prefix}t-hr-{grade}-{klass:02d}", role, grade, klass)
                for number in range(1, rng.randint(28, 32) + 1):
                    student_id = f"s{grade}{klass:02d}{number:02d}"
                    sw.writerow([school_id, student_id, grade, klass, number, name(rng),
                                 ""])
        for gate in range(1, 4):
            teacher(school_id, f"{prefix}t-gate-{gate:02d}", "gate")
        teacher(school_id, f"{prefix}t-admin", "admin")
    for x in (students, teachers, tokens):
        x.close()


if __name__ == "__main__":
    main()
