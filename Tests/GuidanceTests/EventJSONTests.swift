import Common
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

    func testPlainEventsAreReadWithoutJSONDecoderAndOthersLeftToIt() throws {
        let registered = GuidanceRegistered(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs",
            student: StudentRef(studentId: "s10312", grade: 1, classNumber: 3, number: 12, name: "김민지"),
            reason: ReasonRef(code: "others", label: "기타", detail: "체육복 / 운동화"),
            recordedBy: "t-gate-01", occurredAt: "2026-11-30T07:52:10Z", recordedAt: "2026-11-30T07:52:11Z")
        XCTAssertEqual(JSONReader.object(registered.json).flatMap(GuidanceRegistered.init(plain:)), registered)
        let deleted = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs", grade: 2,
            deletedBy: "t-gate-01", occurredAt: "2026-11-30T07:52:10Z")
        XCTAssertEqual(JSONReader.object(deleted.json).flatMap(GuidanceDeleted.init(plain:)), deleted)

        // A newer schema version is read as it is, for the notifier to refuse.
        let text = String(decoding: registered.json, as: UTF8.self)
        let version2 = JSONReader.object(Array(text.replacingOccurrences(of: #""schemaVersion":1"#, with: #""schemaVersion":2"#).utf8))
        XCTAssertEqual(version2.flatMap(GuidanceRegistered.init(plain:))?.schemaVersion, 2)
        // Missing or mistyped fields are left to JSONDecoder, which names them.
        for broken in [
            text.replacingOccurrences(of: #""recordedAt":"2026-11-30T07:52:11Z","#, with: "").replacingOccurrences(of: #","recordedAt":"2026-11-30T07:52:11Z""#, with: ""),
            text.replacingOccurrences(of: #""grade":1"#, with: #""grade":"1""#),
            text.replacingOccurrences(of: #""type":"guidance.registered""#, with: #""type":"guidance.renamed""#),
            text.replacingOccurrences(of: #""detail":"체육복 / 운동화""#, with: #""detail":3"#),
        ] {
            XCTAssertNotEqual(broken, text)
            XCTAssertNil(JSONReader.object(Array(broken.utf8)).flatMap(GuidanceRegistered.init(plain:)), broken)
        }
        // Escaped strings are JSONDecoder's too.
        let escaped = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs", grade: 2,
            deletedBy: awkward, occurredAt: "2026-11-30T07:52:10Z")
        XCTAssertNil(JSONReader.object(escaped.json))
    }

    private func assertSameJSON(_ written: [UInt8], _ encoded: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        let a = try JSONSerialization.jsonObject(with: Data(written)) as? NSDictionary
        let b = try JSONSerialization.jsonObject(with: encoded) as? NSDictionary
        XCTAssertNotNil(a, file: file, line: line)
        XCTAssertEqual(a, b, file: file, line: line)
    }
}
