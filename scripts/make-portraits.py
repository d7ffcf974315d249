#!/usr/bin/env python3
"""Draws invented placeholder portraits for a sample roster: flat cartoon
faces (shapes and colours picked from the student id), never photos of
people. Writes ROSTER_DIR/photos/<school_id>/<student_id>.jpg for the students of the
chosen classes, so the gate page's face check shows a face locally; the other
students have no photo (the page says 사진 없음).

The files are school-size: 480×640 JPEGs of about 70 KB, with a camera's
grain (what a school's photo folder holds: 50–150 KB each), so that every
test pays what a real gate pays and the service's smaller copies are made
from real work. Drawn here (a small PNG writer), enlarged, grained and saved
by libvips's command line (Debian's libvips-tools). Deterministic.

usage: make-portraits.py ROSTER_DIR [--grade 1] [--classes 1-5] [--if-missing]
"""
import argparse
import concurrent.futures
import csv
import hashlib
import os
import struct
import subprocess
import tempfile
import zlib

# Drawn on a 96×128 grid, sampled at twice that, so the edges stay smooth at the page's size.
GRID_WIDTH, GRID_HEIGHT, SCALE = 96, 128, 2
WIDTH, HEIGHT = GRID_WIDTH * SCALE, GRID_HEIGHT * SCALE
BACKGROUNDS = [(222, 234, 247), (232, 240, 226), (246, 234, 222), (236, 228, 244), (226, 242, 240)]
SKINS = [(249, 219, 189), (241, 200, 160), (224, 172, 130), (198, 140, 100), (250, 228, 208)]
HAIRS = [(40, 32, 30), (70, 50, 36), (24, 24, 28), (110, 74, 44), (56, 44, 60)]
SHIRTS = [(31, 95, 191), (32, 120, 90), (140, 60, 70), (80, 80, 96), (200, 140, 40), (60, 110, 150)]


def ellipse(cx, cy, rx, ry):
    return lambda x, y: ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1


def rect(x0, y0, x1, y1):
    return lambda x, y: x0 <= x <= x1 and y0 <= y <= y1


def portrait(student_id):
    h = hashlib.sha256(student_id.encode()).digest()
    pick = lambda items, i: items[h[i] % len(items)]
    background, skin, hair, shirt = pick(BACKGROUNDS, 0), pick(SKINS, 1), pick(HAIRS, 2), pick(SHIRTS, 3)
    style = h[4] % 3          # short, side part, long
    glasses = h[5] % 4 == 0
    smile = h[6] % 2 == 0
    face_rx = 22 + h[7] % 4
    layers = [
        (rect(0, 0, GRID_WIDTH, GRID_HEIGHT), background),
        (ellipse(48, 132, 42, 30), shirt),                    # shoulders
        (rect(41, 88, 55, 108), skin),                         # neck
    ]
    if style == 2:
        layers.append((rect(22, 40, 74, 100), hair))          # long hair behind
    layers += [
        (ellipse(48, 62, face_rx, 28), skin),                 # face
        (ellipse(24, 64, 4, 7), skin), (ellipse(72, 64, 4, 7), skin),  # ears
    ]
    cap = ellipse(48, 48, face_rx + 3, 20)
    fringe_line = 44 + h[8] % 6
    if style == 1:
        layers.append((lambda x, y: cap(x, y) and (y < fringe_line or x < 30 + h[9] % 10), hair))
    else:
        layers.append((lambda x, y: cap(x, y) and y < fringe_line, hair))
    eye_y = 64
    layers += [(ellipse(39, eye_y, 2.6, 3.2), (30, 30, 36)), (ellipse(57, eye_y, 2.6, 3.2), (30, 30, 36))]
    if glasses:
        ring = lambda cx: (lambda x, y: 5.2 <= ((x - cx) ** 2 + (y - eye_y) ** 2) ** 0.5 <= 6.6)
        layers += [(ring(39), (60, 60, 70)), (ring(57), (60, 60, 70)), (rect(45, eye_y - 1, 51, eye_y), (60, 60, 70))]
    layers.append((ellipse(48, 72, 2, 1.6), tuple(max(0, c - 40) for c in skin)))      # nose
    if smile:
        layers.append((lambda x, y: 42 <= x <= 54 and 77 <= y <= 81 and ((x - 48) / 6) ** 2 + ((y - 77) / 4) ** 2 <= 1, (170, 70, 80)))
    else:
        layers.append((rect(43, 79, 53, 80), (170, 70, 80)))
    rows = []
    for y in range(HEIGHT):
        row = bytearray([0])
        for x in range(WIDTH):
            colour = background
            for inside, fill in layers:
                if inside((x + 0.5) / SCALE, (y + 0.5) / SCALE):
                    colour = fill
            row += bytes(colour)
        rows.append(bytes(row))
    return png(b"".join(rows))


def png(raw):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("roster")
    parser.add_argument("--grade", type=int, default=1)
    parser.add_argument("--classes", default="1-5")
    parser.add_argument("--if-missing", action="store_true", help="do nothing when every portrait is there")
    args = parser.parse_args()
    first, last = (int(part) for part in args.classes.split("-"))
    with open(os.path.join(args.roster, "students.csv"), encoding="utf-8") as f:
        rows = [row for row in csv.DictReader(f) if int(row["grade"]) == args.grade and first <= int(row["class"]) <= last]
    # A student id is unique within its school only: photos are kept by school.
    schools = {row["school_id"] for row in rows}
    if len(schools) != 1:
        raise SystemExit(f"make-portraits: expected the students of one school, found {sorted(schools)}")
    folder = os.path.join(args.roster, "photos", schools.pop())
    os.makedirs(folder, exist_ok=True)
    ids = [row["student_id"] for row in rows]
    # The layout before photos were kept by school: this script's own portraits, drawn again below.
    for i in ids:
        flat = os.path.join(args.roster, "photos", i + ".jpg")
        if os.path.exists(flat):
            os.remove(flat)
    if args.if_missing and all(os.path.exists(os.path.join(folder, i + ".jpg")) for i in ids):
        return
    with tempfile.TemporaryDirectory() as work:
        vips = lambda *arguments: subprocess.run(["vips", *arguments], check=True, cwd=work)
        vips("gaussnoise", "grain.v", str(WIDTH * 5 // 2), str(HEIGHT * 5 // 2), "--sigma", "5", "--mean", "0")

        def school_size(student_id):
            with open(os.path.join(work, student_id + ".png"), "wb") as out:
                out.write(portrait(student_id))
            vips("resize", student_id + ".png", student_id + ".v", "2.5")
            vips("add", student_id + ".v", "grain.v", student_id + "-grain.v")
            vips("cast", student_id + "-grain.v", os.path.join(os.path.abspath(folder), student_id + ".jpg") + "[Q=88]", "uchar")
            for suffix in (".png", ".v", "-grain.v"):
                os.remove(os.path.join(work, student_id + suffix))

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            list(pool.map(school_size, ids))
    sizes = [os.path.getsize(os.path.join(folder, i + ".jpg")) for i in ids]
    print(f"make-portraits: {len(ids)} drawn school-size portraits in {folder}, {min(sizes) // 1024}–{max(sizes) // 1024} KB each")


if __name__ == "__main__":
    main()
