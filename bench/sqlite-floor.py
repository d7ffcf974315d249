#!/usr/bin/env python3
"""The SQLite floor under apply (row 8 of scripts/bench): the store's own
guidances table and indexes, copied from a store the notifier made, and one
registration upsert per statement, 5,000 to a transaction, WAL and
synchronous=FULL as the store runs them. The rows are built before the clock
starts: no Kafka, no decoding, no roster. Python's sqlite3 binds in C.

usage: sqlite-floor.py STORE_PATH [EVENTS]   prints "sqlite floor: … rows/s"
"""
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid

store, events = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as source:
    schema = [sql for (sql,) in source.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'guidances' AND sql IS NOT NULL ORDER BY type DESC")]
if not schema:
    sys.exit(f"sqlite-floor: {store} has no guidances table")

upsert = """INSERT INTO guidances (guidance_id, school_id, grade, local_date, class_number, number, student_id,
    student_name, reason_code, reason_label, reason_detail, recorded_by, occurred_at, registered)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
    ON CONFLICT (guidance_id) DO UPDATE SET registered = 1 WHERE guidances.registered = 0"""
rows = []
for _ in range(events):
    grade, class_number, number = random.randint(1, 3), random.randint(1, 10), random.randint(1, 30)
    rows.append((str(uuid.uuid4()), f"school-{random.randrange(200):03d}", grade, "2026-11-30", class_number, number,
                 f"s{grade}{class_number:02d}{number:02d}", "김민준", "noShoes", "실내화 미착용", None, "t-gate-01",
                 "2026-11-29T22:52:10.123Z"))

with tempfile.TemporaryDirectory(prefix="sqlite-floor-") as directory:
    db = sqlite3.connect(os.path.join(directory, "floor.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    for sql in schema:
        db.execute(sql)
    started = time.monotonic()
    for start in range(0, events, 5000):
        db.execute("BEGIN")
        db.executemany(upsert, rows[start:start + 5000])
        db.execute("COMMIT")
    seconds = time.monotonic() - started
    db.close()
print(f"sqlite floor: {events} registrations upserted into the store's guidances table: {events / seconds:.0f} rows/s ({seconds:.2f} s)")
