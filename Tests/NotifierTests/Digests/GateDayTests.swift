import Foundation
import Guidance
import Ingest
import TestSupport
import XCTest

@testable import Notifier

/// The app at the ingest reads what the notifier holds with the caller's own
/// credential: the gate's "오늘 등록한 지도" (the school's registrations today
/// from every device) and the other tabs; registering goes on when the
/// notifier is down.
final class GateDayTests: XCTestCase {
    var harness: NotifierHarness?
    var gate: IngestService?

    override func tearDown() async throws {
        await gate?.shutdown()
        gate = nil
        await harness?.shutdown()
        harness = nil
    }

    func testTheSchoolsDayComesFromTheNotifierWithTheCallersCredential() async throws {
        // The notifier's today is the harness's registrations' day.
        let noon = try XCTUnwrap(Timestamp.parse("2026-11-21T03:00:00Z"))
        let harness = try await NotifierHarness(authentication: true, clock: { noon })
        self.harness = harness
        let gate = try await harness.startIngest(notifierURL: harness.notifierBase)
        self.gate = gate
        let base = "http://127.0.0.1:\(gate.port)"
        let today = base + "/v1/schools/sa/today"

        // Two registrations by the gate teacher, one by the admin, from two ingests.
        try await harness.register(grade: 1, classNumber: 1, number: 1, as: "t-gate")
        let body = #"{"student":{"grade":1,"classNumber":2,"number":1},"reason":{"code":"noShoes"},"occurredAt":"2026-11-21T00:10:00Z"}"#
        let accepted = try await fetch("POST", base + "/v1/schools/sa/guidances", body: body, headers: harness.headers("t-admin"))
        XCTAssertEqual(accepted.status, 202, accepted.text)
        _ = try await harness.waitForList(count: 2, as: "t-admin")

        let byToken = try await fetch("GET", today, headers: harness.headers("t-gate"))
        XCTAssertEqual(byToken.status, 200, byToken.text)
        guard case .array(let items)? = byToken.object["items"] else { return XCTFail(byToken.text) }
        XCTAssertEqual(items.count, 2, "every device's registrations")
        XCTAssertEqual(Set(items.compactMap { $0["recordedByName"]?.string }), ["교문", "관리"], "with who recorded them")
        XCTAssertEqual(byToken.header("Cache-Control"), "no-store")

        // A gate phone signed in by cookie: its session is carried to the notifier.
        let signIn = try await fetch(
            "POST", base + "/session", body: "token=tok-t-gate",
            headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": base])
        let cookie = try XCTUnwrap(signIn.header("Set-Cookie")).components(separatedBy: ";")[0]
        let byCookie = try await fetch("GET", today, headers: ["Cookie": cookie])
        XCTAssertEqual(byCookie.status, 200, byCookie.text)
        XCTAssertEqual(byCookie.body, byToken.body)

        // Gate teachers read their own school's today, nothing else.
        try await assertEqualAsync(await fetch("GET", base + "/v1/schools/sb/today", headers: harness.headers("t-gate")).status, 403)
        try await assertEqualAsync(
            await fetch("GET", today, headers: harness.headers("t-hr-1-1")).status, 403,
            "the gate's day list is for gate and admin teachers")
        let otherDay = try await fetch(
            "GET", harness.notifierBase + "/v1/schools/sa/guidances?date=2026-11-20", headers: harness.headers("t-gate"))
        XCTAssertEqual(otherDay.status, 403, otherDay.text)

        // The notifier down: the list says so, registering goes on.
        await harness.stopNotifier()
        let down = try await fetch("GET", today, headers: harness.headers("t-gate"))
        XCTAssertEqual(down.status, 503, down.text)
        XCTAssertNotNil(down.header("Retry-After"))
        XCTAssertTrue(down.text.contains("registering works"), down.text)
        let still = try await fetch("POST", base + "/v1/schools/sa/guidances", body: body, headers: harness.headers("t-gate"))
        XCTAssertEqual(still.status, 202, still.text)
    }

    /// The one app: a homeroom teacher on gate duty signs in once at the
    /// ingest, records at the gate and reads 우리 반, the 알림함 and 설정
    /// through it (the notifier decides access again); the notifier's own
    /// pages send the browser to the app; with the notifier down, the other
    /// tabs' reads answer 503 and the gate records.
    func testOneSignInAtTheIngestReachesEveryTabThroughIt() async throws {
        let noon = try XCTUnwrap(Timestamp.parse("2026-11-21T03:00:00Z"))
        var delivery = DeliveryConfig()
        delivery.publicAppURL = "https://app.school.example"
        let harness = try await NotifierHarness(authentication: true, clock: { noon }, delivery: delivery)
        self.harness = harness
        let gate = try await harness.startIngest(notifierURL: harness.notifierBase)
        self.gate = gate
        let app = "http://127.0.0.1:\(gate.port)"
        let form = ["Content-Type": "application/x-www-form-urlencoded", "Origin": app]

        let signIn = try await fetch("POST", app + "/session", body: "token=tok-t-hr-1-2", headers: form)
        XCTAssertEqual(signIn.status, 303, signIn.text)
        let cookie = try XCTUnwrap(signIn.header("Set-Cookie")).components(separatedBy: ";")[0]
        let page = try await fetch("GET", app + "/", headers: ["Cookie": cookie])
        let tabs = page.text.matches(of: /role="tab" id="tab-([a-z]+)"/).map { String($0.1) }
        XCTAssertEqual(
            tabs, ["gate", "lists", "overview", "service", "todo", "inbox", "settings"],
            "a homeroom teacher on gate duty: the gate and a homeroom teacher's tabs")
        XCTAssertTrue(page.text.contains("교문 지도 명단은 매일 08:50에 옵니다."), "the 알림함 says the school's time, not '정해진 시각'")

        let body = #"{"student":{"grade":1,"classNumber":2,"number":1},"reason":{"code":"noShoes"},"occurredAt":"2026-11-21T00:10:00Z"}"#
        let registered = try await fetch(
            "POST", app + "/v1/schools/sa/guidances", body: body,
            headers: ["Cookie": cookie, "Origin": app, "Content-Type": "application/json"])
        XCTAssertEqual(registered.status, 202, registered.text)
        _ = try await harness.waitForList(count: 1, as: "t-admin")
        let ourClass = try await fetch("GET", app + "/v1/schools/sa/guidances?grade=1&classNumber=2", headers: ["Cookie": cookie])
        XCTAssertEqual(ourClass.status, 200, ourClass.text)
        guard case .array(let items)? = ourClass.object["items"] else { return XCTFail(ourClass.text) }
        XCTAssertEqual(items.count, 1, "the record under 우리 반, read through the ingest")
        try await assertEqualAsync(await fetch("GET", app + "/v1/teachers/t-hr-1-2/inbox", headers: ["Cookie": cookie]).status, 200)
        try await assertEqualAsync(
            await fetch("GET", app + "/v1/teachers/t-hr-1-1/inbox", headers: ["Cookie": cookie]).status, 403,
            "another's 알림함: the notifier refuses")
        let off = try await fetch(
            "POST", app + "/v1/teachers/t-hr-1-2/settings", body: #"{"emailLists":false}"#,
            headers: ["Cookie": cookie, "Origin": app, "Content-Type": "application/json"])
        XCTAssertEqual(off.status, 200, off.text)
        let settings = try await fetch("GET", harness.notifierBase + "/v1/teachers/t-hr-1-2/settings", headers: harness.headers("t-hr-1-2"))
        XCTAssertEqual(settings.object["emailLists"], .bool(false), "the change reached the notifier: \(settings.text)")
        try await assertEqualAsync(
            await fetch(
                "POST", app + "/v1/digests/run", body: "{}", headers: ["Cookie": cookie, "Origin": app, "Content-Type": "application/json"]
            ).status, 403)

        // The notifier's own pages send the browser to the app.
        let root = try await fetch("GET", harness.notifierBase + "/")
        XCTAssertEqual(root.status, 303)
        XCTAssertEqual(root.header("Location"), "https://app.school.example/")
        let digest = try await fetch("GET", harness.notifierBase + "/digests/d%201")
        XCTAssertEqual(digest.header("Location"), "https://app.school.example/digests/d%201")

        await harness.stopNotifier()
        let down = try await fetch("GET", app + "/v1/teachers/t-hr-1-2/inbox", headers: ["Cookie": cookie])
        XCTAssertEqual(down.status, 503, down.text)
        let still = try await fetch(
            "POST", app + "/v1/schools/sa/guidances", body: body,
            headers: ["Cookie": cookie, "Origin": app, "Content-Type": "application/json"])
        XCTAssertEqual(still.status, 202, still.text)
    }

    /// What the app passes on to the notifier: a HEAD answers as its GET
    /// does (libcurl waited 4 s for a body and the answer was 503); a path
    /// with a `.` or `..` segment is refused (libcurl collapsed
    /// `…/inbox/../read` into another route); the notifier's access record
    /// names the teacher's address, not the ingest's.
    func testWhatTheAppPassesOnKeepsItsMethodItsRouteAndItsClient() async throws {
        let harness = try await NotifierHarness(authentication: true)
        self.harness = harness
        let gate = try await harness.startIngest(notifierURL: harness.notifierBase, trustedProxies: ["127.0.0.1"])
        self.gate = gate
        let app = "http://127.0.0.1:\(gate.port)"

        // (Another teacher's inbox: a read is recorded once a day, and t-hr-1-1's is kept for the address below.)
        let head = try await fetch("HEAD", app + "/v1/teachers/t-hr-1-2/inbox", headers: harness.headers("t-hr-1-2"))
        XCTAssertEqual(head.status, 200, "HEAD through the ingest")
        XCTAssertEqual(head.body.count, 0)
        XCTAssertEqual(head.header("Content-Type"), "application/json")

        for path in ["/v1/teachers/t-hr-1-1/inbox/../read", "/v1/teachers/t-hr-1-1/inbox/./read", "/v1/teachers/t-hr-1-1/inbox/%2E%2E/read"]
        {
            let reply = try rawExchange(
                port: gate.port,
                "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-t-hr-1-1\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            XCTAssertTrue(reply.hasPrefix("HTTP/1.1 404"), "\(path): \(reply.prefix(300))")
        }

        // Behind a proxy the ingest trusts, the teacher is at 203.0.113.9.
        let read = try await fetch(
            "GET", app + "/v1/teachers/t-hr-1-1/inbox",
            headers: harness.headers("t-hr-1-1").merging(["X-Forwarded-For": "203.0.113.9"]) { $1 })
        XCTAssertEqual(read.status, 200, read.text)
        func clientsOf(_ items: [AnyCodable]) -> Set<String> {
            Set(items.filter { $0["action"]?.string == "inbox" }.compactMap { $0["client"]?.string })
        }
        let clients = clientsOf(try await harness.accessLog("?teacherId=t-hr-1-1") { clientsOf($0).contains("203.0.113.9") })
        XCTAssertTrue(clients.contains("203.0.113.9"), "the access record names the teacher's address: \(clients)")
        // Someone else's Forwarded-Client header is not believed.
        let forged = try await fetch(
            "GET", harness.notifierBase + "/v1/teachers/t-hr-1-1/inbox",
            headers: harness.headers("t-hr-1-1").merging(["Forwarded-Client": "198.51.100.7"]) { $1 })
        XCTAssertEqual(forged.status, 200)
    }
}
