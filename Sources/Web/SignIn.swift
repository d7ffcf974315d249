import Access
import Common
import Foundation
import Guidance
import HTTP
import Sessions
import Wiring

/// Signing in to a service's page and out of it. Three ways in, each ending
/// in a session cookie (`Sessions`), never a token: an e-mailed link (to
/// the address the roster has), a device code shown on another signed-in
/// device, and a token for operators and tests. `/session/devices` makes
/// codes and signs devices out. The API keeps taking bearer tokens.
package struct SignIn: Sendable {
    /// Where sign-in e-mails are sent (an SMTP exchange blocks): two
    /// threads, so that a slow mail server holds these and nothing else.
    static let mailing = BlockingExecutor("sign-in mail", threads: 2)
    /// The page's name, e.g. `교문 지도`.
    package let title: String
    /// The roles the page serves; anyone else is refused.
    package let roles: Set<Teacher.Role>
    let policy: AccessPolicy
    /// How sign-in links are mailed, and where they point; the link form is
    /// offered only with both.
    let mail: MailSettings?
    let publicURL: String?
    /// Where the links' e-mails are sent from, after the answer; shutdown waits for them.
    let errands: Errands
    let logger: Logger
    /// Links mailed per mailbox on this replica: at most 3 within a link's
    /// life (15 minutes). Past it a request sends nothing and is answered
    /// the same: the links already in the mailbox still work, so nobody can
    /// flood a teacher's inbox, nor lock the teacher out of asking.
    let mailboxes: AttemptLimiter

    package init(
        title: String, roles: Set<Teacher.Role>, policy: AccessPolicy, mail: MailSettings?, publicURL: String?, errands: Errands,
        logger: Logger
    ) {
        self.title = title
        self.roles = roles
        self.policy = policy
        mailboxes = AttemptLimiter(limit: 3, window: .seconds(900), clock: policy.sessions.log.clock)
        self.mail = mail
        self.publicURL = publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.errands = errands
        self.logger = logger
    }

    var cookie: SessionCookie { policy.cookie }
    var sessions: Sessions { policy.sessions }
    var linksEnabled: Bool { mail != nil && publicURL != nil }

    /// The sign-in and session routes, and the assets the page loads: the
    /// shared ones and `scripts`, the page's own.
    package func routes(into router: inout GuardedRouter, scripts: [Asset]) {
        Asset.routes(scripts, into: &router)
        router.post("/session", .open, signInWithToken)
        router.post("/session/code", .open, signInWithCode)
        router.post("/session/link", .open, sendLink)
        router.get("/session/link", .open, showLink)
        router.post("/session/link/use", .open, useLink)
        router.post("/session/end", .open, signOut)
        router.get("/session/devices", .open, devices)
        router.post("/session/devices/code", .open, makeCode)
        router.post("/session/devices/end-others", .open, signOutOthers)
        router.post("/session/devices/revoke", .open, revoke)
    }

    /// Renders the page for a signed-in teacher the page serves; anyone else
    /// gets the sign-in form, which brings them back to `next` afterwards.
    package func page(_ request: Request, _ caller: Caller, next: String, render: (Teacher) throws -> Response) rethrows -> Response {
        guard caller.roster.authenticationEnabled else {
            let main = """
                <main class="narrow"><h1>\(HTML.escape(title))</h1>
                <p class="error" role="alert">인증이 꺼져 있어(로스터에 tokens.csv 없음) 웹 페이지를 열 수 없습니다. 관리자는 guidance-admin token issue로 접속 키(토큰)를 만드세요.</p></main>
                """
            return Page.response(title: title, main: main, status: 503)
        }
        guard let teacher = caller.teacher else {
            return form(next: next, status: 200, notice: caller.staleCookie ? "로그인이 만료되었습니다. 다시 로그인하세요." : nil, signOut: caller.staleCookie)
        }
        guard teacher.hasAny(of: roles) else {
            return form(next: next, status: 403, notice: "이 페이지는 \(rolesText)만 쓸 수 있습니다. 다른 계정으로 로그인하세요.", signOut: true)
        }
        return try render(teacher)
    }

    // MARK: - Ways in

    @Sendable func signInWithToken(_ request: Request, _ caller: Caller) async throws -> Response {
        let fields = try request.form()
        let next = SignIn.localPath(fields["next"])
        let token = (fields["token"] ?? "").trimmingWhitespace()
        guard !token.isEmpty else { return form(next: next, status: 400, errors: [.token: "접속 키를 입력하세요."]) }
        // A right key signs in whatever its address's count (the school's
        // NAT carries a guesser's failures too); a wrong one past it is 429.
        guard let teacher = caller.roster.teacher(forToken: token) else {
            if let refusal = policy.attempts.refusal([.address(caller.client)]) { return tooMany(refusal, next: next) }
            policy.failed("token", request, client: caller.client)
            return form(next: next, status: 401, errors: [.token: "접속 키가 올바르지 않습니다."])
        }
        return signedIn(
            sessions.new(teacher: teacher.id, credential: "token:" + Roster.fingerprint(token: token)), teacher, request, next: next)
    }

    @Sendable func signInWithCode(_ request: Request, _ caller: Caller) async throws -> Response {
        let fields = try request.form()
        let next = SignIn.localPath(fields["next"])
        // Counted before the look-up, which may wait 2 s for a code shown on
        // another replica: attempts sent together are refused past the limit.
        // Past it, a code this replica already holds still signs in (a
        // guesser behind the school's address does not lock the school out);
        // anything else is 429 at once, without the wait.
        let keys = AccessPolicy.attemptKeys(client: caller.client)
        let limited = policy.attempts.attempt(keys)
        switch try await sessions.useCode(fields["code"] ?? "", roster: caller.roster, waiting: limited == nil) {
        case .success(let session):
            guard let teacher = caller.roster.teachers[session.teacherID] else {
                return form(next: next, status: 401, errors: [.code: "코드가 올바르지 않습니다."])
            }
            if limited == nil { policy.attempts.succeeded(keys) }
            return signedIn(session, teacher, request, next: next)
        case .failure(let refusal):
            if let limited { return tooMany(limited, next: next) }
            policy.failed("device code", request, client: caller.client, counted: true)
            let message =
                switch refusal {
                case .invalid: "코드가 올바르지 않습니다. 연결할 기기에 보이는 8자리 코드를 입력하세요."
                case .expired: "코드의 10분이 지났습니다. 새 코드를 만드세요."
                case .used: "이미 쓴 코드입니다. 새 코드를 만드세요."
                case .revoked: "이 코드를 만든 뒤 모든 기기에서 로그아웃되어 쓸 수 없습니다. 새 코드를 만드세요."
                }
            return form(next: next, status: 401, errors: [.code: message])
        }
    }

    /// Mails a link to every teacher of this page the address belongs to.
    /// The answer, and its timing, are the same whether it belongs to
    /// anyone: the mail goes out after the answer.
    @Sendable func sendLink(_ request: Request, _ caller: Caller) async throws -> Response {
        let fields = try request.form()
        let next = SignIn.localPath(fields["next"])
        guard let mail, let publicURL else {
            return form(next: next, status: 503, errors: [.email: "이 서비스는 메일 로그인이 설정되지 않았습니다(SMTP_URL, 공개 주소). 접속 키로 로그인하세요."])
        }
        let address = (fields["email"] ?? "").trimmingWhitespace()
        guard MailAddress.isAddress(address) else {
            return form(next: next, status: 400, errors: [.email: "이메일 주소를 입력하세요(예: kim@school.example)."])
        }
        // Requests are counted against the address on a count of their own,
        // not with its failed sign-ins (a guesser behind the school's NAT
        // must not take the link from its teachers), so nobody floods the
        // service; a mailbox gets at most `mailboxes.limit` links in a
        // link's life, past which nothing is sent (its links still work).
        if let refusal = policy.attempts.attempt([.linkRequests(caller.client)]) { return tooMany(refusal, next: next) }
        // The same work for a known and an unknown address before the answer:
        // the roster is looked up, the links made and sent, and the request
        // logged by an errand afterwards.
        let (requestID, client, roster) = (request.requestID, caller.client, caller.roster)
        errands.run("sign-in link") { [self] in
            let teachers = roster.teachers(withEmail: address).filter { $0.hasAny(of: roles) }
            let sending = teachers.filter { mailboxes.attempt([.mailbox($0.email.lowercased())]) == nil }
            logger.info(
                "sign-in link requested",
                [
                    "requestId": requestID, "client": client, "teachers": teachers.map(\.id).joined(separator: ","),
                    "sent": String(sending.count)
                ])
            for teacher in sending {
                let message = linkMail(
                    to: teacher, link: "\(publicURL)/session/link?t=\(sessions.linkToken(for: teacher))", from: mail.from)
                // An SMTP exchange blocks: on the sign-in mail's own threads.
                let result = try? await SignIn.mailing.run {
                    mail.sendOne(to: teacher.email, message: message, name: "sign-in-\(teacher.id)-\(RandomID.uuid())")
                }
                if result != .accepted {
                    logger.warning(
                        "sign-in link not sent",
                        ["requestId": requestID, "teacher": teacher.id, "result": result.map { "\($0)" } ?? "failed"])
                }
            }
        }
        let main = """
            <main class="narrow"><h1>\(HTML.escape(title))</h1>
            <div class="card" role="status"><p>\(HTML.escape(address)) 주소가 등록되어 있으면 로그인 링크를 보냈습니다.</p>
            <p>메일의 링크는 15분 동안 한 번 쓸 수 있습니다. 15분 안에 세 번 넘게 요청하면 새 메일은 가지 않으니 먼저 받은 링크를 쓰세요. 메일이 오지 않으면 주소를 확인하거나 관리자에게 물어보세요.</p></div>
            <p><a href="/">로그인 화면으로</a></p></main>
            """
        return Page.response(title: title, main: main)
    }

    /// The link from the e-mail shows a button, and only the button signs
    /// in: mail scanners that open links do not use them up.
    @Sendable func showLink(_ request: Request, _ caller: Caller) async throws -> Response {
        let token = request.query["t"] ?? ""
        if case .failure(let refusal) = sessions.linkTeacher(token) { return linkProblem(refusal) }
        let main = """
            <main class="narrow"><h1>\(HTML.escape(title))</h1>
            <form method="post" action="/session/link/use" class="card">
            <input type="hidden" name="t" value="\(HTML.escape(token))">
            <p>이 기기에서 로그인합니다.</p>
            <button type="submit">로그인</button>
            </form></main>
            """
        return Page.response(title: title, main: main)
    }

    /// A genuine link signs in whatever the counts (it cannot be guessed).
    /// A failure counts against the address, and against the teacher it
    /// names only when it was not theirs to use: a link used, expired or
    /// voided by a sign-out is genuine, and replaying it is nobody's guess.
    @Sendable func useLink(_ request: Request, _ caller: Caller) async throws -> Response {
        let token = try request.form()["t"] ?? ""
        let named = try? sessions.linkTeacher(token).get()
        switch try await sessions.useLink(token, roster: caller.roster) {
        case .success(let session):
            guard let teacher = caller.roster.teachers[session.teacherID] else { return linkProblem(.invalid) }
            return signedIn(session, teacher, request, next: "/")
        case .failure(let refusal):
            let teacher = refusal == .invalid ? named : nil
            if let limit = policy.attempts.refusal(AccessPolicy.attemptKeys(client: caller.client, teacher: teacher)) {
                return tooMany(limit, next: "/")
            }
            policy.failed("sign-in link", request, client: caller.client, teacher: teacher)
            return linkProblem(refusal)
        }
    }

    // MARK: - Signed in, out, and other devices

    @Sendable func signOut(_ request: Request, _ caller: Caller) async throws -> Response {
        if let session = caller.session {
            do {
                try await sessions.end(session)
            } catch {
                logger.warning("sign-out not recorded", ["requestId": request.requestID, "error": "\(error)"])
                return message("로그아웃하지 못했습니다. 잠시 뒤에 다시 누르세요.", status: 503)
            }
            logger.info("signed out", ["requestId": request.requestID, "teacher": session.teacherID])
        }
        return Response(
            status: 303,
            headers: [("Location", "/"), ("Set-Cookie", cookie.clear), ("Cache-Control", "no-store"), ("Clear-Site-Data", "\"cache\"")])
    }

    /// The signed-in teacher's devices: a code to pair another one, signing
    /// out all others, and for an admin, signing out any teacher of the school.
    @Sendable func devices(_ request: Request, _ caller: Caller) async throws -> Response {
        guard let teacher = caller.teacher, caller.session != nil else { return form(next: "/session/devices", status: 200, notice: nil) }
        let done: String? =
            switch request.query["done"] {
            case "others": "다른 기기를 모두 로그아웃했습니다."
            // Naming the teacher, from the roster (the id alone in the address).
            case "revoked":
                caller.roster.teachers[request.query["teacher"] ?? ""].flatMap { $0.schoolID == teacher.schoolID ? $0 : nil }
                    .map { "\($0.name) 교사(\(Page.roleName($0)))를 모든 기기에서 강제 로그아웃했습니다." }
                    ?? "선택한 교사를 모든 기기에서 강제 로그아웃했습니다."
            default: nil
            }
        return devicesPage(teacher, caller.roster, notice: done)
    }

    @Sendable func makeCode(_ request: Request, _ caller: Caller) async throws -> Response {
        guard let teacher = caller.teacher, let session = caller.session else {
            return form(next: "/session/devices", status: 401, notice: nil)
        }
        let code: String
        do {
            code = try await sessions.issueCode(for: session)
        } catch {
            logger.warning("device code not issued", ["requestId": request.requestID, "error": "\(error)"])
            return message("코드를 만들지 못했습니다. 잠시 뒤에 다시 누르세요.", status: 503)
        }
        logger.info("device code issued", ["requestId": request.requestID, "teacher": teacher.id])
        let main = """
            <main class="narrow"><h1>기기 연결</h1>
            <div class="card"><p>연결할 기기에서 로그인 화면(교문 지도 또는 지도 알림함)을 열고 <b>기기 연결 코드</b>에 입력하세요. 10분 동안 한 번 쓸 수 있습니다.</p>
            <p class="code" id="device-code" aria-label="기기 연결 코드 \(code.map { String($0) }.joined(separator: " "))">\(code)</p></div>
            <p><a href="/session/devices">돌아가기</a></p></main>
            """
        return Page.response(title: "기기 연결", main: main)
    }

    @Sendable func signOutOthers(_ request: Request, _ caller: Caller) async throws -> Response {
        guard let session = caller.session else { return form(next: "/session/devices", status: 401, notice: nil) }
        let kept: Session?
        do {
            kept = try await sessions.signOutEverywhere(teacher: session.teacherID, keeping: session)
        } catch {
            return message("다른 기기를 로그아웃하지 못했습니다. 잠시 뒤에 다시 누르세요.", status: 503)
        }
        logger.info("signed out on every other device", ["requestId": request.requestID, "teacher": session.teacherID])
        return Response(
            status: 303,
            headers: [
                ("Location", "/session/devices?done=others"), ("Cache-Control", "no-store"),
                ("Set-Cookie", cookie.set(sessions.cookieValue(kept ?? session, name: cookie.name), maxAge: sessions.maxAge))
            ])
    }

    @Sendable func revoke(_ request: Request, _ caller: Caller) async throws -> Response {
        guard let admin = caller.teacher, caller.session != nil else { return form(next: "/session/devices", status: 401, notice: nil) }
        guard admin.has(.admin) else { return message("학생부장(관리자 역할)만 다른 교사를 강제 로그아웃할 수 있습니다.", status: 403) }
        let fields = try request.form()
        let id = fields["teacher"] ?? ""
        guard !id.isEmpty else { return message("강제 로그아웃할 교사를 고르세요.", status: 400) }
        guard let target = caller.roster.teachers[id], target.schoolID == admin.schoolID else {
            return message("이 학교의 교사가 아닙니다.", status: 403)
        }
        // Asked once, naming the teacher: signing someone out of every device is not undone.
        guard fields["confirm"] == "yes" else {
            let main = """
                <main class="narrow"><h1>교사 강제 로그아웃</h1>
                <form method="post" action="/session/devices/revoke" class="card">
                <input type="hidden" name="teacher" value="\(HTML.escape(target.id))"><input type="hidden" name="confirm" value="yes">
                <p>\(HTML.escape(target.name)) 교사(\(HTML.escape(Page.roleName(target))))를 모든 기기에서 로그아웃할까요? 그 교사는 다시 로그인해야 합니다.</p>
                <button type="submit">강제 로그아웃</button>
                </form>
                <p><a href="/session/devices">취소</a></p></main>
                """
            return Page.response(title: "교사 강제 로그아웃", main: main)
        }
        do {
            _ = try await sessions.signOutEverywhere(teacher: target.id)
        } catch {
            return message("강제 로그아웃하지 못했습니다. 잠시 뒤에 다시 누르세요.", status: 503)
        }
        logger.info("teacher signed out everywhere by an admin", ["requestId": request.requestID, "teacher": target.id, "admin": admin.id])
        return Response(
            status: 303,
            headers: [("Location", "/session/devices?done=revoked&teacher=" + target.id.percentEncoded), ("Cache-Control", "no-store")])
    }

    // MARK: - Pages

    private func signedIn(_ session: Session, _ teacher: Teacher, _ request: Request, next: String) -> Response {
        guard teacher.hasAny(of: roles) else {
            return form(next: next, status: 403, notice: "이 페이지는 \(rolesText)만 쓸 수 있습니다.")
        }
        logger.info(
            "signed in",
            ["requestId": request.requestID, "teacher": teacher.id, "credential": String(session.credential.prefix { $0 != ":" })])
        return Response(
            status: 303,
            headers: [
                ("Location", next), ("Cache-Control", "no-store"),
                ("Set-Cookie", cookie.set(sessions.cookieValue(session, name: cookie.name), maxAge: sessions.maxAge))
            ])
    }

    enum Field: Hashable { case email, code, token }

    /// The sign-in page: a link by e-mail (when set up), a device code, and
    /// (folded) a token; `errors` under their fields, `notice` on top.
    func form(
        next: String, status: Int, notice: String? = nil, errors: [Field: String] = [:], signOut: Bool = false,
        headers: [(String, String)] = []
    ) -> Response {
        func field(_ field: Field, _ id: String, label: String, input: String) -> String {
            let error = errors[field]
            return """
                <label for="\(id)">\(label)</label>
                <input id="\(id)" \(input) required aria-describedby="\(id)-error"\(error == nil ? "" : " aria-invalid=\"true\"")>
                <p id="\(id)-error" class="error" role="alert">\(HTML.escape(error ?? ""))</p>
                """
        }
        let hidden = "<input type=\"hidden\" name=\"next\" value=\"\(HTML.escape(next))\">"
        let link =
            linksEnabled
            ? """
            <form method="post" action="/session/link" class="card">\(hidden)
            <h2>로그인 링크</h2>
            \(field(.email, "email", label: "학교 이메일", input: "name=\"email\" type=\"email\" autocomplete=\"email\" inputmode=\"email\""))
            <button type="submit">로그인 링크 받기</button>
            </form>
            """ : ""
        let main = """
            <main class="narrow">
            <h1>\(HTML.escape(title))</h1>
            \(notice.map { "<p class=\"notice\" role=\"status\">\(HTML.escape($0))</p>" } ?? "")
            \(link)
            <form method="post" action="/session/code" class="card">\(hidden)
            <h2>기기 연결</h2>
            \(field(.code, "code", label: "기기 연결 코드", input: "name=\"code\" type=\"text\" autocomplete=\"one-time-code\" autocapitalize=\"characters\" spellcheck=\"false\" maxlength=\"12\""))
            <button type="submit">코드로 로그인</button>
            </form>
            <details class="card"\(errors[.token] == nil ? "" : " open")><summary>접속 키로 로그인</summary>
            <form method="post" action="/session">\(hidden)
            \(field(.token, "token", label: "접속 키", input: "name=\"token\" type=\"password\" autocomplete=\"current-password\""))
            <button type="submit">로그인</button>
            </form></details>
            </main>
            """
        // Whoever was signed in on this browser before: nothing of theirs stays
        // (`signin.js` empties what the app kept; photos are `no-cache`, so
        // the browser's cache shows none without the server).
        return Page.response(
            title: title, main: main, scripts: ["signin.js"], status: status,
            headers: headers + (signOut ? [("Set-Cookie", cookie.clear)] : []))
    }

    private func devicesPage(_ teacher: Teacher, _ roster: Roster, notice: String?) -> Response {
        var main = """
            <main class="narrow"><h1>기기 연결 · 로그아웃</h1>
            \(notice.map { "<p class=\"notice\" role=\"status\">\(HTML.escape($0))</p>" } ?? "")
            <form method="post" action="/session/devices/code" class="card"><h2>다른 기기 연결</h2>
            <p>코드를 만들어 다른 기기(교문 휴대폰 등)의 로그인 화면에 입력하면, 그 기기가 이 계정으로 로그인됩니다.</p>
            <button type="submit">연결 코드 만들기</button></form>
            <form method="post" action="/session/devices/end-others" class="card"><h2>다른 기기 모두 로그아웃</h2>
            <p>이 기기를 뺀 모든 기기에서 로그아웃합니다.</p>
            <button type="submit" class="secondary">다른 기기 모두 로그아웃</button></form>
            """
        if teacher.has(.admin) {
            // Nobody chosen until the admin chooses (the admin's own devices are the card above).
            let options = roster.teachers.values.filter { $0.schoolID == teacher.schoolID && $0.id != teacher.id }.sorted { $0.id < $1.id }
                .map { "<option value=\"\(HTML.escape($0.id))\">\(HTML.escape($0.name)) · \(HTML.escape(Page.roleName($0)))</option>" }
                .joined()
            main += """
                <form method="post" action="/session/devices/revoke" class="card"><h2>교사 강제 로그아웃</h2>
                <label for="revoke-teacher">교사</label>
                <select id="revoke-teacher" name="teacher" required><option value="" selected disabled>교사를 고르세요</option>\(options)</select>
                <button type="submit" class="secondary">모든 기기에서 로그아웃</button></form>
                """
        }
        main += "<p><a href=\"/\">처음 화면으로 돌아가기</a></p></main>"
        return Page.response(title: "기기 연결 · 로그아웃", main: main)
    }

    private func linkProblem(_ refusal: GrantRefusal) -> Response {
        switch refusal {
        case .invalid: message("로그인 링크가 올바르지 않습니다. 로그인 화면에서 새 링크를 받으세요.", status: 400)
        case .expired: message("로그인 링크의 15분이 지났습니다. 로그인 화면에서 새 링크를 받으세요.", status: 410)
        case .used: message("이미 쓴 로그인 링크입니다. 로그인 화면에서 새 링크를 받으세요.", status: 410)
        case .revoked: message("이 링크를 받은 뒤 모든 기기에서 로그아웃되어 쓸 수 없습니다. 로그인 화면에서 새 링크를 받으세요.", status: 410)
        }
    }

    private func tooMany(_ refusal: HTTPError, next: String) -> Response {
        let seconds = refusal.headers.first { $0.0 == "Retry-After" }?.1 ?? "600"
        return form(next: next, status: 429, notice: "로그인 시도가 너무 많습니다. \(seconds)초 뒤에 다시 하세요.", headers: [("Retry-After", seconds)])
    }

    private func message(_ text: String, status: Int) -> Response {
        let main = """
            <main class="narrow"><h1>\(HTML.escape(title))</h1>
            <p class="error" role="alert">\(HTML.escape(text))</p>
            <p><a href="/">로그인 화면으로</a></p></main>
            """
        return Page.response(title: title, main: main, status: status)
    }

    /// The sign-in e-mail: plain text, the link on a line of its own.
    private func linkMail(to teacher: Teacher, link: String, from: MailAddress) -> [UInt8] {
        let text = """
            \(teacher.name) 선생님,

            아래 링크를 열고 [로그인]을 누르면 \(title)에 로그인됩니다.
            링크는 15분 동안 한 번 쓸 수 있습니다.

            \(link)

            요청하지 않았다면 이 메일을 지우세요. 링크를 쓰지 않으면 아무 일도 일어나지 않습니다.
            """
        let headers = [
            "From: \(MailHeader.address(from))",
            "To: \(MailHeader.address(MailAddress(name: teacher.name, address: teacher.email)))",
            "Subject: \(MailHeader.encode("[\(title)] 로그인 링크"))",
            "Date: \(MailHeader.date(sessions.log.clock()))",
            "Message-ID: <\(RandomID.uuid())@\(from.domain)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: base64"
        ]
        return Array(
            (headers.joined(separator: "\r\n") + "\r\n\r\n" + MailHeader.base64(text: text) + "\r\n")
                .utf8)
    }

    private var rolesText: String {
        let names: [(Teacher.Role, String)] = [(.gate, "교문 지도 교사"), (.homeroom, "담임 교사"), (.volunteerDuty, "봉사 담당 교사"), (.admin, "관리자")]
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
