import Foundation
import Guidance
import Store
import XCTest

@testable import Notifier

/// The day list is written field by field into one buffer; it must read back
/// as the contract's `GuidanceList`, escapes and nulls included.
final class GuidanceListJSONTests: XCTestCase {
    func testTheListReadsBackAsTheContractSaysWithEscapesAndNulls() throws {
        let records = [
            GuidanceRecord(
                guidanceId: "g1", schoolId: "sa", date: "2026-11-30",
                student: StudentRef(studentId: "s1", grade: 1, classNumber: 2, number: 3, name: "김\"민\\지"),
                reason: ReasonRef(code: "others", label: "기타", detail: "줄\n바꿈"), occurredAt: "2026-11-29T22:52:10Z", recordedBy: "t-gate"),
            GuidanceRecord(
                guidanceId: "g2", schoolId: "sa", date: "2026-11-30",
                student: StudentRef(studentId: "s2", grade: 1, classNumber: 2, number: 4, name: "이서준"),
                reason: ReasonRef(code: "noShoes", label: "실내화 없음", detail: nil), occurredAt: "2026-11-29T23:01:00Z", recordedBy: "t-gate")
        ]
        let frequencies = ["s1": Frequency(last7Days: 2, last30Days: 5)]
        let body = NotifierHandlers.guidanceList(
            school: "sa", date: "2026-11-30", records, frequency: { frequencies[$0.student.studentId] }
        ) { _ in nil }.collected()
        let list = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        XCTAssertEqual(list["schoolId"] as? String, "sa")
        XCTAssertEqual(list["date"] as? String, "2026-11-30")
        let items = try XCTUnwrap(list["items"] as? [[String: Any]])
        XCTAssertEqual(items.map { $0["guidanceId"] as? String }, ["g1", "g2"])
        let student = try XCTUnwrap(items[0]["student"] as? [String: Any])
        XCTAssertEqual(student["name"] as? String, "김\"민\\지")
        XCTAssertEqual(student["classNumber"] as? Int, 2)
        XCTAssertEqual((items[0]["reason"] as? [String: Any])?["detail"] as? String, "줄\n바꿈")
        XCTAssertTrue((items[1]["reason"] as? [String: Any])?["detail"] is NSNull, "detail is required, null when absent")
        XCTAssertEqual(items[1]["recordedBy"] as? String, "t-gate")
        XCTAssertEqual(items[1]["occurredAt"] as? String, "2026-11-29T23:01:00Z")
        XCTAssertEqual(items[0]["frequency"] as? [String: Int], ["last7Days": 2, "last30Days": 5])
        XCTAssertEqual(
            NotifierHandlers.guidanceList(school: "sa", date: "2026-11-30", [], frequency: { _ in nil }) { _ in nil }.collected(),
            Array(#"{"date":"2026-11-30","items":[],"schoolId":"sa"}"#.utf8))
    }

    /// Written as it is sent, a piece of 256 items at a time: 601 items are
    /// three pieces that read back as one list, every item once, in order.
    func testAListOfManyPiecesReadsBackWhole() throws {
        let records = (0..<601).map { index in
            GuidanceRecord(
                guidanceId: "g\(index)", schoolId: "sa", date: "2026-11-30",
                student: StudentRef(studentId: "s\(index)", grade: 1, classNumber: 2, number: index % 40 + 1, name: "학생\(index)"),
                reason: ReasonRef(code: "noShoes", label: "실내화 없음", detail: nil), occurredAt: "2026-11-29T23:01:00Z",
                recordedBy: "t-gate")
        }
        let stream = NotifierHandlers.guidanceList(
            school: "sa", date: "2026-11-30", period: ("2026-11-30", "2026-11-30"), records, frequency: { _ in nil }
        ) { _ in nil }
        var pieces: [[UInt8]] = []
        while let piece = stream.piece() { pieces.append(piece) }
        XCTAssertEqual(pieces.count, 3)
        XCTAssertNil(stream.piece(), "over stays over")
        let list = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(pieces.joined())) as? [String: Any])
        let items = try XCTUnwrap(list["items"] as? [[String: Any]])
        XCTAssertEqual(items.compactMap { $0["guidanceId"] as? String }, records.map(\.guidanceId))
        XCTAssertEqual(list["from"] as? String, "2026-11-30")
        XCTAssertEqual(list["schoolId"] as? String, "sa")
    }
}
