import Common
import Crypto
import Guidance
import HTTP
import ServiceSupport
import Web
import XCTest

/// The access policy and the sign-in routes, through the router as the
/// server runs them, without sockets: which credential passes, which Origin
/// a cookie-signed change may come from, what the session cookie says.
final class AccessPolicyTests: XCTestCase {
    private func roster() throws -> Roster {
        let schools = "school_id,name,timezone,digest_time\nsa,<b>School A</b>,Asia/Seoul,08:50\nsb,School B,Asia/Seoul,08:50\n"
        let teachers = "school_id,teacher_id,name,email,role,grade,class\n"
            + "sa,g1,<script>alert(1)</script>,g1@a.example,gate,,\nsa,t1,Kim,t1@a.example,homeroom,1,2\nsb,g2,Park,g2@b.example,gate,,\n"
        let tokens = "token_sha256,teacher_id\n" + [("gate-a", "g1"), ("hr-a", "t1"), ("gate-b", "g2")]
            .map { "\(SHA256.hex(SHA256.hash(Array($0.0.utf8)))),\($0.1)\n" }.joined()
        return try Roster.parse(
            schools: schools, students: "school_id,student_id,grade,class,number,name,photo_url\n", teachers: teachers, tokens: tokens)
    }

    /// A router with one guarded route per access kind and the sign-in routes of a gate page.
    private func router(publicURL: String? = nil) throws -> Router {
        let cookie = SessionCookie(name: "gate_session", publicURL: publicURL)
        var routes = GuardedRouter(router: Router(), policy: AccessPolicy(rosters: LiveRoster(try roster()), cookie: cookie, publicURL: publicURL))
        routes.post("/v1/schools/{schoolId}/things", .school(roles: [.gate])) { _, caller in .text(caller.teacher?.id ?? "-") }
        routes.get("/v1/me", .teacher) { _, caller in .text(caller.teacher?.id ?? "-") }
        let signIn = SignIn(title: "교문 지도", roles: [.gate], cookie: cookie, logger: Logger(component: "test"))
        signIn.routes(into: &routes, script: Asset(name: "gate.js", contentType: "text/javascript", text: "'use strict';"))
        routes.get("/", .open) { request, caller in
            signIn.page(request, caller, next: "/") { teacher in
                Page.signedIn(title: "교문 지도", teacher: teacher, school: caller.roster.school(teacher.schoolID), main: "<main></main>", script: "gate.js")
            }
        }
        return routes.router
    }

    private func send(_ router: Router, _ method: String, _ path: String, headers: [String: String] = [:], body: String = "") async -> Response {
        await router.respond(to: Request(method: method, path: path, headers: headers, body: Array(body.utf8)))
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
        let me = await send(router, "GET", "/v1/me", headers: ["cookie": "theme=dark; gate_session=hr-a"])
        XCTAssertEqual(text(me), "t1", "a GET signed in by cookie needs no Origin")
        await expect(401, router, "GET", "/v1/me", headers: ["cookie": "gate_session=nope"])
    }

    func testACookieSignedChangeMustComeFromThisSite() async throws {
        let router = try router(publicURL: "https://gate.school.example/")
        let path = "/v1/schools/sa/things"
        let cookie = "gate_session=gate-a"
        let missing = await send(router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080"])
        XCTAssertEqual(missing.status, 403)
        XCTAssertTrue(text(missing).contains("Origin"))
        let foreign = await send(router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "https://evil.example"])
        XCTAssertEqual(foreign.status, 403)
        XCTAssertTrue(text(foreign).contains("another site"))
        let nullOrigin = await send(router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "null"])
        XCTAssertEqual(nullOrigin.status, 403)
        await expect(200, router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "https://gate.school.example"])
        await expect(200, router, "POST", path, headers: ["cookie": cookie, "host": "10.0.0.5:8080", "origin": "http://10.0.0.5:8080"])
        // An API client with a bearer token sends no Origin; a browser page of another site that sends one is refused anyway.
        await expect(200, router, "POST", path, headers: ["authorization": "Bearer gate-a"])
        await expect(403, router, "POST", path, headers: ["authorization": "Bearer gate-a", "origin": "https://evil.example"])
    }

    func testSignInSetsAStrictHttpOnlyCookieAndReturnsOnlyToThisSite() async throws {
        let router = try router()
        let form = ["content-type": "application/x-www-form-urlencoded", "host": "127.0.0.1:8080", "origin": "http://127.0.0.1:8080"]
        let signedIn = await send(router, "POST", "/session", headers: form, body: "token=gate-a&next=%2Fdigests%2Fd1")
        XCTAssertEqual(signedIn.status, 303)
        XCTAssertEqual(header(signedIn, "Location"), "/digests/d1")
        XCTAssertEqual(header(signedIn, "Set-Cookie"), "gate_session=gate-a; Path=/; HttpOnly; SameSite=Strict")
        for next in ["//evil.example/", "https://evil.example/", "/\\evil.example", "/ok\r\nSet-Cookie:x"] {
            let escaped = next.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let answer = await send(router, "POST", "/session", headers: form, body: "token=gate-a&next=\(escaped)")
            XCTAssertEqual(header(answer, "Location"), "/", "next=\(next)")
        }
        let wrong = await send(router, "POST", "/session", headers: form, body: "token=wrong+token&next=%2F")
        XCTAssertEqual(wrong.status, 401)
        XCTAssertTrue(text(wrong).contains("토큰이 올바르지 않습니다."))
        XCTAssertNil(header(wrong, "Set-Cookie"))
        let homeroom = await send(router, "POST", "/session", headers: form, body: "token=hr-a")
        XCTAssertEqual(homeroom.status, 403, "the gate page serves gate teachers only")
        await expect(415, router, "POST", "/session", headers: ["host": "127.0.0.1:8080", "origin": "http://127.0.0.1:8080"], body: "token=gate-a")
        let foreign = await send(router, "POST", "/session", headers: form.merging(["origin": "https://evil.example"]) { $1 }, body: "token=gate-a")
        XCTAssertEqual(foreign.status, 403, "another site cannot sign a browser in")
        let out = await send(router, "POST", "/session/end", headers: ["cookie": "gate_session=gate-a", "host": "127.0.0.1:8080", "origin": "http://127.0.0.1:8080"])
        XCTAssertEqual(out.status, 303)
        XCTAssertEqual(header(out, "Set-Cookie"), "gate_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict")
        let secure = try self.router(publicURL: "https://gate.school.example")
        let overTLS = await send(secure, "POST", "/session", headers: form.merging(["origin": "https://gate.school.example"]) { $1 }, body: "token=gate-a")
        XCTAssertEqual(header(overTLS, "Set-Cookie"), "gate_session=gate-a; Path=/; HttpOnly; SameSite=Strict; Secure")
    }

    func testPagesEscapeRosterTextAndCarryAStrictPolicy() async throws {
        let router = try router()
        let signedOut = await send(router, "GET", "/")
        XCTAssertEqual(signedOut.status, 200)
        XCTAssertTrue(text(signedOut).contains("<label for=\"token\">토큰</label>"))
        XCTAssertTrue(text(signedOut).contains("<button type=\"submit\">로그인</button>"))
        let page = await send(router, "GET", "/", headers: ["cookie": "gate_session=gate-a"])
        XCTAssertEqual(page.status, 200)
        let html = text(page)
        XCTAssertTrue(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), html)
        XCTAssertTrue(html.contains("&lt;b&gt;School A&lt;/b&gt;"))
        XCTAssertFalse(html.contains("<script>alert"))
        XCTAssertFalse(html.contains("gate-a"), "the token never appears in the page")
        XCTAssertTrue(html.contains("data-time-zone=\"Asia/Seoul\""))
        let policy = try XCTUnwrap(header(page, "Content-Security-Policy"))
        XCTAssertTrue(policy.contains("script-src 'self'") && policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"))
        XCTAssertFalse(policy.contains("unsafe-inline"))
        XCTAssertFalse(html.contains("<script>"), "no inline script")
        let revoked = await send(router, "GET", "/", headers: ["cookie": "gate_session=revoked"])
        XCTAssertTrue(text(revoked).contains("로그인이 만료되었습니다"))
        XCTAssertEqual(header(revoked, "Set-Cookie"), "gate_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict")
        let otherRole = await send(router, "GET", "/", headers: ["cookie": "gate_session=hr-a"])
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
            body: Array("token=a+b%2Bc%26&next=%2F%ED%86%A0&token=second&empty=".utf8))
        XCTAssertEqual(try request.form(), ["token": "a b+c&", "next": "/토", "empty": ""])
        let broken = Request(method: "POST", path: "/", headers: ["content-type": "application/x-www-form-urlencoded"], body: Array("token=%ZZ".utf8))
        XCTAssertThrowsError(try broken.form()) { XCTAssertEqual(($0 as? HTTPError)?.status, 400) }
    }
}
