import Common
import Guidance
import HTTP
import ServiceSupport

/// Signing in to a service's page: a `토큰` form whose token becomes the
/// session cookie, and signing out. The API keeps taking bearer tokens.
public struct SignIn: Sendable {
    /// The page's name, e.g. `교문 지도`.
    public let title: String
    /// The roles the page serves; another teacher's token is refused.
    public let roles: Set<Teacher.Role>
    public let cookie: SessionCookie
    let logger: Logger

    public init(title: String, roles: Set<Teacher.Role>, cookie: SessionCookie, logger: Logger) {
        self.title = title
        self.roles = roles
        self.cookie = cookie
        self.logger = logger
    }

    /// `/session` (sign in), `/session/end` (sign out), and the assets the
    /// page loads: the shared ones and `script`, the page's own.
    public func routes(into router: inout GuardedRouter, script: Asset) {
        Asset.routes([script], into: &router)
        router.post("/session", .open, signIn)
        router.post("/session/end", .open) { _, _ in
            Response(status: 303, headers: [("Location", "/"), ("Set-Cookie", cookie.clear), ("Cache-Control", "no-store")])
        }
    }

    /// Renders the page for a signed-in teacher the page serves; anyone else
    /// gets the sign-in form, which brings them back to `next` afterwards.
    public func page(_ request: Request, _ caller: Caller, next: String, render: (Teacher) throws -> Response) rethrows -> Response {
        guard caller.roster.authenticationEnabled else {
            let main = """
                <main class="narrow"><h1>\(HTML.escape(title))</h1>
                <p class="error" role="alert">인증이 꺼져 있어(로스터에 tokens.csv 없음) 웹 페이지를 열 수 없습니다. 관리자는 guidance-admin token issue로 토큰을 만드세요.</p></main>
                """
            return Page.response(title: title, main: main, status: 503)
        }
        guard let teacher = caller.teacher else {
            let stale = cookie.token(in: request) != nil
            return form(error: stale ? "로그인이 만료되었습니다. 토큰을 다시 입력하세요." : nil, next: next, status: 200, signOut: stale)
        }
        guard roles.contains(teacher.role) else {
            return form(error: "이 페이지는 \(rolesText)만 쓸 수 있습니다. 다른 토큰으로 로그인하세요.", next: next, status: 403, signOut: true)
        }
        return try render(teacher)
    }

    @Sendable func signIn(_ request: Request, _ caller: Caller) async throws -> Response {
        let fields = try request.form()
        let next = SignIn.localPath(fields["next"])
        let token = (fields["token"] ?? "").trimmingWhitespace()
        guard !token.isEmpty else { return form(error: "토큰을 입력하세요.", next: next, status: 400) }
        guard let teacher = caller.roster.teacher(forToken: token) else {
            logger.info("sign-in refused: unknown token", ["requestId": request.requestID])
            return form(error: "토큰이 올바르지 않습니다.", next: next, status: 401)
        }
        guard roles.contains(teacher.role) else {
            return form(error: "이 페이지는 \(rolesText)만 쓸 수 있습니다.", next: next, status: 403)
        }
        logger.info("signed in", ["requestId": request.requestID, "teacher": teacher.id])
        return Response(status: 303, headers: [("Location", next), ("Set-Cookie", cookie.set(token)), ("Cache-Control", "no-store")])
    }

    /// The sign-in form, with `error` shown under the field.
    func form(error: String?, next: String, status: Int, signOut: Bool = false) -> Response {
        let main = """
            <main class="narrow">
            <h1>\(HTML.escape(title))</h1>
            <form method="post" action="/session" class="card">
            <input type="hidden" name="next" value="\(HTML.escape(next))">
            <label for="token">토큰</label>
            <input id="token" name="token" type="password" autocomplete="current-password" required aria-describedby="token-error"\(error == nil ? "" : " aria-invalid=\"true\"")>
            <p id="token-error" class="error" role="alert">\(HTML.escape(error ?? ""))</p>
            <button type="submit">로그인</button>
            </form>
            </main>
            """
        return Page.response(title: title, main: main, status: status, headers: signOut ? [("Set-Cookie", cookie.clear)] : [])
    }

    private var rolesText: String {
        let names: [(Teacher.Role, String)] = [(.gate, "교문 지도 교사"), (.homeroom, "담임 교사"), (.volunteerDuty, "봉사 지도 교사"), (.admin, "관리자")]
        return names.filter { roles.contains($0.0) }.map(\.1).joined(separator: "·")
    }

    /// Where to go after signing in: a path on this site, never another
    /// site (`//evil.example`, `/\evil.example`) — else the start page.
    static func localPath(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.contains("\\"),
              next.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f })
        else { return "/" }
        return next
    }
}
