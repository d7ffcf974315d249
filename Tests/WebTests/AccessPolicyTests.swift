import Access
import Common
import Crypto
import Guidance
import HTTP
import Kafka
import Sessions
import TestSupport
import Web
import Wiring
import XCTest

/// The access policy and the sign-in routes, through the router as the
/// server runs them, without sockets: which credential passes, which Origin
/// a cookie-signed change may come from, what the session cookie says.
final class AccessPolicyTests: XCTestCase {
    private func roster() throws -> Roster {
        let schools = "school_id,name,timezone,digest_time\nsa,<b>School A</b>,Asia/Seoul,08:50\nsb,School B,Asia/Seoul,08:50\n"
        let teachers =
            "school_id,teacher_id,name,email,role,grade,class\n"
            + "sa,g1,<script>alert(1)</script>,g1@a.example,gate,,\nsa,t1,Kim,t1@a.example,homeroom,1,2\nsb,g2,Park,g2@b.example,gate,,\n"
        let tokens =
            "token_sha256,teacher_id\n"
            + [("gate-a", "g1"), ("hr-a", "t1"), ("gate-b", "g2")]
            .map { "\(SHA256.hex(SHA256.hash(Array($0.0.utf8)))),\($0.1)\n" }.joined()
        return try Roster.parse(
            schools: schools, students: "school_id,student_id,grade,class,number,name,photo_url\n", teachers: teachers, tokens: tokens)
    }

    private var sessions: Sessions!
    private var rosters: LiveRoster!
    /// The sign-in links' e-mails, sent after the answer.
    private let errands = Errands(logger: Logger(component: "test", level: .error))

    /// A router with one guarded route per access kind and the sign-in routes
    /// of a gate page; sessions live in this process (`SessionLog.local`).
    private func router(
        publicURL: String? = nil, attempts: AttemptLimiter = AttemptLimiter(clock: Timestamp.now), rosters: LiveRoster? = nil,
        mail: MailSettings? = nil
    ) throws -> Router {
        self.rosters = try rosters ?? LiveRoster(roster())
        let cookie = SessionCookie(name: "gate_session", publicURL: publicURL)
        sessions = Sessions(secret: String(repeating: "s", count: 32), days: 30, log: .local(clock: Timestamp.now))
        let policy = AccessPolicy(
            rosters: self.rosters, cookie: cookie, sessions: sessions, publicURL: publicURL, attempts: attempts,
            logger: Logger(component: "test", level: .error))
        var routes = GuardedRouter(router: Router(), policy: policy)
        routes.post("/v1/schools/{schoolId}/things", .school(roles: [.gate])) { _, caller in .text(caller.teacher?.id ?? "-") }
        routes.get("/v1/me", .teacher) { _, caller in .text(caller.teacher?.id ?? "-") }
        let signIn = SignIn(
            title: "교문 지도", roles: [.gate], policy: policy, mail: mail, publicURL: publicURL,
            errands: errands, logger: Logger(component: "test", level: .error))
        signIn.routes(into: &routes, scripts: [Asset(name: "gate.js", contentType: "text/javascript", text: "'use strict';")])
        routes.get("/", .open) { request, caller in
            signIn.page(request, caller, next: "/") { teacher in
                Page.signedIn(
                    title: "교문 지도", teacher: teacher, school: caller.roster.school(teacher.schoolID), main: "<main></main>",
                    scripts: ["gate.js"])
            }
        }
        return routes.router
    }

    /// A `Cookie` header signing `teacher` in as if by `token`, renewed `age` ago.
    private func cookie(_ teacher: String, token: String, age: Duration = .zero) -> String {
        let fresh = sessions.new(teacher: teacher, credential: "token:" + Roster.fingerprint(token: token))
        let session = Session(
            id: fresh.id, teacherID: teacher, renewedAt: fresh.renewedAt - age.milliseconds, credential: fresh.credential, seen: fresh.seen)
        return "gate_session=" + sessions.cookieValue(session, name: "gate_session")
    }

    /// The `name=value` a `Set-Cookie` answer sets.
    private func setCookie(_ response: Response) -> String? {
        header(response, "Set-Cookie").map { String($0.prefix { $0 != ";" }) }
    }

    private let form = ["content-type": "application/x-www-form-urlencoded", "host": "127.0.0.1:8080", "origin": "http://127.0.0.1:8080"]

    private func send(
        _ router: Router, _ method: String, _ path: String, headers: [String: String] = [:], body: String = "",
        from peer: String = "127.0.0.1"
    ) async -> Response {
        await router.respond(
            to: Request(method: method, path: path, headers: headers, body: Array(body.utf8), requestID: "test", peer: peer))
    }

    private func expect(
        _ status: Int, _ router: Router, _ method: String, _ path: String, headers: [String: String] = [:], body: String = "",
        message: String = "", line: UInt = #line
    ) async {
        let answer = await send(router, method, path, headers: headers, body: body)
        XCTAssertEqual(answer.status, status, message, line: line)
    }

    private func header(_ response: Response, _ name: String) -> String? {
        response.headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    private func text(_ response: Response) -> String { String(decoding: response.body, as: UTF8.self) }

    func testBearerOrCookieAuthenticatesAndTheRouteDeclaresWhoMayPass() async throws {
        let router = try router()
        let path = "/v1/schools/sa/things"
        let bearer = await send(router, "POST", path, headers: ["authorization": "Bearer gate-a"])
        XCTAssertEqual(bearer.status, 200)
        XCTAssertEqual(text(bearer), "g1")
        await expect(401, router, "POST", path)
        await expect(401, router, "POST", path, headers: ["authorization": "Basic Z2F0ZS1hOg=="])
        await expect(403, router, "POST", path, headers: ["authorization": "Bearer gate-b"], message: "another school's gate teacher")
        await expect(403, router, "POST", path, headers: ["authorization": "Bearer hr-a"], message: "a homeroom teacher may not")
        let me = await send(router, "GET", "/v1/me", headers: ["cookie": "theme=dark; " + cookie("t1", token: "hr-a")])
        XCTAssertEqual(text(me), "t1", "a GET signed in by cookie needs no Origin")
        await expect(401, router, "GET", "/v1/me", headers: ["cookie": "gate_session=nope"])
        await expect(401, router, "GET", "/v1/me", headers: ["cookie": "gate_session=hr-a"], message: "a token is not a session")
        await expect(
            403, router, "GET", "/v1/me", headers: ["cookie": cookie("t1", token: "hr-a"), "origin": "https://evil.example"],
            message: "a foreign Origin, even on a read")
    }

    func testACookieSignedChangeMustComeFromThisSite() async throws {
        let router = try router(publicURL: "https://gate.school.example/")
        let path = "/v1/schools/sa/things"
        let cookie = self.cookie("g1", token: "gate-a")
        let missing = await send(router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080"])
        XCTAssertEqual(missing.status, 403)
        XCTAssertTrue(text(missing).contains("Origin"))
        let foreign = await send(
            router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "https://evil.example"])
        XCTAssertEqual(foreign.status, 403)
        XCTAssertTrue(text(foreign).contains("another site"))
        let nullOrigin = await send(router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "null"])
        XCTAssertEqual(nullOrigin.status, 403)
        await expect(
            200, router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "https://gate.school.example"])
        await expect(200, router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "http://10.0.0.5:8080"])
        // An API client with a bearer token sends no Origin; a browser page of another site that sends one is refused anyway.
        await expect(200, router, "POST", path, headers: ["authorization": "Bearer gate-a"])
        await expect(403, router, "POST", path, headers: ["authorization": "Bearer gate-a", "origin": "https://evil.example"])
    }

    func testSignInSetsAStrictHttpOnlyExpiringSessionCookieAndReturnsOnlyToThisSite() async throws {
        let router = try router()
        let signedIn = await send(router, "POST", "/session", headers: form, body: "token=gate-a&next=%2Fdigests%2Fd1")
        XCTAssertEqual(signedIn.status, 303)
        XCTAssertEqual(header(signedIn, "Location"), "/digests/d1")
        let set = try XCTUnwrap(header(signedIn, "Set-Cookie"))
        XCTAssertTrue(set.hasSuffix("; Max-Age=2592000; Path=/; HttpOnly; SameSite=Strict"), set)
        let cookie = try XCTUnwrap(setCookie(signedIn))
        XCTAssertFalse(cookie.contains("gate-a"), "the cookie is a session, not the token: \(cookie)")
        XCTAssertGreaterThan(cookie.count, 60)
        let me = await send(router, "GET", "/v1/me", headers: ["cookie": cookie])
        XCTAssertEqual(text(me), "g1")
        for next in ["//evil.example/", "https://evil.example/", "/\\evil.example", "/ok\r\nSet-Cookie:x"] {
            let escaped = next.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let answer = await send(router, "POST", "/session", headers: form, body: "token=gate-a&next=\(escaped)")
            XCTAssertEqual(header(answer, "Location"), "/", "next=\(next)")
        }
        let wrong = await send(router, "POST", "/session", headers: form, body: "token=wrong+token&next=%2F")
        XCTAssertEqual(wrong.status, 401)
        XCTAssertTrue(text(wrong).contains("접속 키가 올바르지 않습니다."))
        XCTAssertNil(header(wrong, "Set-Cookie"))
        let homeroom = await send(router, "POST", "/session", headers: form, body: "token=hr-a")
        XCTAssertEqual(homeroom.status, 403, "a page for gate teachers refuses others")
        XCTAssertNil(header(homeroom, "Set-Cookie"))
        await expect(
            415, router, "POST", "/session", headers: ["host": "127.0.0.1:8080", "origin": "http://127.0.0.1:8080"], body: "token=gate-a")
        let foreign = await send(
            router, "POST", "/session", headers: form.merging(["origin": "https://evil.example"]) { $1 }, body: "token=gate-a")
        XCTAssertEqual(foreign.status, 403, "another site cannot sign a browser in")

        // Signing out ends the session on the server: the cookie replayed is refused.
        let out = await send(router, "POST", "/session/end", headers: form.merging(["cookie": cookie]) { $1 })
        XCTAssertEqual(out.status, 303)
        XCTAssertEqual(header(out, "Set-Cookie"), "gate_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict")
        await expect(401, router, "GET", "/v1/me", headers: ["cookie": cookie], message: "a cookie replayed after sign-out")

        let secure = try self.router(publicURL: "https://gate.school.example")
        let overTLS = await send(
            secure, "POST", "/session", headers: form.merging(["origin": "https://gate.school.example"]) { $1 }, body: "token=gate-a")
        XCTAssertTrue(try XCTUnwrap(header(overTLS, "Set-Cookie")).hasSuffix("; HttpOnly; SameSite=Strict; Secure"))
    }

    /// A session ends by itself after SESSION_DAYS unused, lives on when
    /// used (renewed hourly at most), and ends with the token it came from
    /// or when the teacher signs out everywhere else.
    func testSessionsExpireRenewAndEnd() async throws {
        let router = try router()
        await expect(
            401, router, "GET", "/v1/me", headers: ["cookie": cookie("g1", token: "gate-a", age: .seconds(30 * 86_400 + 60))],
            message: "expired")
        let old = await send(router, "GET", "/v1/me", headers: ["cookie": cookie("g1", token: "gate-a", age: .seconds(7200))])
        XCTAssertEqual(old.status, 200)
        let renewed = try XCTUnwrap(setCookie(old), "a session used after an hour gets a new cookie")
        let fresh = await send(router, "GET", "/v1/me", headers: ["cookie": renewed])
        XCTAssertNil(header(fresh, "Set-Cookie"), "a fresh one is not renewed again")

        // 다른 기기 모두 로그아웃: the other device's cookie ends, this one goes on.
        let here = cookie("g1", token: "gate-a")
        let there = cookie("g1", token: "gate-a")
        let others = await send(router, "POST", "/session/devices/end-others", headers: form.merging(["cookie": here]) { $1 })
        XCTAssertEqual(others.status, 303)
        let kept = try XCTUnwrap(setCookie(others))
        await expect(401, router, "GET", "/v1/me", headers: ["cookie": there], message: "the other device")
        await expect(200, router, "GET", "/v1/me", headers: ["cookie": kept], message: "this device, with its new cookie")

        // Revoking the token ends the sessions it signed in.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roster-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(tokens: [(String, String)]) throws {
            for (name, text) in [
                ("schools.csv", "school_id,name,timezone,digest_time\nsa,A,Asia/Seoul,08:50\n"),
                ("students.csv", "school_id,student_id,grade,class,number,name,photo_url\n"),
                (
                    "teachers.csv",
                    "school_id,teacher_id,name,email,role,grade,class\nsa,g1,G,g1@a.example,gate,,\nsa,t1,Kim,t1@a.example,homeroom,1,2\n"
                ),
                (
                    "tokens.csv",
                    "token_sha256,teacher_id\n" + tokens.map { "\(SHA256.hex(SHA256.hash(Array($0.0.utf8)))),\($0.1)\n" }.joined()
                )
            ] {
                try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
            }
        }
        try write(tokens: [("gate-a", "g1"), ("hr-a", "t1")])
        let live = LiveRoster(
            directory: folder.path, roster: try Roster.load(from: folder.path), clock: Timestamp.now,
            logger: Logger(component: "test", level: .error),
            metrics: Metrics())
        let fromFolder = try self.router(rosters: live)
        let withToken = cookie("t1", token: "hr-a")
        let gate = cookie("g1", token: "gate-a")
        await expect(200, fromFolder, "GET", "/v1/me", headers: ["cookie": withToken])
        try write(tokens: [("gate-a", "g1")])
        XCTAssertTrue(live.reload(because: "hr-a's token revoked"))
        await expect(401, fromFolder, "GET", "/v1/me", headers: ["cookie": withToken], message: "the token was revoked")
        await expect(200, fromFolder, "GET", "/v1/me", headers: ["cookie": gate], message: "another teacher's token stays")
    }

    /// A device code signs one other device in, once; the admin's devices
    /// page; an address's failures past 100 in ten minutes are 429 with
    /// Retry-After.
    func testADeviceCodeSignsInOnceAndFailuresAreLimited() async throws {
        let router = try router()
        let here = cookie("g1", token: "gate-a")
        let page = await send(router, "GET", "/session/devices", headers: ["cookie": here])
        XCTAssertTrue(text(page).contains("연결 코드 만들기") && text(page).contains("다른 기기 모두 로그아웃"), text(page))
        let made = await send(router, "POST", "/session/devices/code", headers: form.merging(["cookie": here]) { $1 })
        let html = text(made)
        let code = try XCTUnwrap(
            html.range(of: #"id="device-code"[^>]*>([A-Z2-9]{4}-[A-Z2-9]{4})<"#, options: .regularExpression).map {
                String(html[$0].suffix(10).prefix(9))
            })
        XCTAssertFalse(code.contains { "01OIL".contains($0) }, code)
        let paired = await send(
            router, "POST", "/session/code", headers: form, body: "code=\(code.lowercased().replacingOccurrences(of: "-", with: "+"))")
        XCTAssertEqual(paired.status, 303, text(paired))
        let pairedCookie = try XCTUnwrap(setCookie(paired))
        let me = await send(router, "GET", "/v1/me", headers: ["cookie": pairedCookie])
        XCTAssertEqual(text(me), "g1", "the second device is signed in as the teacher who showed the code")
        let again = await send(router, "POST", "/session/code", headers: form, body: "code=\(code)")
        XCTAssertEqual(again.status, 401)
        XCTAssertTrue(text(again).contains("이미 쓴 코드"), text(again))

        // 99 more failures (100 in all) are answered; the 101st is 429.
        for attempt in 1...99 {
            let wrong = await send(router, "POST", "/session", headers: form, body: "token=wrong-\(attempt)")
            XCTAssertEqual(wrong.status, 401, "attempt \(attempt + 1)")
        }
        let limited = await send(router, "POST", "/session", headers: form, body: "token=wrong-100")
        XCTAssertEqual(limited.status, 429, "the next wrong key waits")
        let wait = try XCTUnwrap(Int(try XCTUnwrap(header(limited, "Retry-After"))))
        XCTAssertTrue((590...600).contains(wait), "Retry-After \(wait)")
        let bearer = await send(router, "GET", "/v1/me", headers: ["authorization": "Bearer wrong"])
        XCTAssertEqual(bearer.status, 429, "wrong bearer tokens from the same address too")
        let elsewhere = await send(router, "GET", "/v1/me", headers: ["authorization": "Bearer wrong", "x-forwarded-for": "10.9.9.9"])
        XCTAssertEqual(elsewhere.status, 429, "X-Forwarded-For from an untrusted peer changes nothing")
        let wrongCode = await send(router, "POST", "/session/code", headers: form, body: "code=ABCD-EFGH")
        XCTAssertEqual(wrongCode.status, 429, "a wrong device code too")
    }

    /// A guesser behind a school's one NAT address fails 100 times (about a
    /// second of guessing): it is answered 429, and every right credential
    /// from that address still signs in — a colleague's bearer token, the
    /// 접속 키 form, a device code, a sign-in link.
    func testPastTheAddressLimitARightCredentialStillSignsIn() async throws {
        let router = try router()
        for attempt in 1...100 {
            _ = await send(router, "GET", "/v1/me", headers: ["authorization": "Bearer guess-\(attempt)"], from: "10.3.3.3")
        }
        let guess = await send(router, "GET", "/v1/me", headers: ["authorization": "Bearer guess-101"], from: "10.3.3.3")
        XCTAssertEqual(guess.status, 429, "the guesser is slowed")
        XCTAssertNotNil(header(guess, "Retry-After"))
        let colleague = await send(router, "GET", "/v1/me", headers: ["authorization": "Bearer hr-a"], from: "10.3.3.3")
        XCTAssertEqual(colleague.status, 200, "a colleague's valid token: \(text(colleague))")
        XCTAssertEqual(text(colleague), "t1")
        let form = await send(router, "POST", "/session", headers: self.form, body: "token=gate-a", from: "10.3.3.3")
        XCTAssertEqual(form.status, 303, "the 접속 키 form: \(text(form).prefix(200))")
        let wrongForm = await send(router, "POST", "/session", headers: self.form, body: "token=guess", from: "10.3.3.3")
        XCTAssertEqual(wrongForm.status, 429)

        let here = cookie("g1", token: "gate-a")
        let made = text(await send(router, "POST", "/session/devices/code", headers: self.form.merging(["cookie": here]) { $1 }))
        let code = try XCTUnwrap(
            made.range(of: #"[A-Z2-9]{4}-[A-Z2-9]{4}(?=<)"#, options: .regularExpression).map { String(made[$0]) }, made)
        let paired = await send(router, "POST", "/session/code", headers: self.form, body: "code=\(code)", from: "10.3.3.3")
        XCTAssertEqual(paired.status, 303, "a device code shown a moment ago: \(text(paired).prefix(200))")
        let link = sessions.linkToken(for: try XCTUnwrap(rosters.current.teachers["g1"]))
        let linked = await send(router, "POST", "/session/link/use", headers: self.form, body: "t=\(link)", from: "10.3.3.3")
        XCTAssertEqual(linked.status, 303, "a sign-in link: \(text(linked).prefix(200))")
    }

    /// A used sign-in link replayed is not its teacher's failure: ten
    /// replays leave the teacher's next link working.
    func testReplayingAUsedLinkDoesNotLockItsTeacherOut() async throws {
        let router = try router()
        let teacher = try XCTUnwrap(rosters.current.teachers["g1"])
        let link = sessions.linkToken(for: teacher)
        let first = await send(router, "POST", "/session/link/use", headers: form, body: "t=\(link)")
        XCTAssertEqual(first.status, 303)
        for replay in 1...12 {
            let again = await send(router, "POST", "/session/link/use", headers: form, body: "t=\(link)", from: "10.4.4.\(replay)")
            XCTAssertNotEqual(again.status, 303, "replay \(replay)")
        }
        let next = await send(
            router, "POST", "/session/link/use", headers: form, body: "t=\(sessions.linkToken(for: teacher))", from: "10.4.5.5")
        XCTAssertEqual(next.status, 303, "the teacher's next link: \(text(next).prefix(200))")
    }

    /// 다른 기기 모두 로그아웃 voids the grants made before it: a device code
    /// shown and a sign-in link mailed earlier sign nobody in afterwards (an
    /// admin's revocation and `guidance-admin session revoke` publish the same
    /// sign-out); a code made afterwards by the session kept still works.
    func testGrantsMadeBeforeASignOutEverywhereNoLongerSignIn() async throws {
        let router = try router()
        let here = cookie("g1", token: "gate-a")
        func newCode(_ cookie: String) async throws -> String {
            let html = text(await send(router, "POST", "/session/devices/code", headers: form.merging(["cookie": cookie]) { $1 }))
            return try XCTUnwrap(
                html.range(of: #"[A-Z2-9]{4}-[A-Z2-9]{4}(?=<)"#, options: .regularExpression).map { String(html[$0]) }, html)
        }
        let code = try await newCode(here)
        let link = sessions.linkToken(for: try XCTUnwrap(rosters.current.teachers["g1"]))

        let others = await send(router, "POST", "/session/devices/end-others", headers: form.merging(["cookie": here]) { $1 })
        let kept = try XCTUnwrap(setCookie(others))
        let paired = await send(router, "POST", "/session/code", headers: form, body: "code=\(code)")
        XCTAssertEqual(paired.status, 401, "a code shown before the sign-out")
        XCTAssertNil(setCookie(paired))
        XCTAssertTrue(text(paired).contains("로그아웃되어 쓸 수 없습니다"), text(paired))
        let used = await send(router, "POST", "/session/link/use", headers: form, body: "t=\(link)")
        XCTAssertEqual(used.status, 410, "a link mailed before the sign-out")
        XCTAssertNil(setCookie(used))

        let after = try await newCode(kept)
        let second = await send(router, "POST", "/session/code", headers: form, body: "code=\(after)")
        XCTAssertEqual(second.status, 303, "a code made afterwards by the session kept: \(text(second))")
    }

    /// A school behind one NAT address: one guesser's ten wrong tokens do not
    /// lock the other teachers out (the address may fail 100 times); ten
    /// failed sign-in links naming one teacher lock that teacher's links,
    /// from any address.
    func testOneGuesserAtASchoolsAddressDoesNotLockTheSchoolOut() async throws {
        let router = try router()
        for attempt in 1...12 {
            let wrong = await send(router, "POST", "/session", headers: form, body: "token=guess-\(attempt)", from: "10.1.1.1")
            XCTAssertEqual(wrong.status, 401, "guess \(attempt)")
        }
        let colleague = await send(router, "POST", "/session", headers: form, body: "token=gate-a", from: "10.1.1.1")
        XCTAssertEqual(colleague.status, 303, "a colleague behind the same address signs in")

        let limiter = AttemptLimiter(limit: 10, addressLimit: 100, clock: Timestamp.now)
        for _ in 1...10 { limiter.fail(AccessPolicy.attemptKeys(client: "10.9.\(Int.random(in: 0...255)).1", teacher: "g1")) }
        XCTAssertNotNil(
            limiter.refusal(AccessPolicy.attemptKeys(client: "10.8.8.8", teacher: "g1")), "ten failures naming g1, from anywhere")
        XCTAssertNil(limiter.refusal(AccessPolicy.attemptKeys(client: "10.8.8.8", teacher: "t1")), "another teacher of the school")
    }

    /// Wrong device codes sent together are counted before the code is
    /// looked for (up to 2 s): past the address's limit they are 429 at once.
    func testWrongDeviceCodesSentTogetherAreCountedFirst() async throws {
        let router = try router(attempts: AttemptLimiter(limit: 10, addressLimit: 10, clock: Timestamp.now))
        let form = self.form
        let statuses = await withTaskGroup(of: Int.self) { group in
            for index in 0..<60 {
                let request = Request(
                    method: "POST", path: "/session/code", headers: form, body: Array("code=ABCD-EF\(index % 8 + 2)\(index % 7 + 2)".utf8),
                    requestID: "test-\(index)", peer: "10.7.7.7")
                group.addTask { await router.respond(to: request).status }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(statuses.filter { $0 == 401 }.count, 10, "\(statuses)")
        XCTAssertEqual(statuses.filter { $0 == 429 }.count, 50, "\(statuses)")
    }

    /// Sign-in links asked for from ten addresses: every answer is the same
    /// 200 (no lock-out, the teacher's own request included), and the
    /// teacher's mailbox gets three, whose links still work.
    func testLinkRequestsFromManyAddressesDoNotFloodTheMailboxNorLockItOut() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mail-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let mail = MailSettings(transport: .directory(folder.path), from: try XCTUnwrap(MailAddress("교문 <gate@a.example>")))
        let router = try router(publicURL: "https://gate.a.example", mail: mail)
        let headers = form.merging(["host": "gate.a.example", "origin": "https://gate.a.example"]) { $1 }
        for address in 1...11 {
            let asked = await send(
                router, "POST", "/session/link", headers: headers, body: "email=g1%40a.example", from: "10.5.5.\(address)")
            XCTAssertEqual(asked.status, 200, "request \(address): \(text(asked).prefix(300))")
        }
        func written() -> [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.filter { $0.hasSuffix(".eml") } ?? []
        }
        // Every request's errand has ended: whatever was going to be written has been.
        let idle = await errands.idle(within: .seconds(10))
        XCTAssertTrue(idle, "the sign-in links' errands ended")
        let mails = written()
        XCTAssertEqual(mails.count, 3, "\(mails)")
        let raw = try String(contentsOf: folder.appendingPathComponent(try XCTUnwrap(mails.first)), encoding: .utf8)
        let body = try XCTUnwrap(raw.components(separatedBy: "\r\n\r\n").dropFirst().first)
        let message = String(decoding: try XCTUnwrap(Data(base64Encoded: body, options: .ignoreUnknownCharacters)), as: UTF8.self)
        let token = try XCTUnwrap(
            message.range(of: #"link\?t=[A-Za-z0-9_.=-]+"#, options: .regularExpression).map { String(message[$0].dropFirst(7)) })
        let signedIn = await send(router, "POST", "/session/link/use", headers: headers, body: "t=\(token)", from: "10.6.6.6")
        XCTAssertEqual(signedIn.status, 303, "a link from the mailbox still signs in: \(text(signedIn).prefix(300))")
    }

    /// A school's NAT carries a guesser's wrong keys and every teacher's
    /// link requests: the guesser's failures do not take the e-mailed link
    /// away, and a hundred and more teachers asking for links in the same
    /// minutes are not refused; link requests are bounded on their own count.
    func testAGuesserBehindTheSchoolsAddressDoesNotTakeTheLinkAway() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mail-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let mail = MailSettings(transport: .directory(folder.path), from: try XCTUnwrap(MailAddress("교문 <gate@a.example>")))
        let limiter = AttemptLimiter(limit: 10, addressLimit: 20, clock: Timestamp.now)
        let router = try router(publicURL: "https://gate.a.example", attempts: limiter, mail: mail)
        let headers = form.merging(["host": "gate.a.example", "origin": "https://gate.a.example"]) { $1 }
        let school = "10.9.9.9"
        for attempt in 1...25 {
            let wrong = await send(router, "POST", "/session", headers: headers, body: "token=guess-\(attempt)", from: school)
            XCTAssertEqual(wrong.status, attempt <= 20 ? 401 : 429, "guess \(attempt)")
        }
        let asked = await send(router, "POST", "/session/link", headers: headers, body: "email=g1%40a.example", from: school)
        XCTAssertEqual(asked.status, 200, "the link is asked for past the guesser's limit: \(text(asked).prefix(300))")
        _ = try await eventually(within: .seconds(10)) {
            (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.filter { $0.hasSuffix(".eml") }.count ?? 0
        } until: {
            $0 == 1
        }
        // Every teacher of the school asks (other addresses of the roster or not): refused only past the link count.
        var statuses: [Int] = []
        for teacher in 1..<(limiter.linkLimit + 5) {
            statuses.append(
                await send(router, "POST", "/session/link", headers: headers, body: "email=t\(teacher)%40a.example", from: school).status)
        }
        XCTAssertEqual(statuses.filter { $0 == 200 }.count, limiter.linkLimit - 1, "the first request counted too")
        XCTAssertEqual(statuses.suffix(5), [429, 429, 429, 429, 429])
        let right = await send(router, "POST", "/session", headers: headers, body: "token=gate-a", from: school)
        XCTAssertEqual(right.status, 303, "a right key still signs in")
    }

    /// Behind a trusted proxy the client is the address it names.
    func testTheClientAddressComesFromTrustedProxiesOnly() {
        let clients = ClientAddresses(trusted: ["10.0.0.0/8", "192.168.1.1"])
        func client(_ peer: String, _ forwarded: String?) -> String {
            clients.client(
                of: Request(
                    method: "GET", path: "/", headers: forwarded.map { ["x-forwarded-for": $0] } ?? [:], requestID: "test", peer: peer))
        }
        XCTAssertEqual(client("203.0.113.7", "1.2.3.4"), "203.0.113.7", "an untrusted peer's header is ignored")
        XCTAssertEqual(client("10.1.2.3", "1.2.3.4, 198.51.100.9"), "198.51.100.9", "the nearest untrusted hop")
        XCTAssertEqual(client("192.168.1.1", "198.51.100.9, 10.0.0.7"), "198.51.100.9", "trusted hops are skipped")
        XCTAssertEqual(client("10.1.2.3", nil), "10.1.2.3")
    }

    func testPagesEscapeRosterTextAndCarryAStrictPolicy() async throws {
        let router = try router()
        let signedOut = await send(router, "GET", "/")
        XCTAssertEqual(signedOut.status, 200)
        XCTAssertTrue(text(signedOut).contains("<label for=\"token\">접속 키</label>"))
        XCTAssertTrue(text(signedOut).contains("<label for=\"code\">기기 연결 코드</label>"))
        XCTAssertFalse(text(signedOut).contains("로그인 링크"), "no link form without mail and a public address")
        XCTAssertTrue(text(signedOut).contains("<button type=\"submit\">로그인</button>"))
        let page = await send(router, "GET", "/", headers: ["cookie": cookie("g1", token: "gate-a")])
        XCTAssertEqual(page.status, 200)
        let html = text(page)
        XCTAssertTrue(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), html)
        XCTAssertTrue(html.contains("&lt;b&gt;School A&lt;/b&gt;"))
        XCTAssertFalse(html.contains("<script>alert"))
        XCTAssertFalse(html.contains("gate-a"), "the token never appears in the page")
        XCTAssertTrue(html.contains("data-time-zone=\"Asia/Seoul\""))
        let policy = try XCTUnwrap(header(page, "Content-Security-Policy"))
        XCTAssertTrue(
            policy.contains("script-src 'self'") && policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"))
        XCTAssertFalse(policy.contains("unsafe-inline"))
        XCTAssertFalse(html.contains("<script>"), "no inline script")
        let revoked = await send(router, "GET", "/", headers: ["cookie": "gate_session=revoked"])
        XCTAssertTrue(text(revoked).contains("로그인이 만료되었습니다"))
        XCTAssertEqual(header(revoked, "Set-Cookie"), "gate_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict")
        let otherRole = await send(router, "GET", "/", headers: ["cookie": cookie("t1", token: "hr-a")])
        XCTAssertEqual(otherRole.status, 403)
    }

    func testAssetsComeFromTheServiceWithValidators() async throws {
        let router = try router()
        let script = await send(router, "GET", "/assets/gate.js")
        XCTAssertEqual(script.status, 200)
        XCTAssertEqual(text(script), "'use strict';")
        let etag = try XCTUnwrap(header(script, "ETag"))
        await expect(304, router, "GET", "/assets/gate.js", headers: ["if-none-match": etag])
        let style = await send(router, "GET", "/assets/style.css")
        XCTAssertEqual(header(style, "Content-Type"), "text/css; charset=utf-8")
        XCTAssertEqual(header(style, "X-Content-Type-Options"), "nosniff")
        let common = await send(router, "GET", "/assets/common.js")
        XCTAssertTrue(text(common).contains("window.Guidance"))
        await expect(404, router, "GET", "/assets/other.js")
    }

    func testFormBodiesDecodeAsBrowsersSendThem() throws {
        let request = Request(
            method: "POST", path: "/", headers: ["content-type": "application/x-www-form-urlencoded; charset=UTF-8"],
            body: Array("token=a+b%2Bc%26&next=%2F%ED%86%A0&token=second&empty=".utf8), requestID: "test", peer: "127.0.0.1")
        XCTAssertEqual(try request.form(), ["token": "a b+c&", "next": "/토", "empty": ""])
        let broken = Request(
            method: "POST", path: "/", headers: ["content-type": "application/x-www-form-urlencoded"], body: Array("token=%ZZ".utf8),
            requestID: "test", peer: "127.0.0.1")
        XCTAssertThrowsError(try broken.form()) { XCTAssertEqual(($0 as? HTTPError)?.status, 400) }
    }
}
