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

    /// Service events are read back by the notifier's own reader: every field, `note` as null when absent.
    func testServiceEventsReadBackAsWritten() throws {
        for note in [nil, awkward] {
            let recorded = CommunityServiceRecorded(
                eventId: RandomID.uuid(),
                record: CommunityServiceRecord(
                    serviceId: RandomID.uuid(), schoolId: "demo-hs", grade: 1, studentId: "s10312", date: "2026-12-01", sessions: 2,
                    note: note, recordedBy: "t-vd-1", recordedAt: "2026-12-01T06:00:00Z"))
            XCTAssertEqual(try CommunityServiceRecorded(json: JSONFields(JSONReader.object(recorded.json))), recorded)
            if note == nil { XCTAssertTrue(String(decoding: recorded.json, as: UTF8.self).contains("\"note\":null")) }
        }
        let withdrawn = CommunityServiceWithdrawn(
            eventId: RandomID.uuid(), serviceId: RandomID.uuid(), schoolId: "demo-hs", grade: 1, studentId: awkward,
            withdrawnBy: "t-vd-1", occurredAt: "2026-12-01T07:00:00Z")
        XCTAssertEqual(try CommunityServiceWithdrawn(json: JSONFields(JSONReader.object(withdrawn.json))), withdrawn)
        XCTAssertTrue(String(decoding: withdrawn.json, as: UTF8.self).contains("\"type\":\"guidance.service.withdrawn\""))
        let sitting = CommunityServiceSittingAdded(
            eventId: RandomID.uuid(), sittingId: RandomID.uuid(), schoolId: "demo-hs",
            slot: SlotTime(date: "2026-12-09", time: "16:00", place: awkward), capacity: 4, addedBy: "t-admin",
            addedAt: "2026-12-01T07:00:00Z")
        XCTAssertEqual(try CommunityServiceSittingAdded(json: JSONFields(JSONReader.object(sitting.json))), sitting)
        XCTAssertTrue(String(decoding: sitting.json, as: UTF8.self).contains("\"type\":\"guidance.service.sitting\""))
        XCTAssertThrowsError(
            try CommunityServiceRecorded(
                json: JSONFields(
                    JSONReader.object(
                        Array(
                            #"{"eventId":"e","serviceId":"s","schoolId":"x","grade":1,"studentId":"s","date":"2026-12-01","sessions":0,"recordedBy":"t","recordedAt":"t"}"#
                                .utf8)))),
            "sessions outside 1-20")
    }

    func testDeletedJSONDecodesToTheSameEventAndMatchesJSONEncoder() throws {
        let event = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs", grade: 2,
            deletedBy: awkward, occurredAt: "2026-11-30T07:52:10Z")
        XCTAssertEqual(try JSONDecoder().decode(GuidanceDeleted.self, from: Data(event.json)), event)
        try assertSameJSON(event.json, try JSONEncoder().encode(event))
    }

    func testEventsReadBackAsWrittenAndBrokenOnesNameTheirField() throws {
        let registered = GuidanceRegistered(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs",
            student: StudentRef(studentId: "s10312", grade: 1, classNumber: 3, number: 12, name: "김민지"),
            reason: ReasonRef(code: "others", label: "기타", detail: "체육복 / 운동화"),
            recordedBy: "t-gate-01", occurredAt: "2026-11-30T07:52:10Z", recordedAt: "2026-11-30T07:52:11Z")
        XCTAssertEqual(try GuidanceRegistered(json: JSONFields(JSONReader.object(registered.json))), registered)
        let deleted = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs", grade: 2,
            deletedBy: "t-gate-01", occurredAt: "2026-11-30T07:52:10Z")
        XCTAssertEqual(try GuidanceDeleted(json: JSONFields(JSONReader.object(deleted.json))), deleted)

        let text = String(decoding: registered.json, as: UTF8.self)
        let broken: [(String, String)] = [
            (text.replacingOccurrences(of: #","recordedAt":"2026-11-30T07:52:11Z""#, with: ""), "recordedAt is required"),
            (text.replacingOccurrences(of: #""grade":1"#, with: #""grade":"1""#), "student.grade must be a whole number, not a string"),
            (text.replacingOccurrences(of: #""grade":1"#, with: #""grade":-1"#), "student.grade must be a whole number from 1 to 65535"),
            (text.replacingOccurrences(of: #""detail":"체육복 / 운동화""#, with: #""detail":3"#), "reason.detail must be a string, not a number")
        ]
        for (body, message) in broken {
            XCTAssertNotEqual(body, text)
            XCTAssertThrowsError(try GuidanceRegistered(json: JSONFields(JSONReader.object(Array(body.utf8)))), body) { error in
                XCTAssertEqual("\(error)", message)
            }
        }
        // Escaped strings read back as written.
        let escaped = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "demo-hs", grade: 2,
            deletedBy: awkward, occurredAt: "2026-11-30T07:52:10Z")
        XCTAssertEqual(try GuidanceDeleted(json: JSONFields(JSONReader.object(escaped.json))), escaped)
    }

    private func assertSameJSON(_ written: [UInt8], _ encoded: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        let a = try JSONSerialization.jsonObject(with: Data(written)) as? NSDictionary
        let b = try JSONSerialization.jsonObject(with: encoded) as? NSDictionary
        XCTAssertNotNil(a, file: file, line: line)
        XCTAssertEqual(a, b, file: file, line: line)
    }
}
