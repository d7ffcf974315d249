#!/usr/bin/env python3
"""Counts what an XCTest run did from its log: `executed skipped failed`,
where failed is the number of tests that failed, not of failed assertions
(XCTest's own summary says "with 6 failures" for 2 tests with 3 each).

    xctest_counts.py LOG      prints the three numbers
    xctest_counts.py --check  checks itself on a sample log (exit 1 if wrong)
"""
import re
import sys

SAMPLE = """\
Test Case 'A.testOne' started at 2026-12-02 06:00:00.000
/x.swift:1: error: A.testOne : XCTAssertEqual failed
/x.swift:2: error: A.testOne : XCTAssertEqual failed
/x.swift:3: error: A.testOne : XCTAssertTrue failed
Test Case 'A.testOne' failed (0.1 seconds)
Test Case 'A.testTwo' passed (0.1 seconds)
Test Case 'B.testThree' skipped (0.0 seconds)
/y.swift:1: error: B.testFour : XCTAssertEqual failed
/y.swift:2: error: B.testFour : XCTAssertEqual failed
/y.swift:3: error: B.testFour : XCTAssertEqual failed
Test Case 'B.testFour' failed (0.2 seconds)
Test Suite 'All tests' failed at 2026-12-02 06:00:01.000
\t Executed 4 tests, with 1 test skipped and 6 failures (0 unexpected) in 0.4 (0.4) seconds
"""


def counts(text):
    summaries = re.findall(r"Executed (\d+) tests?, with (?:(\d+) tests? skipped and )?\d+ failures?", text)
    executed, skipped = (int(summaries[-1][0]), int(summaries[-1][1] or 0)) if summaries else (0, 0)
    failed = len(set(re.findall(r"^Test Case '([^']*)' failed", text, re.MULTILINE)))
    return executed, skipped, failed


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        found = counts(SAMPLE)
        print(f"xctest_counts: sample counted as {found}, expected (4, 1, 2)")
        sys.exit(0 if found == (4, 1, 2) else 1)
    with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
        print(*counts(log.read()))
