import Common
import Foundation
import Guidance
import XCTest

@testable import Store

/// A digest's entries and counts columns: what `JSONEncoder` wrote before
/// (rows of earlier versions) reads back, and what is written now reads the
/// same with `JSONDecoder`. An entry written before `frequency` was counted
/// (the second) reads back without it.
final class DigestColumnsTests: XCTestCase {
    private let entries = [
        DigestEntry(
            guidanceId: "a", student: StudentRef(studentId: "s1", grade: 1, classNumber: 3, number: 12, name: "김\"민지\"\n"),
            reason: ReasonRef(code: "others", label: "기타", detail: "교문 앞 \\ 껌"), occurredAt: "2026-11-30T07:52:10Z", change: .added,
            frequency: Frequency(last7Days: 2, last30Days: 5)),
        DigestEntry(
            guidanceId: "b", student: StudentRef(studentId: "s2", grade: 1, classNumber: 3, number: 13, name: "이서준"),
            reason: ReasonRef(code: "noShoes", label: "실내화 없음", detail: nil), occurredAt: "2026-11-30T07:53:00Z", change: .removed)
    ]
    private let counts = ["others": 1, "noShoes": 2, "wrong\"Clothes": 0]

    func testOldRowsWrittenByJSONEncoderReadBack() throws {
        let oldEntries = String(decoding: try JSONEncoder().encode(entries), as: UTF8.self)
        let oldCounts = String(decoding: try JSONEncoder().encode(counts), as: UTF8.self)
        XCTAssertEqual(try DigestColumns.entries(from: oldEntries), entries)
        XCTAssertEqual(try DigestColumns.counts(from: oldCounts), counts)
        XCTAssertEqual(try DigestColumns.entries(from: "[]"), [])
    }

    func testWhatIsWrittenReadsTheSameWithJSONDecoder() throws {
        let written = DigestColumns.entries(entries)
        XCTAssertEqual(try JSONDecoder().decode([DigestEntry].self, from: Data(written.utf8)), entries)
        XCTAssertEqual(try DigestColumns.entries(from: written), entries)
        XCTAssertTrue(written.contains(#""detail":null"#), written)
        XCTAssertEqual(try JSONDecoder().decode([String: Int].self, from: Data(DigestColumns.counts(counts).utf8)), counts)
        XCTAssertEqual(try DigestColumns.counts(from: DigestColumns.counts(counts)), counts)
        XCTAssertEqual(DigestColumns.counts([:]), "{}")
    }

    /// Counts stored before they were the last 7 and 30 days (a calendar
    /// week's and month's) read back under the new names.
    func testAnEntryStoredWithTheWeekAndMonthReadsBack() throws {
        let old =
            #"[{"guidanceId":"a","student":{"studentId":"s1","grade":1,"classNumber":3,"number":12,"name":"김민지"},"#
            + #""reason":{"code":"noShoes","label":"실내화 없음","detail":null},"occurredAt":"2026-11-30T07:52:10Z","change":"added","#
            + #""frequency":{"thisWeek":2,"thisMonth":3}}]"#
        XCTAssertEqual(try DigestColumns.entries(from: old).first?.frequency, Frequency(last7Days: 2, last30Days: 3))
    }

    func testABrokenColumnSaysWhatIsWrong() {
        XCTAssertThrowsError(try DigestColumns.entries(from: #"{"a":1}"#))
        XCTAssertThrowsError(try DigestColumns.entries(from: #"[{"guidanceId":"a"}]"#)) { error in
            XCTAssertEqual((error as? FieldError)?.field, "student")
        }
        XCTAssertThrowsError(try DigestColumns.counts(from: #"{"others":"one"}"#))
    }
}
