import Foundation
import Guidance
import TestSupport
import XCTest

@testable import Notifier

/// A rule crossing is a task, not only a message (issue 66): it opens one
/// case, in the 할 일 of the teachers its rule names within seconds; two
/// teachers move it through the school's states through the ingest, one
/// history kept; a deletion that undoes the crossing withdraws it (철회).
final class CaseFlowTests: XCTestCase {
    var harness: NotifierHarness?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    static let rules = """
        school_id,reason,count,days,notify,label,urgent
        sa,*,3,7,homeroom+admin,선도위원회 검토 대상,true

        """

    /// The caller's 할 일: its cases and counts.
    func todo(_ harness: NotifierHarness, as teacher: String, scope: String = "mine") async throws -> AnyCodable {
        let reply = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/cases?scope=\(scope)", headers: harness.headers(teacher))
        XCTAssertEqual(reply.status, 200, reply.text)
        return .object(reply.object)
    }

    func step(_ harness: NotifierHarness, _ caseID: String, as teacher: String, _ body: String, status: Int = 202) async throws {
        let reply = try await fetch(
            "POST", "\(harness.ingestBase)/v1/schools/sa/grades/1/students/a111/cases/\(caseID)/steps", body: body,
            headers: harness.headers(teacher))
        XCTAssertEqual(reply.status, status, reply.text)
    }

    /// The case file, read again until `done` holds (steps travel through Kafka).
    func file(_ harness: NotifierHarness, _ caseID: String, as teacher: String, until done: @escaping (AnyCodable) -> Bool)
        async throws -> AnyCodable
    {
        try await eventually(within: .seconds(10)) {
            AnyCodable.object(
                try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/cases/\(caseID)", headers: harness.headers(teacher)).object)
        } until: {
            done($0)
        }
    }

    /// Three records of 가가 (1학년 1반 1번) in three days, by the gate
    /// teacher: the rule is crossed, and the case is in `teacher`'s 할 일.
    func crossTheRule(_ harness: NotifierHarness, seenBy teacher: String) async throws -> (records: [String], todo: AnyCodable) {
        let now = Date().timeIntervalSince1970
        var records: [String] = []
        for hoursAgo in [50.0, 26, 1] {
            records.append(
                try await harness.register(grade: 1, classNumber: 1, number: 1, at: Timestamp.format(now - hoursAgo * 3600), as: "t-gate"))
        }
        let opened = try await eventually(within: .seconds(10)) {
            try await self.todo(harness, as: teacher)
        } until: {
            $0["counts"]?["open"]?.int == 1
        }
        return (records, opened)
    }

    func testACrossingOpensOneCaseThatTwoTeachersMoveToClosedWithOneHistory() async throws {
        let harness = try await NotifierHarness(authentication: true, rules: Self.rules)
        self.harness = harness
        let (records, opened) = try await crossTheRule(harness, seenBy: "t-hr-1-1")
        XCTAssertEqual(opened["counts"]?["open"]?.int, 1, "the homeroom teacher's 할 일 within 10 s")
        XCTAssertEqual(opened["counts"]?["urgent"]?.int, 1)
        XCTAssertEqual(opened["counts"]?["due"]?.int, 1, "확인 전 is due")
        let item = try XCTUnwrap(opened["cases"]?[0])
        XCTAssertEqual(item["stateLabel"]?.string, "확인 전")
        XCTAssertEqual(item["label"]?.string, "선도위원회 검토 대상")
        XCTAssertEqual(item["student"]?["name"]?.string, "가가")
        let caseID = try XCTUnwrap(item["caseId"]?.string)
        try await assertEqualAsync(try await self.todo(harness, as: "t-admin")["counts"]?["open"]?.int, 1, "the admin holds it too")
        try await assertEqualAsync(try await self.todo(harness, as: "t-hr-1-2")["counts"]?["open"]?.int, 0, "another class's teacher")
        try await assertEqualAsync(try await self.todo(harness, as: "t-vd-1")["counts"]?["open"]?.int, 0, "the rule does not name 봉사")
        let refused = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/cases?scope=school", headers: harness.headers("t-hr-1-1"))
        XCTAssertEqual(refused.status, 403, "the school's cases are an admin's")

        // The homeroom teacher plans a talk, then hands it to the 학생부장 (admin), who takes it to the end.
        try await step(
            harness, caseID, as: "t-hr-1-1", #"{"action":"move","state":"counseling-planned","nextDate":"2026-12-07","note":"점심시간 상담"}"#)
        // Whom it may go to: those who may read 가가's record, not the caller.
        let before = try await file(harness, caseID, as: "t-hr-1-1") { _ in true }
        guard case .array(let offered) = before["handOverTo"] else { return XCTFail("\(before)") }
        XCTAssertEqual(offered.compactMap { $0["teacherId"]?.string }.sorted(), ["t-admin", "t-vd-1"])
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"hand-over","to":"t-admin","note":"보호자 연락 부탁드립니다"}"#)
        _ = try await file(harness, caseID, as: "t-admin") { $0["holder"]?.string == "t-admin" }
        try await assertEqualAsync(try await self.todo(harness, as: "t-hr-1-1")["counts"]?["open"]?.int, 0, "handed over, it left 할 일")
        try await step(harness, caseID, as: "t-admin", #"{"action":"move","state":"guardian-counseling","note":"어머니와 통화"}"#)
        try await step(harness, caseID, as: "t-admin", #"{"action":"move","state":"referred","nextDate":"2026-12-10"}"#)
        try await step(harness, caseID, as: "t-admin", #"{"action":"move","state":"closed","note":"교내봉사 2회로 종결"}"#)
        let closed = try await file(harness, caseID, as: "t-hr-1-1") { $0["state"]?.string == "closed" }
        XCTAssertEqual(closed["stateLabel"]?.string, "종결")
        guard case .array(let history) = closed["history"] else { return XCTFail("no history: \(closed)") }
        XCTAssertEqual(
            history.map { "\($0["action"]?.string ?? "") \($0["byName"]?.string ?? "") \($0["stateLabel"]?.string ?? "")" },
            ["move 담임11 상담 예정", "hand-over 담임11 ", "move 관리 보호자 상담", "move 관리 선도위원회 회부", "move 관리 종결"])
        XCTAssertEqual(history[1]["toName"]?.string, "관리")
        guard case .array(let counted) = closed["records"] else { return XCTFail("no records: \(closed)") }
        XCTAssertEqual(counted.compactMap { $0["guidanceId"]?.string }.sorted(), records.sorted())
        try await assertEqualAsync(try await self.todo(harness, as: "t-admin")["counts"]?["open"]?.int, 0, "종결 left 할 일")

        // A step on a closed case is kept, refused.
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"note","note":"추가 메모"}"#)
        let refusedStep = try await file(harness, caseID, as: "t-hr-1-1") { file in
            guard case .array(let lines) = file["history"] else { return false }
            return lines.count == 6
        }
        XCTAssertEqual(refusedStep["history"]?[5]?["refused"]?.string, "the case is 종결 (closed) already")

        // Checked at the ingest: a teacher the student is not theirs, a hand-over to one, a state no teacher picks,
        // a field of the wrong type whatever the action.
        try await step(harness, caseID, as: "t-hr-1-2", #"{"action":"note","note":"x"}"#, status: 403)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"hand-over","to":"t-hr-1-2"}"#, status: 422)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"move","state":"withdrawn"}"#, status: 400)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"move","state":"counseled","to":{}}"#, status: 400)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"guardian-notice","note":"x"}"#, status: 422)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"move"}"#, status: 400)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"hand-over"}"#, status: 400)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"close"}"#, status: 400)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"hand-over","to":""}"#, status: 400)
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"note","note":"x","stepId":null}"#, status: 400)
    }

    func testADeletionThatUndoesTheCrossingWithdrawsTheCase() async throws {
        let harness = try await NotifierHarness(authentication: true, rules: Self.rules)
        self.harness = harness
        let (records, opened) = try await crossTheRule(harness, seenBy: "t-admin")
        let caseID = try XCTUnwrap(opened["cases"]?[0]?["caseId"]?.string)
        try await step(harness, caseID, as: "t-admin", #"{"action":"move","state":"counseling-planned"}"#)
        _ = try await file(harness, caseID, as: "t-admin") { $0["state"]?.string == "counseling-planned" }
        try await harness.delete(grade: 1, guidanceID: records[1], as: "t-gate")
        let withdrawn = try await file(harness, caseID, as: "t-admin") { $0["state"]?.string == "withdrawn" }
        XCTAssertEqual(withdrawn["stateLabel"]?.string, "철회")
        XCTAssertEqual(withdrawn["history"]?[1]?["action"]?.string, "withdraw")
        XCTAssertEqual(withdrawn["history"]?[1]?["by"], .null, "the records withdrew it, no teacher")
        try await assertEqualAsync(try await self.todo(harness, as: "t-admin")["counts"]?["open"]?.int, 0)
    }

    /// A 보호자 안내 from a case goes through the school's webhook, signed
    /// (checked with the reference `standardwebhooks` library), once, with
    /// its own event type; one naming the teacher who recorded the student
    /// is not sent, and the case's history says so.
    func testAGuardianNoticeReachesTheSchoolsWebhookAndNeverNamesTheRecordingTeacher() async throws {
        let secret = "whsec_" + Data((0..<24).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let receiver = try Counterpart(interpreter: "/usr/bin/env", script: "webhook-receiver.py")
        try receiver.start(["--secret", secret])
        defer { receiver.stop() }
        let webhooks = "school_id,url,secret\nsa,http://127.0.0.1:\(receiver.port)/hooks/guidance,\(secret)\n"
        var delivery = DeliveryConfig()
        delivery.pollInterval = .milliseconds(200)
        let harness = try await NotifierHarness(authentication: true, delivery: delivery, webhooks: webhooks, rules: Self.rules)
        self.harness = harness
        let (_, opened) = try await crossTheRule(harness, seenBy: "t-hr-1-1")
        let caseID = try XCTUnwrap(opened["cases"]?[0]?["caseId"]?.string)
        let text = "1학년 1반 가가 학생의 보호자님께. 이번 주 실내화 없이 세 번 등교했습니다. 가정에서도 함께 이야기 나누어 주세요."
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"guardian-notice","note":"\#(text)"}"#)
        let received = try await receiver.waitFor { $0.contains { $0["type"] as? String == "case.guardian_notice" } }
        let notices = received.filter { $0["type"] as? String == "case.guardian_notice" }
        XCTAssertEqual(notices.count, 1, "\(notices)")
        XCTAssertEqual(notices.first?["verified"] as? Bool, true, "signed per Standard Webhooks: \(notices)")
        XCTAssertEqual(notices.first?["text"] as? String, text)
        XCTAssertEqual(notices.first?["caseId"] as? String, caseID)
        XCTAssertEqual((notices.first?["student"] as? [String: Any])?["name"] as? String, "가가")
        XCTAssertFalse((notices.first?["text"] as? String ?? "").contains("교문"), "the recording teacher (교문) is not named")
        let sent = try await file(harness, caseID, as: "t-hr-1-1") { file in
            guard case .array(let lines) = file["history"] else { return false }
            return lines.count == 1
        }
        XCTAssertEqual(sent["history"]?[0]?["action"]?.string, "guardian-notice")
        XCTAssertEqual(
            sent["history"]?[0]?["notice"]?.string.map { $0.hasSuffix(".guardian.\(sent["history"]?[0]?["stepId"]?.string ?? "")") }, true)

        // One naming the teacher who recorded the records (t-gate, 교문) is kept in the history, not sent.
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"guardian-notice","note":"교문 선생님이 세 번 지도했습니다."}"#)
        let blocked = try await file(harness, caseID, as: "t-hr-1-1") { file in
            guard case .array(let lines) = file["history"] else { return false }
            return lines.count == 2
        }
        XCTAssertEqual(blocked["history"]?[1]?["notice"]?.string, "not sent: it names the teacher who recorded the guidance")
        // The outbox holds one 보호자 안내, sent: the second was never queued.
        let deliveries = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/deliveries", headers: harness.headers("t-admin"))
        guard case .array(let items) = deliveries.object["items"] else { return XCTFail(deliveries.text) }
        let guardian = items.filter { $0["digestId"]?.string?.contains(".guardian.") == true }
        XCTAssertEqual(guardian.map { $0["channel"]?.string ?? "" }, ["webhook"], deliveries.text)
        // It is nobody's 알림함 item.
        let inbox = try await harness.inbox("t-hr-1-1", signedIn: true)
        XCTAssertFalse(inbox.contains { $0["scope"]?.string == "guardian" }, "\(inbox)")
        // A 보호자 안내 without its text is refused at the ingest.
        try await step(harness, caseID, as: "t-hr-1-1", #"{"action":"guardian-notice"}"#, status: 422)
    }
}
