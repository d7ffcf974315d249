import Foundation
import Guidance
import Sessions
import TestSupport
import Wiring
import XCTest

@testable import Notifier

/// Sessions across both services and several replicas, through the session
/// log on the (mock) Kafka cluster: a session ended anywhere is refused
/// everywhere within 5 s; a device code shown by a signed-in admin signs a
/// gate phone in once; the sign-in link arrives at a real SMTP server and
/// works once.
final class SessionTests: XCTestCase {
    var harness: NotifierHarness?
    var sink: Counterpart?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
        sink?.stop()
        sink = nil
    }

    /// Form headers a browser on `base` sends.
    func form(_ base: String, cookie: String? = nil) -> [String: String] {
        var headers = ["Content-Type": "application/x-www-form-urlencoded", "Origin": base]
        if let cookie { headers["Cookie"] = cookie }
        return headers
    }

    /// Signs in on `base`'s page with a form post; the cookie it sets.
    func signIn(_ base: String, path: String = "/session", _ body: String) async throws -> String {
        let reply = try await fetch("POST", base + path, body: body, headers: form(base))
        XCTAssertEqual(reply.status, 303, "sign-in at \(base)\(path): \(reply.text.prefix(300))")
        return try XCTUnwrap(reply.header("Set-Cookie")).components(separatedBy: ";")[0]
    }

    func status(_ url: String, cookie: String) async throws -> Int {
        try await fetch("GET", url, headers: ["Cookie": cookie]).status
    }

    /// Whether every URL refuses `cookie` (401) within the 5 s the contract
    /// gives an ended session to reach every replica through the broker.
    func refusedEverywhere(_ urls: [String], cookie: String) async throws -> Bool {
        try await eventually(within: .seconds(5)) {
            for url in urls where try await self.status(url, cookie: cookie) != 401 { return false }
            return true
        }
    }

    func testAnEndedSessionIsRefusedByBothServicesAndEveryReplicaWithinFiveSeconds() async throws {
        let harness = try await NotifierHarness(authentication: true)
        self.harness = harness
        let replica = try await harness.startReplica()
        let (ingest, notifier, other) = (harness.ingestBase, harness.notifierBase, "http://127.0.0.1:\(replica.port)")
        let student = ingest + "/v1/schools/sa/students/1/1/1"
        let inboxes = [notifier, other].map { $0 + "/v1/teachers/t-hr-1-1/inbox" }

        // Each page's cookie is a session, not the token; one secret serves every replica.
        let gate = try await signIn(ingest, "token=tok-t-gate")
        XCTAssertTrue(gate.hasPrefix("gate_session=") && !gate.contains("tok-t-gate"), gate)
        let homeroom = try await signIn(notifier, "token=tok-t-hr-1-1")
        for url in [student] { try await assertEqualAsync(await status(url, cookie: gate), 200) }
        for url in inboxes { try await assertEqualAsync(await status(url, cookie: homeroom), 200, url) }

        // Signed out at the ingest, the same cookie replayed is refused there.
        let signedOut = try await signIn(ingest, "token=tok-t-gate")
        let out = try await fetch("POST", ingest + "/session/end", headers: form(ingest, cookie: signedOut))
        XCTAssertEqual(out.status, 303)
        try await assertEqualAsync(await status(student, cookie: signedOut), 401, "the cookie replayed after sign-out")
        try await assertEqualAsync(await status(student, cookie: gate), 200, "the teacher's other session goes on")

        // Signed out at one notifier replica, refused by the other too.
        let second = try await signIn(other, "token=tok-t-hr-1-1")
        _ = try await fetch("POST", other + "/session/end", headers: form(other, cookie: second))
        let signedOutEverywhere = try await refusedEverywhere(inboxes, cookie: second)
        XCTAssertTrue(signedOutEverywhere, "sign-out reached every replica")

        // An admin signs the homeroom teacher and the gate teacher out (the notifier's own session routes).
        let admin = try await signIn(notifier, "token=tok-t-admin")
        // The admin's page chooses nobody first, and lists not the admin (their own devices are the card above).
        let devices = try await fetch("GET", notifier + "/session/devices", headers: ["Cookie": admin])
        XCTAssertTrue(devices.text.contains(#"<option value="" selected disabled>교사를 고르세요</option>"#), devices.text)
        XCTAssertFalse(devices.text.contains(#"<option value="t-admin""#), "the admin is not offered")
        for teacher in ["t-hr-1-1", "t-gate"] {
            // Asked once, naming the teacher; nothing happens until confirmed.
            let asked = try await fetch(
                "POST", notifier + "/session/devices/revoke", body: "teacher=\(teacher)", headers: form(notifier, cookie: admin))
            XCTAssertEqual(asked.status, 200, asked.text)
            XCTAssertTrue(asked.text.contains("모든 기기에서 로그아웃할까요?") && asked.text.contains(#"name="confirm" value="yes""#), asked.text)
            if teacher == "t-hr-1-1" {
                for url in inboxes {
                    try await assertEqualAsync(await status(url, cookie: homeroom), 200, "still signed in before the confirmation")
                }
            }
            let revoked = try await fetch(
                "POST", notifier + "/session/devices/revoke", body: "teacher=\(teacher)&confirm=yes", headers: form(notifier, cookie: admin)
            )
            XCTAssertEqual(revoked.status, 303, revoked.text)
            // The result names the teacher signed out.
            let result = try await fetch("GET", notifier + (revoked.header("Location") ?? ""), headers: ["Cookie": admin])
            let name = teacher == "t-hr-1-1" ? "담임11" : "교문"
            XCTAssertTrue(result.text.contains("\(name) 교사("), result.text)
            XCTAssertTrue(result.text.contains("를 모든 기기에서 강제 로그아웃했습니다."), result.text)
        }
        let onNotifiers = try await refusedEverywhere(inboxes, cookie: homeroom)
        XCTAssertTrue(onNotifiers, "the admin's revocation on both notifier replicas")
        let onIngest = try await refusedEverywhere([student], cookie: gate)
        XCTAssertTrue(onIngest, "the admin's revocation on the ingest")

        // Signing in again works, until the operator signs the teacher out from a shell.
        let again = try await signIn(notifier, "token=tok-t-hr-1-1")
        for url in inboxes { try await assertEqualAsync(await status(url, cookie: again), 200, url) }
        let binary = repositoryRoot.appendingPathComponent(".build/debug/guidance-admin")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw XCTSkip("build guidance-admin first (swift build)") }
        let folder = harness.directory.appendingPathComponent("admin-roster")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, text) in [
            ("schools.csv", NotifierHarness.schools), ("students.csv", NotifierHarness.students), ("teachers.csv", NotifierHarness.teachers)
        ] {
            try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let process = Process()
        process.executableURL = binary
        process.arguments = ["session", "revoke", "t-hr-1-1"]
        process.environment = [
            "ROSTER_DIR": folder.path, "KAFKA_BOOTSTRAP_SERVERS": harness.cluster.bootstrapServers, "SESSION_TOPIC": harness.web.topic
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertTrue(
            String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains(
                "signed t-hr-1-1 out on every device"))
        let byCommand = try await refusedEverywhere(inboxes, cookie: again)
        XCTAssertTrue(byCommand, "guidance-admin session revoke reached both replicas")
    }

    /// The admin shows a code (at the notifier's session routes); typed on the gate phone,
    /// it signs that phone in as the admin, once.
    func testADeviceCodeFromTheTeacherPageSignsTheGatePhoneInOnce() async throws {
        let harness = try await NotifierHarness(authentication: true)
        self.harness = harness
        let (ingest, notifier) = (harness.ingestBase, harness.notifierBase)
        let admin = try await signIn(notifier, "token=tok-t-admin")
        let page = try await fetch("POST", notifier + "/session/devices/code", headers: form(notifier, cookie: admin))
        XCTAssertEqual(page.status, 200, page.text)
        let code = try XCTUnwrap(
            page.text.range(of: #"[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}(?=</p>)"#, options: .regularExpression).map { String(page.text[$0]) })
        let phone = try await signIn(ingest, path: "/session/code", "code=\(code)")
        try await assertEqualAsync(await status(ingest + "/v1/schools/sa/students/1/1/1", cookie: phone), 200)
        let again = try await fetch("POST", ingest + "/session/code", body: "code=\(code)", headers: form(ingest))
        XCTAssertEqual(again.status, 401)
        XCTAssertTrue(again.text.contains("이미 쓴 코드"), again.text)
        XCTAssertNil(again.header("Set-Cookie"))
    }

    /// 로그인 링크: the same answer for a known and an unknown address; the
    /// e-mail reaches a real SMTP server; its link signs in once.
    func testTheSignInLinkArrivesByMailAndSignsInOnce() async throws {
        guard FileManager.default.isExecutableFile(atPath: DeliveryTests.systemPython) else {
            throw XCTSkip("needs /usr/bin/python3 with python3-aiosmtpd")
        }
        let sink = try Counterpart(interpreter: DeliveryTests.systemPython, script: "smtp-sink.py")
        try sink.start()
        self.sink = sink
        var delivery = DeliveryConfig(
            mail: MailSettings(
                transport: .smtp(.init(url: "smtp://127.0.0.1:\(sink.port)", timeout: .seconds(10))),
                from: MailAddress("학생부 알림 <guidance@school.example>")!),
            publicAppURL: "https://app.school.example")
        delivery.pollInterval = .milliseconds(200)
        let harness = try await NotifierHarness(authentication: true, delivery: delivery, publicIngestURL: "https://app.school.example")
        self.harness = harness
        // The app's sign-in, at the ingest.
        let app = harness.ingestBase
        let login = try await fetch("GET", app + "/")
        XCTAssertTrue(login.text.contains("로그인 링크 받기"), "the link form is offered")

        let unknown = try await fetch("POST", app + "/session/link", body: "email=nobody%40sa.school.example", headers: form(app))
        let known = try await fetch("POST", app + "/session/link", body: "email=T-HR-1-1%40sa.school.example", headers: form(app))
        XCTAssertEqual(known.status, 200)
        XCTAssertEqual(unknown.status, 200)
        XCTAssertEqual(
            known.text.replacingOccurrences(of: "T-HR-1-1", with: "nobody"), unknown.text, "the same answer whether the address is known")
        let mails = try await sink.waitFor(10) { $0.count >= 1 }
        XCTAssertEqual(mails.count, 1, "one mail, to the known address: \(mails)")
        let mail = try XCTUnwrap(mails.first)
        XCTAssertEqual(mail["to"] as? [String], ["t-hr-1-1@sa.school.example"])
        XCTAssertEqual(mail["subject"] as? String, "[생활지도] 로그인 링크")
        let plain = mail["plain"] as? String ?? ""
        let link = try XCTUnwrap(
            plain.range(of: #"https://app\.school\.example/session/link\?t=[A-Za-z0-9_.-]+"#, options: .regularExpression).map {
                String(plain[$0])
            }, plain)
        let path = String(link.dropFirst("https://app.school.example".count))

        // Opening the link only shows a button (mail scanners open links); the button signs in.
        let page = try await fetch("GET", app + path)
        XCTAssertEqual(page.status, 200)
        XCTAssertNil(page.header("Set-Cookie"))
        let token = String(path.dropFirst("/session/link?t=".count))
        let cookie = try await signIn(app, path: "/session/link/use", "t=\(token)")
        let signedIn = try await fetch("GET", app + "/", headers: ["Cookie": cookie])
        XCTAssertTrue(
            signedIn.text.contains("id=\"tab-inbox\"") && !signedIn.text.contains("id=\"tab-gate\""),
            "the homeroom teacher's app: 알림함, no gate")
        let second = try await fetch("POST", app + "/session/link/use", body: "t=\(token)", headers: form(app))
        XCTAssertEqual(second.status, 410)
        XCTAssertTrue(second.text.contains("이미 쓴 로그인 링크"), second.text)
        let forged = try await fetch("POST", app + "/session/link/use", body: "t=\(token.dropLast(2))xx", headers: form(app))
        XCTAssertEqual(forged.status, 400)
    }
}
