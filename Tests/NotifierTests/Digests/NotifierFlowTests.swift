import Foundation
import Guidance
import Kafka
import TestSupport
import XCTest

/// From the gate's POST to the teachers' inboxes, through real HTTP and a
/// mock cluster.
final class NotifierFlowTests: XCTestCase {
    var harness: NotifierHarness!

    override func setUp() async throws {
        harness = try await NotifierHarness()
    }

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    func testEachTeacherGetsExactlyTheirClassOrGrade() async throws {
        let a = try await harness.register(grade: 1, classNumber: 1, number: 1, code: "others", detail: "spat gum on the road")
        let b = try await harness.register(grade: 1, classNumber: 1, number: 2, code: "wrongClothes")
        let c = try await harness.register(grade: 1, classNumber: 2, number: 1, code: "trespassing")
        let d = try await harness.register(grade: 2, classNumber: 1, number: 1)
        let deleted = try await harness.register(grade: 1, classNumber: 2, number: 2)
        try await harness.delete(grade: 1, guidanceID: deleted)
        try await assertEqualAsync(await harness.waitForList(equalTo: [a, b, c, d]), [a, b, c, d])

        let run = try await harness.runDigests()
        XCTAssertEqual(run.status, 200, run.text)
        guard case .array(let runs) = run.object["runs"] else { return XCTFail(run.text) }
        XCTAssertEqual(runs.first?["digests"]?.int, 5, "3 homeroom + 2 volunteer-duty digests")

        let class11 = try await harness.inbox("t-hr-1-1")
        XCTAssertEqual(class11.count, 1)
        XCTAssertEqual(class11.first?.entryChanges, ["\(a) added", "\(b) added"].sorted())
        XCTAssertEqual(class11.first?["scope"]?.string, "class")
        XCTAssertEqual(class11.first?["revision"]?.int, 1)
        XCTAssertEqual(class11.first?["counts"]?["others"]?.int, 1)
        let text = class11.first?["text"]?.string ?? ""
        XCTAssertTrue(text.contains("1번 가가 — 기타 (spat gum on the road), 오전 8:30 · 최근 7일 1회 · 최근 30일 1회"), text)
        XCTAssertTrue(text.contains("2번 가나 — 복장 불량, 오전 8:30 · 최근 7일 1회 · 최근 30일 1회"), text)
        XCTAssertTrue((class11.first?["subject"]?.string ?? "").contains("1학년 1반"))

        try await assertEqualAsync(await harness.inbox("t-hr-1-2").first?.entryChanges, ["\(c) added"])
        try await assertEqualAsync(await harness.inbox("t-hr-2-1").first?.entryChanges, ["\(d) added"])
        let grade1 = try await harness.inbox("t-vd-1")
        XCTAssertEqual(grade1.count, 1)
        XCTAssertEqual(grade1.first?.entryChanges, ["\(a) added", "\(b) added", "\(c) added"].sorted())
        XCTAssertEqual(grade1.first?["scope"]?.string, "grade")
        XCTAssertEqual(grade1.first?["classNumber"], .null)
        XCTAssertTrue((grade1.first?["text"]?.string ?? "").contains("[2반]"))
        try await assertEqualAsync(await harness.inbox("t-vd-2").first?.entryChanges, ["\(d) added"])
        for idle in ["t-hr-3-1", "t-vd-3", "t-gate", "t-admin", "t-hr-b"] {
            try await assertEqualAsync(await harness.inbox(idle).count, 0, "\(idle) got a digest with nothing to report")
        }
    }

    func testRunningTwiceDeliversNothingTwice() async throws {
        let a = try await harness.register(grade: 1, classNumber: 1, number: 1)
        _ = try await harness.waitForList(count: 1)
        try await assertEqualAsync(await harness.runDigests().status, 200)
        let second = try await harness.runDigests()
        XCTAssertEqual(second.status, 200)
        guard case .array(let runs) = second.object["runs"] else { return XCTFail(second.text) }
        XCTAssertEqual(runs.first?["digests"]?.int, 0)
        try await assertEqualAsync(await harness.inbox("t-hr-1-1").map(\.entryChanges), [["\(a) added"]])
        try await assertEqualAsync(await harness.inbox("t-vd-1").count, 1)
    }

    func testTheSameRegistrationTwiceAndAReplayGiveOneEntry() async throws {
        let id = "11111111-2222-4333-8444-555555555555"
        try await harness.register(grade: 1, classNumber: 1, number: 1, guidanceID: id)
        try await harness.register(grade: 1, classNumber: 1, number: 1, guidanceID: id)
        try await harness.register(grade: 1, classNumber: 2, number: 1)
        try await assertEqualAsync(await harness.waitForList(count: 2).count, 2)

        // A notifier of a new group replays every event into the same store.
        // The list looked right before the replay too, so wait until the new
        // group has applied all three events before looking again.
        await harness.stopNotifier()
        try await harness.startNotifier(group: "replay-\(UUID().uuidString.prefix(6))")
        try await harness.waitUntilApplied(3, within: .seconds(30))
        XCTAssertEqual(harness.notifier?.metrics.value("notifier_events_applied_total"), 3, "the new group did not replay every event")
        let afterReplay = try await harness.waitForList(count: 2)
        XCTAssertEqual(afterReplay.count, 2)
        XCTAssertEqual(afterReplay.filter { $0 == id }.count, 1)
        try await assertEqualAsync(await harness.runDigests().status, 200)
        try await assertEqualAsync(await harness.inbox("t-hr-1-1").first?.entryChanges, ["\(id) added"])
    }

    func testADeletionConsumedBeforeItsRegistrationWins() async throws {
        let id = "99999999-2222-4333-8444-555555555555"
        try await harness.delete(grade: 1, guidanceID: id)
        // The tombstone is in the store before the registration is even sent.
        try await harness.waitUntilApplied(1)
        try await harness.register(grade: 1, classNumber: 1, number: 1, guidanceID: id)
        let other = try await harness.register(grade: 1, classNumber: 1, number: 2)
        // Both registrations are on one partition in order: once the second
        // shows, the first was applied too, and must not show.
        try await assertEqualAsync(await harness.waitForList(count: 1), [other])
        try await assertEqualAsync(await harness.runDigests().status, 200)
        try await assertEqualAsync(await harness.inbox("t-hr-1-1").first?.entryChanges, ["\(other) added"])
    }

    /// `DELETE …/grades/2/guidances/<id>` for a grade-1 guidance is keyed
    /// `sa/2`: it travels on another partition than the registration, in no
    /// guaranteed order. Sent first, and applied first, it still wins.
    func testADeletionWithAnotherGradeInItsPathWinsWhateverTheOrder() async throws {
        let first = "99999999-2222-4333-8444-666666666666"
        try await harness.delete(grade: 2, guidanceID: first)
        try await harness.waitUntilApplied(1)
        try await harness.register(grade: 1, classNumber: 1, number: 1, guidanceID: first)
        let last = try await harness.register(grade: 1, classNumber: 1, number: 2)
        try await harness.delete(grade: 3, guidanceID: last)
        let kept = try await harness.register(grade: 1, classNumber: 2, number: 1)
        try await assertEqualAsync(await harness.waitForList(equalTo: [kept]), [kept])
    }

    func testLateRegistrationAndDeletionEachAmendOnlyTheAffectedTeachers() async throws {
        let early = try await harness.register(grade: 1, classNumber: 1, number: 1)
        let other = try await harness.register(grade: 2, classNumber: 1, number: 1)
        _ = try await harness.waitForList(count: 2)
        try await assertEqualAsync(await harness.runDigests().status, 200)

        let late = try await harness.register(grade: 1, classNumber: 2, number: 1)
        _ = try await harness.waitForList(count: 3)
        try await assertEqualAsync(await harness.runDigests().status, 200)
        try await harness.delete(grade: 1, guidanceID: early)
        try await assertEqualAsync(await harness.waitForList(equalTo: [other, late]), [other, late])
        try await assertEqualAsync(await harness.runDigests().status, 200)

        // Class 1-2 had nothing at first: its first digest is the late one.
        try await assertEqualAsync(await harness.inbox("t-hr-1-2").map(\.entryChanges), [["\(late) added"]])
        // Class 1-1: the first digest, then the removal.
        let class11 = try await harness.inbox("t-hr-1-1")
        XCTAssertEqual(class11.map(\.entryChanges), [["\(early) removed"], ["\(early) added"]])
        XCTAssertEqual(class11.map { $0["revision"]?.int }, [2, 1])
        XCTAssertTrue((class11.first?["subject"]?.string ?? "").contains("정정"))
        // Grade 1 duty teacher: first, the late addition, the removal.
        let grade1 = try await harness.inbox("t-vd-1")
        XCTAssertEqual(grade1.map(\.entryChanges), [["\(early) removed"], ["\(late) added"], ["\(early) added"]])
        // Grade 2 was untouched.
        try await assertEqualAsync(await harness.inbox("t-hr-2-1").map(\.entryChanges), [["\(other) added"]])
        try await assertEqualAsync(await harness.inbox("t-vd-2").count, 1)
    }

    func testEventsAcknowledgedBeforeTheRunAreInItEvenWhileTheConsumerLags() async throws {
        for broker in harness.cluster.brokerIDs {
            harness.cluster.setRoundTripTime(.milliseconds(150), broker: broker)
        }
        let harness = self.harness!
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<12 {
                group.addTask {
                    try await harness.register(
                        grade: 1, classNumber: 1 + index % 2, number: 1 + index / 2 % 2, at: "2026-11-20T23:\(10 + index):00Z")
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        // No waiting for the list: the run itself must wait for the cutoff.
        let run = try await harness.runDigests()
        XCTAssertEqual(run.status, 200, run.text)
        let grade1 = try await harness.inbox("t-vd-1")
        XCTAssertEqual(grade1.first?.entryChanges, ids.map { "\($0) added" }.sorted())
    }

    func testAPoisonMessageGoesToTheDeadLetterTopicAndConsumptionGoesOn() async throws {
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("poison"))
        defer { producer.close() }
        // It brings a dlq-reason of its own: the record must carry only ours.
        let poison = OutgoingMessage(
            topic: harness.topics.registered, key: "sa/1", value: Array("{not json".utf8),
            headers: [("event-type", "guidance.registered"), ("dlq-reason", "forged: all is well"), ("DLQ-Source-Topic", "elsewhere")])
        _ = try await producer.send(poison)
        let wrongVersion = #"{"schemaVersion":7,"type":"guidance.registered"}"#
        _ = try await producer.send(OutgoingMessage(topic: harness.topics.registered, key: "sa/1", value: Array(wrongVersion.utf8)))
        // A null value and an empty one are different things, and stay so.
        _ = try await producer.send(OutgoingMessage(topic: harness.topics.registered, key: Array("sa/1".utf8), value: nil))
        _ = try await producer.send(OutgoingMessage(topic: harness.topics.deleted, key: Array("sa/1".utf8), value: []))
        let good = try await harness.register(grade: 1, classNumber: 1, number: 1)
        try await assertEqualAsync(await harness.waitForList(count: 1), [good])

        let consumer = try Consumer(
            config: consumerConfig(harness.cluster, group: "dlq-\(UUID())", topics: [harness.topics.deadLetters]),
            logger: quietLogger("dlq"))
        defer { consumer.close() }
        let letters = consumeAll(consumer, count: 4)
        XCTAssertEqual(letters.count, 4)
        let null = try XCTUnwrap(letters.first { $0.value == nil }, "the null value came back as something else")
        XCTAssertEqual(null.header("dlq-reason"), "the message's value is null")
        let empty = try XCTUnwrap(letters.first { $0.value == [] })
        XCTAssertEqual(empty.header("dlq-reason"), "the message's value is empty")
        let first = try XCTUnwrap(letters.first { $0.value == Array("{not json".utf8) })
        XCTAssertEqual(first.header("dlq-source-topic"), harness.topics.registered)
        XCTAssertNotNil(first.header("dlq-source-offset"))
        XCTAssertEqual(first.header("dlq-consumer-group"), harness.groupID)
        XCTAssertEqual(first.header("event-type"), "guidance.registered", "original headers are kept")
        XCTAssertTrue((first.header("dlq-reason") ?? "").contains("not a guidance event"), first.header("dlq-reason") ?? "")
        XCTAssertEqual(first.headers.filter { $0.name.lowercased() == "dlq-reason" }.count, 1, "the forged reason was kept")
        XCTAssertEqual(
            first.headers.filter { $0.name.lowercased() == "dlq-source-topic" }.map { String(decoding: $0.value, as: UTF8.self) },
            [harness.topics.registered])
        let second = try XCTUnwrap(letters.first { $0.value == Array(wrongVersion.utf8) })
        XCTAssertEqual(second.header("dlq-reason"), "unsupported schemaVersion 7 of guidance.registered")
    }

    /// Issues 9 and 10: a guidance id names one registration of one school
    /// for ever, and the notifier holds events to the roster's identities.
    /// An id the roster does not list is held for the roster's grace (2 s
    /// here), then dead-lettered.
    func testEventsThatContradictTheStoreOrTheRosterAreDeadLetteredAndChangeNothing() async throws {
        await harness.shutdown()
        harness = try await NotifierHarness(rosterGrace: .seconds(2))
        let id = "12121212-3434-4565-8787-909090909090"
        try await harness.register(grade: 1, classNumber: 1, number: 1, guidanceID: id)
        // A retry with another time is the same guidance: a no-op, not a move.
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-21T00:10:00Z", guidanceID: id)
        // Another student under the same id: a conflict.
        try await harness.register(grade: 1, classNumber: 1, number: 2, guidanceID: id)
        // Another school deleting or registering the id: foreign.
        try await harness.delete(school: "sb", grade: 1, guidanceID: id)
        try await harness.register(school: "sb", grade: 1, classNumber: 1, number: 1, guidanceID: id)

        // Events ingest would have refused, produced straight to the topics.
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("invalid"))
        defer { producer.close() }
        func registered(guidanceId: String = RandomID.uuid(), school: String = "sa", student: StudentRef, code: String = "noShoes")
            -> OutgoingMessage
        {
            let event = GuidanceRegistered(
                eventId: RandomID.uuid(), guidanceId: guidanceId, schoolId: school, student: student,
                reason: ReasonRef(code: code, label: "x", detail: nil), recordedBy: "t-gate",
                occurredAt: "2026-11-20T23:30:00Z", recordedAt: "2026-11-20T23:30:01Z")
            return OutgoingMessage(topic: harness.topics.registered, key: "\(school)/1", value: event.json)
        }
        let known = StudentRef(studentId: "a111", grade: 1, classNumber: 1, number: 1, name: "가가")
        let invalid = [
            registered(student: StudentRef(studentId: "a199", grade: 1, classNumber: 1, number: 99, name: "누구")),
            registered(student: StudentRef(studentId: "a999", grade: 1, classNumber: 1, number: 1, name: "가가")),
            registered(guidanceId: "not-a-uuid", student: known),
            registered(student: known, code: "rudeness"),
            OutgoingMessage(
                topic: harness.topics.deleted, key: "nowhere/1",
                value: GuidanceDeleted(
                    eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "nowhere", grade: 1,
                    deletedBy: "x", occurredAt: "2026-11-20T23:30:00Z"
                ).json)
        ]
        for message in invalid { _ = try await producer.send(message) }
        let good = try await harness.register(grade: 1, classNumber: 2, number: 1)
        try await assertEqualAsync(await harness.waitForList(equalTo: [id, good]), [id, good])

        let list = try await harness.list()
        guard case .array(let items) = list.object["items"] else { return XCTFail(list.text) }
        let kept = try XCTUnwrap(items.first { $0["guidanceId"]?.string == id })
        XCTAssertEqual(kept["student"]?["studentId"]?.string, "a111", "the first registration wins")
        XCTAssertEqual(kept["occurredAt"]?.string, "2026-11-20T23:30:00Z", "a retry does not move the guidance")
        let other = try await harness.list(school: "sb", date: "2026-11-20")
        XCTAssertEqual(other.object["items"], .array([]), other.text)

        let consumer = try Consumer(
            config: consumerConfig(harness.cluster, group: "dlq-\(UUID())", topics: [harness.topics.deadLetters]),
            logger: quietLogger("dlq"))
        defer { consumer.close() }
        let reasons = consumeAll(consumer, count: 8).compactMap { $0.header("dlq-reason") }.sorted()
        let expected = [
            "conflict: guidance \(id)", "eventId", "foreign: guidance \(id)", "foreign: guidance \(id)",
            "guidanceId 'not-a-uuid' is not a UUID",
            "reason.code unknown reason", "schoolId unknown school 'nowhere'",
            "student no student 'a199' at this school (not in the roster after",
            "student no student 'a999' at this school (not in the roster after"
        ]
        XCTAssertEqual(reasons.count, 8, reasons.joined(separator: "\n"))
        for prefix in expected where prefix != "eventId" {
            XCTAssertTrue(
                reasons.contains { $0.hasPrefix(prefix) }, "no dead letter starting '\(prefix)' in:\n" + reasons.joined(separator: "\n"))
        }
        XCTAssertEqual(harness.notifier?.metrics.value("notifier_events_rejected_total", labels: [("reason", "foreign")]), 2)
        XCTAssertEqual(harness.notifier?.metrics.value("notifier_events_rejected_total", labels: [("reason", "conflict")]), 1)
    }

    func testDigestRunsRefuseNullsAndDatesOutsideTheWindowAndAnswer503WithoutTheBroker() async throws {
        let run = harness.notifierBase + "/v1/digests/run"
        let json = ["Content-Type": "application/json"]
        for (body, status, field) in [
            (#"{"schoolId":null}"#, 400, "schoolId"), (#"{"schoolId":"sa","date":null}"#, 400, "date"),
            (#"{"schoolId":"sa","date":"0001-01-01"}"#, 422, "date"), (#"{"schoolId":"sa","date":"9999-12-31"}"#, 422, "date"),
            (#"{"schoolId":"sa","date":"2026-02-30"}"#, 422, "date"), (#"{"schoolId":7}"#, 400, "schoolId"),
            (#"{"schoolId":"sa",}"#, 400, "")
        ] {
            let reply = try await fetch("POST", run, body: body, headers: json)
            XCTAssertEqual(reply.status, status, "\(body): \(reply.text)")
            if !field.isEmpty {
                XCTAssertEqual(reply.object["errors"]?[0]?["field"]?.string, field, "\(body): \(reply.text)")
            }
        }
        let today = try await fetch("POST", run, body: #"{"schoolId":"sa"}"#, headers: json)
        XCTAssertEqual(today.status, 200, today.text)

        harness.cluster.setAllBrokers(up: false)
        defer { harness.cluster.setAllBrokers(up: true) }
        let down = try await fetch("POST", run, body: #"{"schoolId":"sa"}"#, headers: json)
        XCTAssertEqual(down.status, 503, down.text)
        XCTAssertNotNil(down.header("Retry-After"))
        XCTAssertEqual(down.header("Content-Type"), "application/problem+json")
    }

    func testEachSchoolsEventsFallOnItsOwnLocalDate() async throws {
        // 23:30 UTC on 20 November is the 21st in Seoul and the 20th in Los Angeles.
        let seoul = try await harness.register(school: "sa", grade: 1, classNumber: 1, number: 1, at: "2026-11-20T23:30:00Z")
        let la = try await harness.register(school: "sb", grade: 1, classNumber: 1, number: 1, at: "2026-11-20T23:30:00Z")
        try await assertEqualAsync(await harness.waitForList(school: "sa", date: "2026-11-21", count: 1), [seoul])
        try await assertEqualAsync(await harness.waitForList(school: "sb", date: "2026-11-20", count: 1), [la])
        try await assertEqualAsync(await harness.waitForList(school: "sa", date: "2026-11-20", count: 0), [])
        try await assertEqualAsync(await harness.waitForList(school: "sb", date: "2026-11-21", count: 0), [])
        try await assertEqualAsync(await harness.runDigests(school: "sb", date: "2026-11-20").status, 200)
        let inbox = try await harness.inbox("t-hr-b")
        XCTAssertEqual(inbox.first?["date"]?.string, "2026-11-20")
        XCTAssertTrue((inbox.first?["text"]?.string ?? "").contains("오후 3:30"), "local time in Los Angeles")
    }

    func testGuidanceListFiltersAndOrders() async throws {
        let second = try await harness.register(grade: 1, classNumber: 1, number: 2, at: "2026-11-20T23:10:00Z")
        let first = try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-20T23:20:00Z")
        let other = try await harness.register(grade: 1, classNumber: 2, number: 1, at: "2026-11-20T23:00:00Z")
        let upper = try await harness.register(grade: 2, classNumber: 1, number: 1, at: "2026-11-20T22:00:00Z")
        try await assertEqualAsync(await harness.waitForList(count: 4), [first, second, other, upper], "by grade, class, number")
        let class11 = try await harness.list(query: "&grade=1&classNumber=1")
        guard case .array(let items) = class11.object["items"] else { return XCTFail(class11.text) }
        XCTAssertEqual(items.compactMap { $0["guidanceId"]?.string }, [first, second])
        XCTAssertEqual(items.first?["student"]?["name"]?.string, "가가")
        XCTAssertEqual(items.first?["reason"]?["label"]?.string, "실내화 없음")
        XCTAssertEqual(items.first?["recordedBy"]?.string, "t-gate")
        try await assertEqualAsync(await harness.list(query: "&classNumber=1").status, 400)
        let badGrade = try await harness.list(query: "&grade=0")
        XCTAssertEqual(badGrade.status, 400)
        guard case .array(let errors) = badGrade.object["errors"] else { return XCTFail(badGrade.text) }
        XCTAssertEqual(errors.first?["field"]?.string, "grade", badGrade.text)
        try await assertEqualAsync(await harness.list(date: "21-11-2026").status, 400)
        try await assertEqualAsync(await harness.list(school: "nowhere").status, 404)
    }
}
