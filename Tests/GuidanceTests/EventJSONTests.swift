import Foundation
import Guidance
import XCTest

/// The events are written by hand on the ingest's hot path and read with
/// `Codable` by the notifier; both must agree on every field and every string.
final class EventJSONTests: XCTestCase {
    let awkward = "line\nbreak \"quoted\" back\\slash\ttab \u{01} 한글 / é 🎒"

    func testRegisteredJSONDecodesToTheSameEventAndMatchesJSONEncoder() throws {
        for detail in [nil, awkward] {
            let event = GuidanceRegistered(
                eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs",
                student: StudentRef(studentId: "s10312", grade: 1, classNumber: 3, number: 12, name: awkward),
                reason: ReasonRef(code: "others", label: "기타", detail: detail),
                recordedBy: "t-gate-01", occurredAt: "2026-11-30T07:52:10Z", recordedAt: "2026-11-30T07:52:11Z")
            XCTAssertEqual(try JSONDecoder().decode(GuidanceRegistered.self, from: Data(event.json)), event)
            try assertSameJSON(event.json, try JSONEncoder().encode(event))
            if detail == nil { XCTAssertTrue(String(decoding: event.json, as: UTF8.self).contains("\"detail\":null")) }
        }
    }

    func testDeletedJSONDecodesToTheSameEventAndMatchesJSONEncoder() throws {
        let event = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs", grade: 2,
            deletedBy: awkward, occurredAt: "2026-11-30T07:52:10Z")
        XCTAssertEqual(try JSONDecoder().decode(GuidanceDeleted.self, from: Data(event.json)), event)
        try assertSameJSON(event.json, try JSONEncoder().encode(event))
    }

    private func assertSameJSON(_ written: [UInt8], _ encoded: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        let a = try JSONSerialization.jsonObject(with: Data(written)) as? NSDictionary
        let b = try JSONSerialization.jsonObject(with: encoded) as? NSDictionary
        XCTAssertNotNil(a, file: file, line: line)
        XCTAssertEqual(a, b, file: file, line: line)
    }
}
