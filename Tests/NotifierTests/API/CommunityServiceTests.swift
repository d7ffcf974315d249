import Foundation
import Guidance
import Kafka
import TestSupport
import XCTest

@testable import Notifier

/// The 봉사 명단: what each stopped student owes, has served and has left,
/// from events in any order, across a replay; who may read and record it;
/// the weekly list on Mondays.
final class CommunityServiceTests: XCTestCase {
    var running: NotifierHarness?

    override func tearDown() async throws {
        await running?.shutdown()
        running = nil
    }

    /// trespassing owes two sessions here.
    static let reasons = "school_id,code,label,requires_detail,service_sessions\nsa,trespassing,무단횡단,false,2\n"

    /// `{studentId: (owed, served, outstanding)}` of the list, polled until it equals `expected` (or 20 s).
    func standings(_ harness: NotifierHarness, query: String = "", as teacher: String? = nil, equalTo expected: [String: [Int]])
        async throws -> [String: [Int]]
    {
        try await eventually {
            let reply = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service\(query)", headers: harness.headers(teacher))
            XCTAssertEqual(reply.status, 200, reply.text)
            var found: [String: [Int]] = [:]
            if case .array(let items) = reply.object["items"] {
                for item in items {
                    found[item["student"]?["studentId"]?.string ?? ""] = [
                        item["owed"]?.int ?? -1, item["served"]?.int ?? -1, item["outstanding"]?.int ?? -1
                    ]
                }
            }
            return found
        } until: {
            $0 == expected
        }
    }

    func registered(_ id: String, student: String, seat: (Int, Int, Int), code: String = "noShoes", at: String = "2026-11-20T23:30:00Z")
        -> GuidanceRegistered
    {
        GuidanceRegistered(
            eventId: UUID().uuidString.lowercased(), guidanceId: id, schoolId: "sa",
            student: StudentRef(studentId: student, grade: seat.0, classNumber: seat.1, number: seat.2, name: "?"),
            reason: ReasonRef(code: code, label: code, detail: nil), recordedBy: "t-gate", occurredAt: at, recordedAt: at)
    }

    func recorded(_ id: String, student: String, grade: Int = 1, sessions: Int = 1, date: String = "2026-11-21") -> CommunityServiceRecorded
    {
        CommunityServiceRecorded(
            eventId: UUID().uuidString.lowercased(),
            record: CommunityServiceRecord(
                serviceId: id, schoolId: "sa", grade: grade, studentId: student, date: date,
                sessions: sessions, note: nil, recordedBy: "t-vd-1", recordedAt: "2026-11-21T06:00:00Z"))
    }

    func withdrawn(_ id: String, student: String, grade: Int = 1) -> CommunityServiceWithdrawn {
        CommunityServiceWithdrawn(
            eventId: UUID().uuidString.lowercased(), serviceId: id, schoolId: "sa", grade: grade, studentId: student,
            withdrawnBy: "t-vd-1", occurredAt: "2026-11-21T07:00:00Z")
    }

    func testAccountsHoldInAnyArrivalOrderWithRetriesAndAcrossAReplay() async throws {
        let harness = try await NotifierHarness(reasons: Self.reasons)
        running = harness
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("service"))
        defer { producer.close() }
        let ids = (0..<8).map { _ in UUID().uuidString.lowercased() }
        let topics = harness.topics
        let deletion = GuidanceDeleted(
            eventId: UUID().uuidString.lowercased(), guidanceId: ids[2], schoolId: "sa", grade: 1,
            deletedBy: "t-gate", occurredAt: "2026-11-21T00:00:00Z")
        // Deliberately against the grain: a deletion before its registration,
        // a withdrawal before its record, each record and registration twice.
        let events: [(String, [UInt8])] = [
            (topics.deleted, deletion.json),
            (topics.communityService, withdrawn(ids[5], student: "a111").json),
            (topics.registered, registered(ids[0], student: "a111", seat: (1, 1, 1)).json),
            (topics.communityService, recorded(ids[4], student: "a111").json),
            (topics.registered, registered(ids[1], student: "a111", seat: (1, 1, 1)).json),
            (topics.registered, registered(ids[2], student: "a111", seat: (1, 1, 1)).json),
            (topics.communityService, recorded(ids[5], student: "a111").json),
            (topics.communityService, recorded(ids[4], student: "a111").json),
            (topics.registered, registered(ids[0], student: "a111", seat: (1, 1, 1)).json),
            (topics.registered, registered(ids[3], student: "a112", seat: (1, 1, 2)).json),
            (topics.communityService, recorded(ids[6], student: "a112", sessions: 2).json),
            (topics.registered, registered(ids[7], student: "a121", seat: (1, 2, 1), code: "trespassing").json)
        ]
        for (topic, value) in events {
            _ = try await producer.send(OutgoingMessage(topic: topic, key: "sa/1", value: value))
        }
        // a111: three guidances, one deleted (2 owed); one record kept, one withdrawn (1 served).
        // a112: one owed, two served: nothing left, no credit. a121: trespassing owes two.
        let expected = ["a111": [2, 1, 1], "a112": [1, 2, 0], "a121": [2, 0, 2]]
        let first = try await standings(harness, equalTo: expected)
        XCTAssertEqual(first, expected)

        // Replayed from the start into the same store (what a kill -9 before the commit redelivers): nothing changes.
        await harness.stopNotifier()
        try await harness.startNotifier(group: "replay-\(UUID().uuidString.prefix(6))")
        try await harness.waitUntilApplied(Double(events.count))
        let replayed = try await standings(harness, equalTo: expected)
        XCTAssertEqual(replayed, expected)
        // Only those owing, students with service left first.
        let owing = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service?owing=true", headers: harness.headers(nil))
        guard case .array(let items) = owing.object["items"] else { return XCTFail(owing.text) }
        XCTAssertEqual(items.compactMap { $0["student"]?["studentId"]?.string }, ["a111", "a121"])
        XCTAssertEqual(items.first?["lastGuidance"]?["reason"]?["label"]?.string, "실내화 없음")
        XCTAssertEqual(items.first?["services"]?[0]?["serviceId"]?.string, ids[4])
    }

    func testRolesAndScopesAndIdempotentRecordsThroughTheIngestAndTheTeacherPagesRoute() async throws {
        let harness = try await NotifierHarness(authentication: true)
        running = harness
        try await harness.register(grade: 1, classNumber: 1, number: 1, as: "t-gate")
        try await harness.register(grade: 1, classNumber: 2, number: 1, as: "t-gate")
        try await harness.register(grade: 2, classNumber: 1, number: 1, as: "t-gate")
        _ = try await harness.waitForList(count: 3, as: "t-admin")
        let service = "\(harness.notifierBase)/v1/schools/sa/service"
        // Scopes: volunteer duty their grade, homeroom their class, admins the school.
        let grade = try await standings(harness, as: "t-vd-1", equalTo: ["a111": [1, 0, 1], "a121": [1, 0, 1]])
        XCTAssertEqual(grade, ["a111": [1, 0, 1], "a121": [1, 0, 1]])
        let homeroom = try await standings(harness, as: "t-hr-1-1", equalTo: ["a111": [1, 0, 1]])
        XCTAssertEqual(homeroom, ["a111": [1, 0, 1]])
        let school = try await standings(harness, as: "t-admin", equalTo: ["a111": [1, 0, 1], "a121": [1, 0, 1], "a211": [1, 0, 1]])
        XCTAssertEqual(school.count, 3)
        for (query, teacher) in [("?grade=2", "t-vd-1"), ("?grade=1&class=2", "t-hr-1-1"), ("", "t-gate"), ("", "t-hr-b")] {
            let reply = try await fetch("GET", service + query, headers: harness.headers(teacher))
            XCTAssertEqual(reply.status, 403, "\(teacher) \(query): \(reply.text)")
        }

        // Recording: volunteer duty of the grade and admins; a retry with the same id counts once.
        let record = { (teacher: String, grade: Int, student: String, body: String, base: String) async throws -> Reply in
            try await fetch(
                "POST", "\(base)/v1/schools/sa/grades/\(grade)/students/\(student)/service", body: body, headers: harness.headers(teacher))
        }
        let serviceID = UUID().uuidString.lowercased()
        let body = #"{"serviceId":"\#(serviceID)","date":"2026-11-21","sessions":1,"note":"  화단 정리  "}"#
        for (teacher, grade, student) in [("t-hr-1-1", 1, "a111"), ("t-vd-1", 2, "a211"), ("t-gate", 1, "a111")] {
            let reply = try await record(teacher, grade, student, body, harness.ingestBase)
            XCTAssertEqual(reply.status, 403, "\(teacher): \(reply.text)")
        }
        for base in [harness.ingestBase, harness.notifierBase, harness.ingestBase] {
            let reply = try await record("t-vd-1", 1, "a111", body, base)
            XCTAssertEqual(reply.status, 202, reply.text)
            XCTAssertEqual(reply.object["serviceId"]?.string, serviceID)
        }
        let after = try await standings(harness, as: "t-vd-1", equalTo: ["a111": [1, 1, 0], "a121": [1, 0, 1]])
        XCTAssertEqual(after, ["a111": [1, 1, 0], "a121": [1, 0, 1]], "three acknowledged retries, one record")
        let listed = try await fetch("GET", service, headers: harness.headers("t-vd-1"))
        guard case .array(let items) = listed.object["items"] else { return XCTFail(listed.text) }
        let a111 = try XCTUnwrap(items.first { $0["student"]?["studentId"]?.string == "a111" })
        XCTAssertEqual(a111["services"]?[0]?["note"]?.string, "화단 정리", "the note trimmed")
        XCTAssertEqual(a111["lastServiceDate"]?.string, "2026-11-21")

        // Bad input: a clear 400/422 and no event.
        let bad = [
            (#"{"date":"2026-11-21","sessions":1}"#, 400, "serviceId"),
            (#"{"serviceId":"nope","date":"2026-11-21","sessions":1}"#, 400, "serviceId"),
            (#"{"serviceId":"\#(UUID())","date":"2126-11-21","sessions":1}"#, 422, "date"),
            (#"{"serviceId":"\#(UUID())","date":"2026-11-31","sessions":1}"#, 422, "date"),
            (#"{"serviceId":"\#(UUID())","date":"2026-11-21","sessions":0}"#, 422, "sessions"),
            (#"{"serviceId":"\#(UUID())","date":"2026-11-21","sessions":"1"}"#, 400, "sessions"),
            (#"{"serviceId":"\#(UUID())","date":"2026-11-21","sessions":1,"outcome":null}"#, 400, "outcome")
        ]
        for (text, status, field) in bad {
            for base in [harness.ingestBase, harness.notifierBase] {
                let reply = try await record("t-vd-1", 1, "a111", text, base)
                XCTAssertEqual(reply.status, status, "\(text): \(reply.text)")
                XCTAssertTrue(reply.text.contains(field), reply.text)
            }
        }
        // A body that says it is not JSON: 415 from either service (`Forwarding` passes its type on).
        for base in [harness.ingestBase, harness.notifierBase] {
            let plain = try await fetch(
                "POST", "\(base)/v1/schools/sa/grades/1/students/a111/service", body: body,
                headers: harness.headers("t-vd-1").merging(["Content-Type": "text/plain"]) { $1 })
            XCTAssertEqual(plain.status, 415, "\(base): \(plain.text)")
        }

        let unknown = try await record(
            "t-vd-1", 1, "a999", #"{"serviceId":"\#(UUID())","date":"2026-11-21","sessions":1}"#, harness.ingestBase)
        XCTAssertEqual(unknown.status, 422, unknown.text)

        // The path authorizes nothing by itself: grade 1's teacher cannot take
        // back a grade-2 student's record through a grade-1 path, nor name a
        // student the roster does not list (no event either way).
        for student in ["a211", "a%01x", "%2E%2E", "a999"] {
            let foreign = try await fetch(
                "DELETE", "\(harness.ingestBase)/v1/schools/sa/grades/1/students/\(student)/service/\(serviceID)",
                headers: harness.headers("t-vd-1"))
            XCTAssertEqual(foreign.status, 422, "\(student): \(foreign.text)")
            XCTAssertTrue(foreign.text.contains("studentId"), foreign.text)
        }

        // Taken back (through the teacher page's route): owed again.
        let withdraw = try await fetch(
            "DELETE", "\(harness.notifierBase)/v1/schools/sa/grades/1/students/a111/service/\(serviceID)",
            headers: harness.headers("t-vd-1"))
        XCTAssertEqual(withdraw.status, 202, withdraw.text)
        let back = try await standings(harness, as: "t-vd-1", equalTo: ["a111": [1, 0, 1], "a121": [1, 0, 1]])
        XCTAssertEqual(back, ["a111": [1, 0, 1], "a121": [1, 0, 1]])

        // An admin's export holds the record and who took it back; erasure removes the student's account.
        let export = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/students/a111/records", headers: harness.headers("t-admin"))
        XCTAssertEqual(export.status, 200, export.text)
        XCTAssertEqual(export.object["services"]?[0]?["serviceId"]?.string, serviceID)
        XCTAssertEqual(export.object["services"]?[0]?["withdrawnBy"]?.string, "t-vd-1")
        let erased = try await fetch(
            "DELETE", "\(harness.notifierBase)/v1/schools/sa/students/a111/records", headers: harness.headers("t-admin"))
        XCTAssertEqual(erased.status, 200, erased.text)
        let gone = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/students/a111/records", headers: harness.headers("t-admin"))
        XCTAssertEqual(gone.object["services"], .array([]), gone.text)
        // An id that is no student of the school and has nothing stored: 404 for the erasure as for the export.
        // Nor is `(erased)`, what erased students become in stored digests (they hold a111's now).
        for method in ["GET", "DELETE"] {
            for id in ["a999", "%28erased%29"] {
                let nobody = try await fetch(
                    method, "\(harness.notifierBase)/v1/schools/sa/students/\(id)/records", headers: harness.headers("t-admin"))
                XCTAssertEqual(nobody.status, 404, "\(method) \(id): \(nobody.text)")
            }
        }
        let remaining = try await standings(harness, as: "t-vd-1", equalTo: ["a121": [1, 0, 1]])
        XCTAssertEqual(remaining, ["a121": [1, 0, 1]])
    }

    /// Monday 2026-11-23, 09:30 in Seoul.
    static let monday: @Sendable () -> Double = { Timestamp.parse("2026-11-23T00:30:00Z")! }

    func testTheWeeklyListIsWrittenOnceOnAMondayEmailedAndAmended() async throws {
        let sink = try Counterpart(interpreter: DeliveryTests.systemPython, script: "smtp-sink.py")
        try sink.start()
        defer { sink.stop() }
        let delivery = DeliveryTests.delivery(smtpPort: sink.port)
        let harness = try await NotifierHarness(clock: Self.monday, delivery: delivery)
        running = harness
        try await harness.register(grade: 1, classNumber: 1, number: 1)
        try await harness.register(grade: 1, classNumber: 1, number: 1, code: "wrongClothes", at: "2026-11-21T00:10:00Z")
        try await harness.register(grade: 1, classNumber: 2, number: 1)
        _ = try await harness.waitForList(count: 3)
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("service"))
        defer { producer.close() }
        let served = UUID().uuidString.lowercased()
        _ = try await producer.send(
            OutgoingMessage(topic: harness.topics.communityService, key: "sa/1", value: recorded(served, student: "a121").json))
        _ = try await standings(harness, equalTo: ["a111": [2, 0, 2], "a121": [1, 1, 0]])

        // Saturday's lists show what each student has left.
        let saturday = try await harness.runDigests(date: "2026-11-21")
        XCTAssertEqual(saturday.status, 200, saturday.text)
        let hr = try await harness.inbox("t-hr-1-1")
        let daily = try XCTUnwrap(hr.first)
        XCTAssertEqual(daily["entries"]?[0]?["service"]?["outstanding"]?.int, 2)
        XCTAssertTrue(daily["text"]?.string?.contains("남은 봉사 2회") ?? false, daily["text"]?.string ?? "")

        // Monday: each volunteer-duty teacher's 봉사 명단, once.
        let run = try await harness.runDigests(date: "2026-11-23")
        XCTAssertEqual(run.status, 200, run.text)
        let weekly = try await harness.inbox("t-vd-1").filter { $0["scope"]?.string == "service" }
        XCTAssertEqual(weekly.count, 1)
        let list = try XCTUnwrap(weekly.first)
        XCTAssertEqual(list["digestId"]?.string, "sa.2026-11-23.t-vd-1.service.r1")
        XCTAssertEqual(list["subject"]?.string, "[서울고] 11월 23일(월) 1학년 봉사 명단 1명")
        XCTAssertEqual(list["entries"]?[0]?["student"]?["studentId"]?.string, "a111")
        XCTAssertEqual(list["entries"]?[0]?["service"]?["outstanding"]?.int, 2)
        XCTAssertTrue(
            list["text"]?.string?.contains("1번 가가 — 남은 봉사 2회 (봉사 2회 중 0회 완료) · 최근 지도 11월 21일(토) 복장 불량") ?? false,
            list["text"]?.string ?? "")
        let mails = try await sink.waitFor { $0.contains { ($0["digestId"] as? String) == "sa.2026-11-23.t-vd-1.service.r1" } }
        let mail = try XCTUnwrap(mails.first { ($0["digestId"] as? String) == "sa.2026-11-23.t-vd-1.service.r1" })
        XCTAssertEqual(mail["to"] as? [String], ["t-vd-1@sa.school.example"])
        XCTAssertEqual(mail["subject"] as? String, list["subject"]?.string)

        let again = try await harness.runDigests(date: "2026-11-23")
        XCTAssertEqual(again.object["runs"]?[0]?["digests"]?.int, 0, again.text)
        let once = try await harness.inbox("t-vd-1").filter { $0["scope"]?.string == "service" }
        XCTAssertEqual(once.count, 1, "written once")

        // The record taken back after the list went out: an amendment adds the student.
        _ = try await producer.send(
            OutgoingMessage(topic: harness.topics.communityService, key: "sa/1", value: withdrawn(served, student: "a121").json))
        _ = try await standings(harness, equalTo: ["a111": [2, 0, 2], "a121": [1, 0, 1]])
        let amended = try await harness.runDigests(date: "2026-11-23")
        XCTAssertEqual(amended.status, 200, amended.text)
        let revisions = try await harness.inbox("t-vd-1").filter { $0["scope"]?.string == "service" }
        XCTAssertEqual(revisions.count, 2)
        XCTAssertEqual(revisions.first?["subject"]?.string, "[서울고] 11월 23일(월) 1학년 봉사 명단 1차 정정: 추가 1명")
        XCTAssertEqual(revisions.first?["entries"]?[0]?["student"]?["studentId"]?.string, "a121")

        // Not on a Tuesday.
        let tuesday = try await harness.runDigests(date: "2026-11-24")
        XCTAssertEqual(tuesday.status, 200, tuesday.text)
        let still = try await harness.inbox("t-vd-1").filter { $0["scope"]?.string == "service" }
        XCTAssertEqual(still.count, 2)
    }
}
