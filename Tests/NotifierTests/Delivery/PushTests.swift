import Crypto
import Foundation
import Guidance
import Store
import Synchronization
import TestSupport
import XCTest

@testable import Notifier

/// Web Push and each teacher's time, against a push service that checks
/// every message with the reference libraries (`scripts/testing/push-service.py`:
/// `http_ece` decrypts, `py_vapid` verifies).
final class PushTests: XCTestCase {
    var harness: NotifierHarness?
    var service: Counterpart?
    var sink: Counterpart?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
        service?.stop()
        service = nil
        sink?.stop()
        sink = nil
    }

    /// A clock the test moves.
    final class Now: Sendable {
        let seconds: Mutex<Double>
        init(_ text: String) { seconds = Mutex(Timestamp.parse(text)!) }
        func set(_ text: String) { seconds.withLock { $0 = Timestamp.parse(text)! } }
        var read: @Sendable () -> Double { { self.seconds.withLock { $0 } } }
    }

    private let key = P256Key.generate()

    private func startService() throws -> Counterpart {
        // The python3 on PATH, where scripts/setup installs http_ece and py_vapid.
        let service = try Counterpart(interpreter: "/usr/bin/env", script: "push-service.py")
        try service.start(["--vapid-key", RandomID.base64url(key.publicKey)])
        self.service = service
        return service
    }

    private var delivery: DeliveryConfig {
        var config = DeliveryConfig()
        config.vapid = VAPIDSettings(key: key, subject: "mailto:guidance-ops@school.example")
        config.pushOverHTTP = true
        config.retryBase = .seconds(1)
        return config
    }

    /// Signs `teacher` in on the notifier's page; the session cookie.
    private func signIn(_ teacher: String, at base: String) async throws -> String {
        let reply = try await fetch(
            "POST", base + "/session", body: "token=tok-\(teacher)",
            headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": base])
        XCTAssertEqual(reply.status, 303, reply.text)
        return try XCTUnwrap(reply.header("Set-Cookie")).components(separatedBy: ";")[0]
    }

    /// A new device at the push service, subscribed for `teacher` as the app does.
    private func subscribe(_ device: String, teacher: String, cookie: String, at base: String) async throws {
        let subscription = try await fetch("GET", "http://127.0.0.1:\(try XCTUnwrap(service).port)/subscribe/\(device)")
        let reply = try await fetch(
            "POST", "\(base)/v1/teachers/\(teacher)/push", body: subscription.text,
            headers: ["Content-Type": "application/json", "Cookie": cookie, "Origin": base])
        XCTAssertEqual(reply.status, 204, reply.text)
    }

    private func settings(_ teacher: String, _ body: String? = nil, at base: String) async throws -> Reply {
        try await fetch(
            body == nil ? "GET" : "POST", "\(base)/v1/teachers/\(teacher)/settings", body: body,
            headers: ["Content-Type": "application/json", "Authorization": "Bearer tok-\(teacher)"])
    }

    private func deliveries(_ harness: NotifierHarness, teacher: String) async throws -> [[String: AnyCodable]] {
        let reply = try await fetch(
            "GET", harness.notifierBase + "/v1/schools/sa/deliveries?limit=200", headers: harness.headers("t-admin"))
        guard case .array(let items)? = reply.object["items"] else { return [] }
        return items.compactMap { item -> [String: AnyCodable]? in
            guard case .object(let fields) = item, fields["teacherId"]?.string == teacher, fields["channel"]?.string == "push" else {
                return nil
            }
            return fields
        }
    }

    private func messages(to device: String, _ records: [[String: Any]]) -> [[String: Any]] {
        records.filter { $0["device"] as? String == device }
    }

    private func run(_ harness: NotifierHarness) async throws {
        let reply = try await harness.runDigests(as: "t-admin")
        XCTAssertEqual(reply.status, 200, reply.text)
    }

    private func payload(_ record: [String: Any]) -> [String: Any] { record["decrypted"] as? [String: Any] ?? [:] }

    /// Returns once the dispatcher of each of `bases` has looked for due
    /// deliveries of `channel` `count` more times (its
    /// `notifier_delivery_claims_total`): "nothing more was sent" asserted
    /// after polls that happened, not after a sleep that hoped they did.
    private func polls(_ count: Int, of channel: String, at bases: [String]) async throws {
        func claims(_ base: String) async throws -> Int {
            let text = try await fetch("GET", base + "/metrics").text
            let line = text.split(separator: "\n").first { $0.hasPrefix("notifier_delivery_claims_total{channel=\"\(channel)\"}") }
            return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
        }
        for base in bases {
            let start = try await claims(base)
            let seen = try await eventually {
                try await claims(base)
            } until: {
                $0 >= start + count
            }
            XCTAssertGreaterThanOrEqual(seen, start + count, "\(base)'s \(channel) dispatcher polled")
        }
    }

    func testAListReachesEachDeviceAsTheReferenceLibrariesDecryptAndVerifyAndAGoneOrSignedOutDeviceIsDropped() async throws {
        let service = try startService()
        // The service's quiet hours, which the teacher turns off: whatever the hour this test runs at.
        let harness = try await NotifierHarness(authentication: true, delivery: delivery, quietHours: .standard)
        self.harness = harness
        let base = harness.notifierBase
        let quiet = try await settings("t-hr-1-1", #"{"quietFrom":null,"quietUntil":null}"#, at: base)
        XCTAssertEqual(quiet.status, 200, quiet.text)
        XCTAssertEqual(quiet.object["quietFrom"], .null)
        XCTAssertEqual(quiet.object["pushKey"]?.string, RandomID.base64url(key.publicKey), "the app subscribes with the VAPID key")

        let phone = try await signIn("t-hr-1-1", at: base)
        let tablet = try await signIn("t-hr-1-1", at: base)
        try await subscribe("phone", teacher: "t-hr-1-1", cookie: phone, at: base)
        try await subscribe("tablet", teacher: "t-hr-1-1", cookie: tablet, at: base)
        let byToken = try await fetch(
            "POST", "\(base)/v1/teachers/t-hr-1-1/push", body: #"{"endpoint":"https://push.example/x","keys":{"p256dh":"AA","auth":"AA"}}"#,
            headers: harness.headers("t-hr-1-1"))
        XCTAssertEqual(byToken.status, 403, "push is turned on from a signed-in device: \(byToken.text)")
        let badKey = try await fetch(
            "POST", "\(base)/v1/teachers/t-hr-1-1/push",
            body: #"{"endpoint":"https://push.example/x","keys":{"p256dh":"BAAA","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}"#,
            headers: ["Content-Type": "application/json", "Cookie": phone, "Origin": base])
        XCTAssertEqual(badKey.status, 400, badKey.text)
        XCTAssertTrue(badKey.text.contains("keys.p256dh"), badKey.text)
        // An endpoint is a URL the notifier will POST to: none into its own network, whatever the spelling.
        for hostile in [
            "https://127.0.0.1/x", "https://[::1]/x", "https://169.254.169.254/latest", "https://0x7f000001/x", "https://127.1/x",
            "https://[::ffff:127.0.0.1]/x", "https://user@push.example.com/x", "https://push.example.com:22/x", "https://localhost/x",
            "https://push.example.com/x\r\nX: 1", "http://10.0.0.1/x"
        ] {
            let body = try JSONSerialization.data(withJSONObject: [
                "endpoint": hostile, "keys": ["p256dh": RandomID.base64url(P256Key.generate().publicKey), "auth": "AAAAAAAAAAAAAAAAAAAAAA"]
            ])
            let refused = try await fetch(
                "POST", "\(base)/v1/teachers/t-hr-1-1/push", body: String(decoding: body, as: UTF8.self),
                headers: ["Content-Type": "application/json", "Cookie": phone, "Origin": base])
            XCTAssertEqual(refused.status, 400, "\(hostile): \(refused.text)")
            XCTAssertTrue(refused.text.contains("endpoint"), refused.text)
        }
        let two = try await settings("t-hr-1-1", at: base)
        XCTAssertEqual(two.object["pushDevices"], .int(2))

        try await harness.register(grade: 1, classNumber: 1, number: 1, as: "t-gate")
        _ = try await harness.waitForList(count: 1, as: "t-admin")
        try await run(harness)
        let first = try await service.waitFor { $0.count >= 2 }
        let inbox = try await harness.inbox("t-hr-1-1", signedIn: true)
        let subject = try XCTUnwrap(inbox.first?["subject"]?.string)
        let digestID = try XCTUnwrap(inbox.first?["digestId"]?.string)
        XCTAssertEqual(Set(first.compactMap { $0["device"] as? String }), ["phone", "tablet"])
        for record in first {
            XCTAssertEqual(record["status"] as? Int, 201, "\(record)")
            XCTAssertEqual(record["vapid"] as? Bool, true, "py_vapid verified the token: \(record)")
            XCTAssertEqual(record["encoding"] as? String, "aes128gcm")
            XCTAssertEqual(record["ttl"] as? String, String(PushChannel.timeToLive))
            XCTAssertEqual(record["urgency"] as? String, "normal")
            XCTAssertLessThanOrEqual((record["topic"] as? String)?.count ?? 99, 32)
            let message = payload(record)
            XCTAssertEqual(message["title"] as? String, subject, "http_ece decrypted the list's title")
            XCTAssertEqual(message["body"] as? String, "지도 1건 · 앱에서 보기")
            XCTAssertEqual(message["url"] as? String, "/digests/" + digestID)
            XCTAssertEqual(message["entries"] as? Int, 1)
            XCTAssertEqual(message["messages"] as? Int, 1)
            let text = String(decoding: try JSONSerialization.data(withJSONObject: message), as: UTF8.self)
            XCTAssertFalse(text.contains("가가"), "no student's name on a lock screen: \(text)")
        }

        // The tablet's subscription expired at the push service: 410, and it is dropped.
        _ = try await fetch("POST", "http://127.0.0.1:\(service.port)/gone/tablet")
        try await harness.register(grade: 1, classNumber: 1, number: 2, as: "t-gate")
        _ = try await harness.waitForList(count: 2, as: "t-admin")
        try await run(harness)
        let second = try await service.waitFor { self.messages(to: "tablet", $0).count >= 2 && self.messages(to: "phone", $0).count >= 2 }
        XCTAssertEqual(messages(to: "tablet", second).last?["status"] as? Int, 410)
        XCTAssertEqual(payload(try XCTUnwrap(messages(to: "phone", second).last))["body"] as? String, "정정 · 추가 1건 · 앱에서 보기")
        let devices = try await eventually {
            try await self.settings("t-hr-1-1", at: base).object["pushDevices"]
        } until: {
            $0 == .int(1)
        }
        XCTAssertEqual(devices, .int(1), "the gone device is dropped")
        // A teacher whose only device is gone: nothing to push to, which is no failed delivery (the alert's metric).
        try await assertEqualAsync(try await settings("t-hr-1-2", #"{"quietFrom":null,"quietUntil":null}"#, at: base).status, 200)
        try await subscribe("solo", teacher: "t-hr-1-2", cookie: try await signIn("t-hr-1-2", at: base), at: base)
        _ = try await fetch("POST", "http://127.0.0.1:\(service.port)/gone/solo")
        try await harness.register(grade: 1, classNumber: 2, number: 1, as: "t-gate")
        _ = try await harness.waitForList(count: 3, as: "t-admin")
        try await run(harness)
        let solo = try await eventually {
            try await self.deliveries(harness, teacher: "t-hr-1-2")
        } until: { items in
            !items.isEmpty && items.allSatisfy { $0["status"]?.string != "pending" }
        }
        XCTAssertEqual(solo.map { $0["status"]?.string }, ["sent"], "a gone device owes nothing: \(solo)")
        let metrics = try await fetch("GET", base + "/metrics")
        XCTAssertFalse(metrics.text.contains(#"notifier_deliveries_total{channel="push",outcome="failed"}"#), metrics.text)

        // The phone signs out: its subscription goes with its session.
        let out = try await fetch(
            "POST", base + "/session/end", headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": base, "Cookie": phone])
        XCTAssertEqual(out.status, 303, out.text)
        // The sign-out reaches the notifier through the session log: its cookie is refused there.
        let refused = try await eventually {
            try await fetch("GET", "\(base)/v1/teachers/t-hr-1-1/settings", headers: ["Cookie": phone]).status
        } until: {
            $0 == 401
        }
        XCTAssertEqual(refused, 401)
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-21T00:10:00Z", as: "t-gate")
        _ = try await harness.waitForList(count: 3, as: "t-admin")
        try await run(harness)
        let third = try await eventually {
            try await self.deliveries(harness, teacher: "t-hr-1-1")
        } until: { items in
            items.filter { $0["status"]?.string == "sent" }.count == 3
        }
        XCTAssertEqual(third.filter { $0["status"]?.string == "sent" }.count, 3, "\(third)")
        XCTAssertEqual(messages(to: "phone", service.records).count, 2, "nothing pushed to a device signed out")
        let none = try await settings("t-hr-1-1", at: base)
        XCTAssertEqual(none.object["pushDevices"], .int(0))
    }

    /// Quiet hours (21:00–07:00 by default) hold a list and its amendment,
    /// which go as one message when they end, by push and by e-mail alike;
    /// an urgent rule's notice goes at once.
    func testQuietHoursHoldTheListsAndReleaseOneMessageWhenTheyEndWhileAnUrgentRuleGoesAtOnce() async throws {
        let service = try startService()
        let now = Now("2026-11-21T13:00:00Z")  // 22:00 in Seoul
        let rules = "school_id,reason,count,days,notify,label,urgent\nsa,*,2,7,homeroom,두 번,true\n"
        let sink = try Counterpart(interpreter: DeliveryTests.systemPython, script: "smtp-sink.py")
        try sink.start()
        self.sink = sink
        var delivery = DeliveryTests.delivery(smtpPort: sink.port)
        delivery.vapid = self.delivery.vapid
        delivery.pushOverHTTP = true
        let harness = try await NotifierHarness(
            authentication: true, clock: now.read, delivery: delivery, rules: rules, quietHours: .standard)
        self.harness = harness
        let base = harness.notifierBase
        try await subscribe("phone", teacher: "t-hr-1-1", cookie: try await signIn("t-hr-1-1", at: base), at: base)
        let defaults = try await settings("t-hr-1-1", at: base)
        XCTAssertEqual(defaults.object["quietFrom"]?.string, "21:00", defaults.text)
        XCTAssertEqual(defaults.object["quietUntil"]?.string, "07:00")

        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-21T00:30:00Z", as: "t-gate")
        _ = try await harness.waitForList(count: 1, as: "t-admin")
        try await run(harness)
        try await harness.register(grade: 1, classNumber: 1, number: 2, at: "2026-11-21T00:40:00Z", as: "t-gate")
        _ = try await harness.waitForList(count: 2, as: "t-admin")
        try await run(harness)
        let held = try await eventually {
            try await self.deliveries(harness, teacher: "t-hr-1-1")
        } until: {
            $0.count == 2
        }
        XCTAssertEqual(held.map { $0["status"]?.string ?? "" }.sorted(), ["merged", "pending"], "the amendment replaced the list: \(held)")

        // 가가's second record this week crosses the urgent rule: told now, quiet hours or not.
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-21T00:50:00Z", as: "t-gate")
        let urgent = try await service.waitFor { !$0.isEmpty }
        XCTAssertEqual(urgent.count, 1, "\(urgent)")
        XCTAssertEqual(urgent.first?["urgency"] as? String, "high")
        XCTAssertEqual(urgent.first.map(payload)?["body"] as? String, "학교 규칙 알림 · 앱에서 보기")
        let urgentMail = try await sink.waitFor { !$0.isEmpty }
        XCTAssertEqual(urgentMail.first?["to"] as? [String], ["t-hr-1-1@sa.school.example"], "the notice's e-mail goes at once too")
        // Three polls of each channel, and the lists stay held.
        try await polls(3, of: "push", at: [harness.notifierBase])
        try await polls(3, of: "email", at: [harness.notifierBase])
        XCTAssertEqual(service.records.count, 1, "nothing else during quiet hours")
        XCTAssertEqual(sink.records.count, 1, "no list by e-mail during quiet hours")

        now.set("2026-11-21T22:00:30Z")  // 07:00:30 the next morning
        let released = try await service.waitFor { $0.count >= 2 }
        try await polls(3, of: "push", at: [harness.notifierBase])
        XCTAssertEqual(service.records.count, 2, "one message, not a queue: \(service.records)")
        let message = payload(released[1])
        XCTAssertEqual(message["body"] as? String, "알림 2건 · 앱에서 보기", "the newest revision, standing for both")
        XCTAssertEqual(message["messages"] as? Int, 2)
        XCTAssertEqual(released[1]["urgency"] as? String, "normal")
        let mails = sink.records.filter { ($0["to"] as? [String]) == ["t-hr-1-1@sa.school.example"] }
        XCTAssertEqual(mails.count, 2, "one list e-mail after the notice's: \(mails)")
        XCTAssertEqual(mails.last?["digestId"] as? String, message["tag"] as? String, "the same newest revision by e-mail")
        XCTAssertTrue((mails.last?["plain"] as? String)?.hasPrefix("방해 금지 시간 동안 온 알림 2건 중") == true, "\(mails.last ?? [:])")
    }

    /// A teacher's own time, later than the school's: their list waits for
    /// it on whichever of two replicas sends it, once; a colleague's goes at once.
    func testATeachersOwnTimeIsHonouredOnceAcrossTwoReplicas() async throws {
        let service = try startService()
        let url = try NotifierHarness.postgresURL(schema: "push")
        let now = Now("2026-11-21T07:30:00Z")  // 16:30 in Seoul; the school's time is 08:50
        let harness = try await NotifierHarness(
            authentication: true, store: .postgres(url: url), clock: now.read, delivery: delivery, quietHours: .standard)
        self.harness = harness
        let second = try await harness.startReplica(sharing: true)
        let base = harness.notifierBase
        let other = "http://127.0.0.1:\(second.port)"

        let quiet = try await settings("t-hr-1-1", #"{"listTime":"22:00"}"#, at: base)
        XCTAssertEqual(quiet.status, 400, "22:00 is in the default quiet hours: \(quiet.text)")
        let half = try await settings("t-hr-1-1", #"{"quietFrom":"22:00"}"#, at: base)
        XCTAssertEqual(half.status, 400, half.text)
        let own = try await settings("t-hr-1-1", #"{"listTime":"17:00"}"#, at: base)
        XCTAssertEqual(own.status, 200, own.text)
        let read = try await settings("t-hr-1-1", at: other)
        XCTAssertEqual(read.object["listTime"]?.string, "17:00", "every replica reads it")

        try await subscribe("phone", teacher: "t-hr-1-1", cookie: try await signIn("t-hr-1-1", at: base), at: base)
        try await subscribe("desk", teacher: "t-hr-1-2", cookie: try await signIn("t-hr-1-2", at: other), at: other)
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-21T00:30:00Z", as: "t-gate")
        try await harness.register(grade: 1, classNumber: 2, number: 1, at: "2026-11-21T00:31:00Z", as: "t-gate")
        _ = try await harness.waitForList(count: 2, as: "t-admin")
        try await run(harness)
        _ = try await service.waitFor { self.messages(to: "desk", $0).count == 1 }
        try await polls(3, of: "push", at: [base, other])
        XCTAssertEqual(messages(to: "phone", service.records).count, 0, "held for 17:00")

        now.set("2026-11-21T08:00:30Z")  // 17:00:30
        _ = try await service.waitFor { self.messages(to: "phone", $0).count >= 1 }
        try await polls(3, of: "push", at: [base, other])
        XCTAssertEqual(messages(to: "phone", service.records).count, 1, "sent once by the two replicas")
        XCTAssertEqual(messages(to: "desk", service.records).count, 1)
    }

    /// A message held for quiet hours follows the teacher's quiet hours as
    /// they are when it would go, not as they were when it was written: one
    /// teacher turns them off and gets the list at once, another extends
    /// them to 09:00 and gets nothing at 07:00.
    func testHeldMessagesFollowAChangeOfQuietHours() async throws {
        let now = Now("2026-11-21T13:00:00Z")  // 22:00 in Seoul
        let sink = try Counterpart(interpreter: DeliveryTests.systemPython, script: "smtp-sink.py")
        try sink.start()
        self.sink = sink
        let harness = try await NotifierHarness(
            authentication: true, clock: now.read, delivery: DeliveryTests.delivery(smtpPort: sink.port), quietHours: .standard)
        self.harness = harness
        let base = harness.notifierBase
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-21T00:30:00Z", as: "t-gate")
        try await harness.register(grade: 1, classNumber: 2, number: 1, at: "2026-11-21T00:31:00Z", as: "t-gate")
        _ = try await harness.waitForList(count: 2, as: "t-admin")
        try await run(harness)
        func mails(to teacher: String) -> Int { sink.records.filter { ($0["to"] as? [String]) == ["\(teacher)@sa.school.example"] }.count }
        // Three polls, and both lists are held until 07:00.
        try await polls(3, of: "email", at: [base])
        XCTAssertEqual(sink.records.count, 0, "held for quiet hours: \(sink.records)")

        let off = try await settings("t-hr-1-1", #"{"quietFrom":null,"quietUntil":null}"#, at: base)
        XCTAssertEqual(off.status, 200, off.text)
        _ = try await sink.waitFor { $0.contains { ($0["to"] as? [String]) == ["t-hr-1-1@sa.school.example"] } }
        let longer = try await settings("t-hr-1-2", #"{"quietFrom":"21:00","quietUntil":"09:00"}"#, at: base)
        XCTAssertEqual(longer.status, 200, longer.text)

        now.set("2026-11-21T22:00:30Z")  // 07:00:30, the old end
        try await polls(3, of: "email", at: [base])
        XCTAssertEqual(mails(to: "t-hr-1-2"), 0, "still in the quiet hours the teacher set")
        now.set("2026-11-22T00:00:30Z")  // 09:00:30, the new end
        _ = try await sink.waitFor { $0.contains { ($0["to"] as? [String]) == ["t-hr-1-2@sa.school.example"] } }
        XCTAssertEqual(mails(to: "t-hr-1-1"), 1)
        XCTAssertEqual(mails(to: "t-hr-1-2"), 1)
    }

    /// Three teachers of one school whose devices do not answer (each push
    /// waits out its timeout, device after device) beside another school's
    /// teacher: that teacher's push goes while the slow ones still wait,
    /// not after them.
    func testOneSchoolsSlowEndpointsDoNotHoldAnotherSchoolsPush() async throws {
        let service = try startService()
        var delivery = self.delivery
        delivery.webhookTimeout = .seconds(3)
        let harness = try await NotifierHarness(authentication: true, delivery: delivery)
        self.harness = harness
        let base = harness.notifierBase
        for teacher in ["t-hr-1-1", "t-hr-1-2", "t-vd-1"] {
            let cookie = try await signIn(teacher, at: base)
            for device in 1...3 {
                try await subscribe("\(teacher)-\(device)", teacher: teacher, cookie: cookie, at: base)
                _ = try await fetch("POST", "http://127.0.0.1:\(service.port)/slow/\(teacher)-\(device)")
            }
        }
        try await subscribe("b-phone", teacher: "t-hr-b", cookie: try await signIn("t-hr-b", at: base), at: base)

        // School A's lists: three deliveries of three devices, 9 s each until every device timed out.
        try await harness.register(grade: 1, classNumber: 1, number: 1, as: "t-gate")
        try await harness.register(grade: 1, classNumber: 2, number: 1, as: "t-gate")
        _ = try await harness.waitForList(count: 2, as: "t-admin")
        try await run(harness)
        // School B's list, once A's are under way: one of A's pushes is held by its device.
        _ = try await service.waitFor { $0.contains { $0["arrived"] as? Bool == true } }
        try await harness.register(school: "sb", grade: 1, classNumber: 1, number: 1, at: "2026-11-20T18:00:00Z", as: "t-gate-b")
        _ = try await eventually {
            try await fetch("GET", "\(base)/v1/schools/sb/guidances?date=2026-11-20", headers: harness.headers("t-hr-b")).object["items"]
        } until: {
            if case .array(let items)? = $0 { items.count == 1 } else { false }
        }
        let runner = try XCTUnwrap(harness.notifier?.runner)
        let school = try XCTUnwrap(harness.notifier?.roster.current.school("sb"))
        _ = try await runner.run([(school, "2026-11-20")])
        _ = try await service.waitFor { self.messages(to: "b-phone", $0).count == 1 }
        // When B's arrived, none of A's had even ended its first attempt.
        let slow =
            try await deliveries(harness, teacher: "t-hr-1-1") + deliveries(harness, teacher: "t-hr-1-2")
            + deliveries(harness, teacher: "t-vd-1")
        XCTAssertEqual(slow.count, 3, "\(slow)")
        XCTAssertEqual(slow.map { $0["attempts"]?.int }, [0, 0, 0], "B's push went before A's slow ones ended: \(slow)")
    }
}
