import Crypto
import Foundation
import Guidance
import TestSupport
import Wiring
import XCTest

@testable import Notifier

/// Digests leave the store by e-mail and webhook, against real servers: an
/// SMTP server (aiosmtpd, messages parsed by Python's `email` package) and a
/// webhook receiver verifying with the reference `standardwebhooks` library.
final class DeliveryTests: XCTestCase {
    /// Debian's Python, which has python3-aiosmtpd.
    static let systemPython = "/usr/bin/python3"
    /// The test's harness, shut down however the test ends.
    var running: NotifierHarness?

    override func tearDown() async throws {
        await running?.shutdown()
        running = nil
    }

    override func setUp() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.systemPython) else {
            throw XCTSkip("needs /usr/bin/python3 with python3-aiosmtpd (scripts/setup)")
        }
    }

    static func delivery(smtpPort: Int) -> DeliveryConfig {
        var config = DeliveryConfig(
            mail: .init(
                transport: .smtp(.init(url: "smtp://127.0.0.1:\(smtpPort)", timeout: .seconds(10))),
                from: MailAddress("학생부 알림 <guidance@school.example>")!),
            publicAppURL: "https://app.school.example")
        config.retryBase = .seconds(1)
        config.maxBackoff = .seconds(2)
        config.pollInterval = .milliseconds(200)
        return config
    }

    func deliveries(_ harness: NotifierHarness, school: String = "sa", status: String? = nil, as teacher: String? = nil) async throws
        -> [[String: AnyCodable]]
    {
        let query = status.map { "?status=\($0)" } ?? ""
        let reply = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/\(school)/deliveries\(query)", headers: harness.headers(teacher))
        XCTAssertEqual(reply.status, 200, reply.text)
        guard case .array(let items) = reply.object["items"] else { return [] }
        return items.compactMap { if case .object(let item) = $0 { item } else { nil } }
    }

    /// Polls the deliveries API until `done` holds (or 30 s).
    func waitForDeliveries(_ harness: NotifierHarness, as teacher: String? = nil, _ done: ([[String: AnyCodable]]) -> Bool) async throws
        -> [[String: AnyCodable]]
    {
        try await eventually(within: .seconds(30)) {
            try await self.deliveries(harness, as: teacher)
        } until: {
            done($0)
        }
    }

    func messageIDs(_ records: [[String: Any]]) -> [String] { records.compactMap { $0["messageId"] as? String } }

    /// 설정: a teacher who turned e-mailed lists off gets the list in the
    /// 알림함 and no e-mail; the others get both. Only the teacher may change it.
    func testATeacherWhoTurnedEmailOffGetsTheListInTheInboxOnly() async throws {
        let sink = try Counterpart(interpreter: Self.systemPython, script: "smtp-sink.py")
        try sink.start()
        let harness = try await NotifierHarness(authentication: true, delivery: Self.delivery(smtpPort: sink.port))
        running = harness
        let settings = "\(harness.notifierBase)/v1/teachers/t-hr-1-1/settings"
        let before = try await fetch("GET", settings, headers: harness.headers("t-hr-1-1"))
        XCTAssertEqual(before.object["emailLists"], .bool(true), "on by default: \(before.text)")
        let byAnother = try await fetch("POST", settings, body: #"{"emailLists":false}"#, headers: harness.headers("t-admin"))
        XCTAssertEqual(byAnother.status, 403, "an admin does not choose for a teacher")
        let wrongType = try await fetch("POST", settings, body: #"{"emailLists":"no"}"#, headers: harness.headers("t-hr-1-1"))
        XCTAssertEqual(wrongType.status, 400, wrongType.text)
        let off = try await fetch("POST", settings, body: #"{"emailLists":false}"#, headers: harness.headers("t-hr-1-1"))
        XCTAssertEqual(off.status, 200, off.text)
        XCTAssertEqual(off.object["emailLists"], .bool(false))
        let read = try await fetch("GET", settings, headers: harness.headers("t-admin"))
        XCTAssertEqual(read.object["emailLists"], .bool(false), "an admin may read it")

        try await harness.register(grade: 1, classNumber: 1, number: 1, as: "t-gate")
        try await harness.register(grade: 1, classNumber: 2, number: 1, as: "t-gate")
        _ = try await harness.waitForList(count: 2, as: "t-admin")
        let run = try await harness.runDigests(as: "t-admin")
        XCTAssertEqual(run.status, 200, run.text)
        let mails = try await sink.waitFor { $0.count >= 2 }
        let sent = try await waitForDeliveries(harness, as: "t-admin") { $0.filter { $0["status"]?.string == "sent" }.count >= 2 }
        XCTAssertEqual(
            Set(mails.flatMap { $0["to"] as? [String] ?? [] }), ["t-hr-1-2@sa.school.example", "t-vd-1@sa.school.example"],
            "no e-mail to t-hr-1-1")
        XCTAssertFalse(sent.contains { $0["teacherId"]?.string == "t-hr-1-1" }, "no e-mail delivery queued for t-hr-1-1")
        let inbox = try await harness.inbox("t-hr-1-1", signedIn: true)
        XCTAssertEqual(inbox.count, 1, "the list is in the 알림함")
    }

    func testEachRevisionIsOneReadableKoreanEmailAndAmendmentsThreadUnderTheFirst() async throws {
        let sink = try Counterpart(interpreter: Self.systemPython, script: "smtp-sink.py")
        try sink.start()
        let harness = try await NotifierHarness(delivery: Self.delivery(smtpPort: sink.port))
        running = harness
        let first = try await harness.register(grade: 1, classNumber: 1, number: 1)
        try await harness.register(grade: 1, classNumber: 2, number: 1, code: "others", detail: "길에 껌을 뱉음 <b>&</b>")
        try await harness.register(grade: 2, classNumber: 1, number: 1, code: "trespassing")
        _ = try await harness.waitForList(count: 3)
        let run = try await harness.runDigests()
        XCTAssertEqual(run.status, 200, run.text)

        // Five digests: t-hr-1-1, t-hr-1-2, t-hr-2-1, t-vd-1 and t-vd-2,
        // who has no address and is skipped.
        let mails = try await sink.waitFor { $0.count >= 4 }
        XCTAssertEqual(mails.count, 4)
        XCTAssertEqual(
            Set(mails.flatMap { $0["to"] as? [String] ?? [] }),
            ["t-hr-1-1@sa.school.example", "t-hr-1-2@sa.school.example", "t-hr-2-1@sa.school.example", "t-vd-1@sa.school.example"])
        for mail in mails {
            let recipient = try XCTUnwrap((mail["to"] as? [String])?.first)
            let teacher = String(recipient.prefix { $0 != "@" })
            let inbox = try await harness.inbox(teacher)
            let digest = try XCTUnwrap(inbox.first)
            let digestID = try XCTUnwrap(digest["digestId"]?.string)
            XCTAssertEqual(mail["digestId"] as? String, digestID)
            XCTAssertEqual(mail["messageId"] as? String, "<\(digestID)@school.example>")
            XCTAssertEqual(mail["subject"] as? String, digest["subject"]?.string, "the subject decodes to the digest's")
            let plain = (mail["plain"] as? String ?? "").replacingOccurrences(of: "\r\n", with: "\n")
            XCTAssertEqual(plain, (digest["text"]?.string ?? "") + "\n\n알림함에서 보기: https://app.school.example/digests/\(digestID)")
            XCTAssertEqual(mail["contentType"] as? String, "multipart/alternative")
            XCTAssertEqual(mail["from"] as? String, "guidance@school.example")
            XCTAssertTrue((mail["fromHeader"] as? String ?? "").contains("학생부 알림"), "\(mail)")
            XCTAssertNil(mail["inReplyTo"] as? String)
        }
        let hr12 = try XCTUnwrap(mails.first { ($0["to"] as? [String]) == ["t-hr-1-2@sa.school.example"] })
        XCTAssertTrue((hr12["toHeader"] as? String ?? "").contains("담임12"))
        XCTAssertTrue((hr12["plain"] as? String ?? "").contains("길에 껌을 뱉음 <b>&</b>"), "Korean and markup intact in the text")
        XCTAssertTrue((hr12["html"] as? String ?? "").contains("길에 껌을 뱉음 &lt;b&gt;&amp;&lt;/b&gt;"), "escaped in the HTML")
        XCTAssertTrue((hr12["html"] as? String ?? "").contains("최근 7일 1회 · 최근 30일 1회"), "how often, in the HTML too")

        let sent = try await waitForDeliveries(harness) { $0.filter { $0["status"]?.string == "sent" }.count == 4 }
        XCTAssertEqual(sent.count, 4, "\(sent)")
        XCTAssertEqual(Set(sent.compactMap { $0["channel"]?.string }), ["email"])
        XCTAssertEqual(harness.notifier?.metrics.value("notifier_deliveries_skipped_total", labels: [("channel", "email")]), 1)

        // A deletion after the run: the amendment replies to revision 1.
        try await harness.delete(grade: 1, guidanceID: first)
        _ = try await harness.waitForList(count: 2)
        let amendment = try await harness.runDigests()
        XCTAssertEqual(amendment.status, 200, amendment.text)
        let all = try await sink.waitFor { $0.count >= 6 }
        XCTAssertEqual(all.count, 6, "\(all.map { $0["digestId"] ?? "" })")
        let revised = try XCTUnwrap(all.first { ($0["digestId"] as? String) == "sa.2026-11-21.t-hr-1-1.class.r2" })
        XCTAssertEqual(revised["inReplyTo"] as? String, "<sa.2026-11-21.t-hr-1-1.class.r1@school.example>")
        XCTAssertEqual(revised["references"] as? String, "<sa.2026-11-21.t-hr-1-1.class.r1@school.example>")
        XCTAssertTrue((revised["subject"] as? String ?? "").contains("1차 정정"))
        XCTAssertEqual(Set(messageIDs(all)).count, 6, "one message per revision and recipient")
    }

    /// Digest runs and claims would contend for the one SQLite writer: while
    /// a batch of runs writes, no new delivery is claimed; once it ends, all
    /// go out.
    func testNoDeliveryIsClaimedWhileDigestRunsWrite() async throws {
        let sink = try Counterpart(interpreter: Self.systemPython, script: "smtp-sink.py")
        try sink.start()
        let clock = ManualClock()
        let harness = try await NotifierHarness(timer: clock, delivery: Self.delivery(smtpPort: sink.port))
        running = harness
        try await harness.register(grade: 1, classNumber: 1, number: 1)
        _ = try await harness.waitForList(count: 1)
        let dispatcher = try XCTUnwrap(harness.notifier?.dispatcher)
        try await dispatcher.holdingClaims {
            // A run inside a longer batch: its deliveries wait for the batch.
            let run = try await harness.runDigests()
            XCTAssertEqual(run.status, 200, run.text)
            // Five poll intervals, the clock moved: after each the e-mail
            // loop takes a turn and waits again. A turn that claimed would
            // have sent before it waited again.
            for _ in 1...5 {
                let begun = clock.sleepsBegun
                clock.advance(by: Self.delivery(smtpPort: sink.port).pollInterval)
                let waitsAgain = await clock.sleeps(atLeast: begun + 1)
                XCTAssertTrue(waitsAgain, "the e-mail loop did not take its turn")
            }
            XCTAssertEqual(sink.records.count, 0, "an e-mail went out while digest runs were writing")
            let pending = try await deliveries(harness)
            XCTAssertEqual(pending.count, 2, "t-hr-1-1 and t-vd-1")
            XCTAssertTrue(pending.allSatisfy { $0["status"] == .string("pending") }, "\(pending)")
        }
        let mails = try await sink.waitFor { $0.count >= 2 }
        XCTAssertEqual(mails.count, 2, "the held deliveries went out once the runs ended")
    }

    func testAServerOutageAndA451AreRetriedUntilEachMessageArrivesOnce() async throws {
        // Nobody listens on the port while the digests are written.
        let sink = try Counterpart(interpreter: Self.systemPython, script: "smtp-sink.py")
        let harness = try await NotifierHarness(delivery: Self.delivery(smtpPort: sink.port))
        running = harness
        try await harness.register(grade: 1, classNumber: 1, number: 1)
        _ = try await harness.waitForList(count: 1)
        let run = try await harness.runDigests()
        XCTAssertEqual(run.status, 200, run.text)
        let failing = try await waitForDeliveries(harness) { items in
            items.count == 2 && items.allSatisfy { ($0["attempts"]?.int ?? 0) >= 1 }
        }
        XCTAssertEqual(failing.compactMap { $0["status"]?.string }, ["pending", "pending"])
        XCTAssertTrue(failing.allSatisfy { $0["lastError"]?.string?.isEmpty == false && $0["nextAttemptAt"]?.string != nil }, "\(failing)")
        let status1 = try await fetch("GET", "\(harness.notifierBase)/readyz").status
        XCTAssertEqual(status1, 200, "an SMTP outage must not make the notifier unready")

        // Back, but deferring every message's first DATA with 451.
        try sink.start(["--defer-first"])
        let mails = try await sink.waitFor { $0.count >= 2 }
        let sent = try await waitForDeliveries(harness) { $0.allSatisfy { $0["status"]?.string == "sent" } }
        XCTAssertEqual(sent.count, 2)
        XCTAssertTrue(sent.allSatisfy { ($0["attempts"]?.int ?? 0) >= 3 }, "refused connection, 451, then accepted: \(sent)")
        // Every delivery is recorded sent: none is claimed, so none is sent, again.
        XCTAssertEqual(messageIDs(sink.records).sorted(), messageIDs(mails).sorted())
        XCTAssertEqual(Set(messageIDs(sink.records)).count, 2, "each message once")
        XCTAssertEqual(harness.notifier?.metrics.value("notifier_deliveries_total", labels: [("channel", "email"), ("outcome", "sent")]), 2)
        XCTAssertGreaterThanOrEqual(
            harness.notifier?.metrics.value("notifier_deliveries_total", labels: [("channel", "email"), ("outcome", "retry")]) ?? 0, 4)
    }

    func testA550FailsOnlyThatRecipientAndAnAdminQueuesItAgain() async throws {
        let sink = try Counterpart(interpreter: Self.systemPython, script: "smtp-sink.py")
        try sink.start(["--reject", "t-hr-1-2@sa.school.example"])
        let harness = try await NotifierHarness(authentication: true, delivery: Self.delivery(smtpPort: sink.port))
        running = harness
        try await harness.register(grade: 1, classNumber: 1, number: 1, as: "t-gate")
        try await harness.register(grade: 1, classNumber: 2, number: 1, as: "t-gate")
        _ = try await harness.waitForList(count: 2, as: "t-admin")
        let status2 = try await harness.runDigests(as: "t-admin").status
        XCTAssertEqual(status2, 200)
        let settled = try await waitForDeliveries(harness, as: "t-admin") { items in
            items.count == 3 && items.allSatisfy { $0["status"]?.string != "pending" }
        }
        let failed = try XCTUnwrap(settled.first { $0["status"]?.string == "failed" }, "\(settled)")
        XCTAssertEqual(failed["teacherId"]?.string, "t-hr-1-2")
        XCTAssertEqual(failed["target"]?.string, "t-hr-1-2@sa.school.example")
        XCTAssertEqual(failed["attempts"]?.int, 1, "a 5xx is not retried")
        XCTAssertTrue(
            failed["lastError"]?.string?.contains("550 5.1.1") == true
                && failed["lastError"]?.string?.contains("Recipient address rejected") == true, "\(failed)")
        XCTAssertEqual(settled.filter { $0["status"]?.string == "sent" }.count, 2)
        XCTAssertEqual(Set(messageIDs(sink.records)).count, 2)
        XCTAssertEqual(messageIDs(sink.records).count, 2)

        let deliveryID = try XCTUnwrap(failed["deliveryId"]?.string)
        let retryURL = "\(harness.notifierBase)/v1/schools/sa/deliveries/\(deliveryID)/retry"
        let status3 = try await fetch("POST", retryURL, headers: harness.headers("t-hr-1-2")).status
        XCTAssertEqual(status3, 403, "only an admin")
        let status4 = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/deliveries", headers: harness.headers("t-hr-1-1"))
            .status
        XCTAssertEqual(status4, 403)
        let status5 = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/deliveries?status=lost", headers: harness.headers("t-admin")
        ).status
        XCTAssertEqual(status5, 400)
        let status6 = try await fetch(
            "POST", "\(harness.notifierBase)/v1/schools/sa/deliveries/nope/retry", headers: harness.headers("t-admin")
        ).status
        XCTAssertEqual(status6, 404)
        // The mailbox exists now.
        sink.stop()
        try sink.start()
        let requeued = try await fetch("POST", retryURL, headers: harness.headers("t-admin"))
        XCTAssertEqual(requeued.status, 202, requeued.text)
        let all = try await sink.waitFor { $0.count >= 3 }
        XCTAssertEqual(messageIDs(all).count, 3)
        XCTAssertTrue(all.contains { ($0["to"] as? [String]) == ["t-hr-1-2@sa.school.example"] })
        let after = try await waitForDeliveries(harness, as: "t-admin") { $0.allSatisfy { $0["status"]?.string == "sent" } }
        XCTAssertTrue(after.allSatisfy { $0["status"]?.string == "sent" }, "\(after)")
        let status7 = try await fetch("POST", retryURL, headers: harness.headers("t-admin")).status
        XCTAssertEqual(status7, 409, "a sent delivery is not sent again")
    }

    func testWebhooksAreSignedPerStandardWebhooksRetriedAfterA500AndAWrongSecretIsCaught() async throws {
        let secret = "whsec_" + Data((0..<24).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let other = "whsec_" + Data((0..<24).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let receiver = try Counterpart(interpreter: "/usr/bin/env", script: "webhook-receiver.py")
        let impostor = try Counterpart(interpreter: "/usr/bin/env", script: "webhook-receiver.py")
        // /usr/bin/env runs the script with the python3 on PATH, which has standardwebhooks.
        try receiver.start(["--secret", secret, "--fail-first"])
        try impostor.start(["--secret", other])
        let webhooks = """
            school_id,url,secret
            sa,http://127.0.0.1:\(receiver.port)/hooks/guidance,\(secret)
            sb,http://127.0.0.1:\(impostor.port)/hooks/guidance,\(secret)

            """
        var config = DeliveryConfig()
        config.retryBase = .seconds(1)
        config.maxBackoff = .seconds(2)
        config.pollInterval = .milliseconds(200)
        let harness = try await NotifierHarness(delivery: config, webhooks: webhooks)
        running = harness
        try await harness.register(grade: 1, classNumber: 1, number: 1)
        try await harness.register(school: "sb", grade: 1, classNumber: 1, number: 1)
        _ = try await harness.waitForList(count: 1)
        // 23:30 UTC is still the 20th in Los Angeles.
        _ = try await harness.waitForList(school: "sb", date: "2026-11-20", count: 1)
        let runA = try await harness.runDigests()
        XCTAssertEqual(runA.status, 200, runA.text)
        let runB = try await harness.runDigests(school: "sb", date: "2026-11-20")
        XCTAssertEqual(runB.status, 200, runB.text)

        // sa: two digests, each refused once with 500, then accepted.
        let received = try await receiver.waitFor { $0.filter { ($0["status"] as? Int) == 204 }.count >= 2 }
        XCTAssertTrue(received.allSatisfy { $0["verified"] as? Bool == true }, "\(received)")
        let byID = Dictionary(grouping: received) { $0["id"] as? String ?? "" }
        XCTAssertEqual(Set(byID.keys), ["sa.2026-11-21.t-hr-1-1.class.r1.webhook", "sa.2026-11-21.t-vd-1.grade.r1.webhook"])
        for (id, attempts) in byID {
            XCTAssertEqual(attempts.compactMap { $0["status"] as? Int }, [500, 204], id)
            XCTAssertEqual(attempts.last?["type"] as? String, "digest.created")
            XCTAssertEqual((attempts.last?["digestId"] as? String).map { $0 + ".webhook" }, id)
            XCTAssertEqual(
                attempts.last?["frequencies"] as? [[String: Int]], [["last7Days": 1, "last30Days": 1]], "how often, in the payload")
            XCTAssertEqual(attempts.last?["photoUrls"] as? Int, 0, "photos stay in the school's services")
        }
        let inbox = try await harness.inbox("t-hr-1-1")
        XCTAssertEqual(byID["sa.2026-11-21.t-hr-1-1.class.r1.webhook"]?.last?["teacherId"] as? String, inbox.first?["teacherId"]?.string)

        // sb's receiver holds another secret: every signature fails its check.
        let forged = try await impostor.waitFor { $0.count >= 2 }
        XCTAssertEqual(forged.count, 2)
        XCTAssertTrue(
            forged.allSatisfy { $0["verified"] as? Bool == false && ($0["error"] as? String ?? "").contains("signature") }, "\(forged)")
        // The outcomes are recorded as the batch's sends end.
        let sbItems = try await eventually {
            try await self.deliveries(harness, school: "sb")
        } until: {
            $0.filter { $0["status"]?.string == "failed" }.count >= 2
        }
        let failed = sbItems.filter { $0["status"]?.string == "failed" }
        XCTAssertEqual(failed.count, 2, "a 400 fails at once: \(sbItems)")
        XCTAssertTrue(failed.allSatisfy { $0["lastError"]?.string?.hasPrefix("HTTP 400") == true })
    }
}
