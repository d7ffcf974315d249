import Common
import Guidance
import HTTP
import Kafka
import Sessions

/// Who may call a route, declared when the route is registered on a
/// `GuardedRouter`, so a new route cannot leave it out.
package enum Access: Sendable {
    /// Anyone: pages that show the sign-in form, sign-in itself, assets. The
    /// handler still learns who is signed in, if anyone.
    case open
    /// Any teacher with a valid token; the handler narrows by what it reads.
    case teacher
    /// A teacher of the route's `{schoolId}` with one of `roles`.
    case school(roles: Set<Teacher.Role>)
}

/// What a guarded handler answers from: the roster as it was when the
/// request arrived, and the teacher behind the request — nil when
/// authentication is off, or on an open route when nobody is signed in.
package struct Caller: Sendable {
    package let roster: Roster
    package let teacher: Teacher?
    /// The browser session the request came with, if signed in by cookie.
    package var session: Session? = nil
    /// Whether the request carried this service's session cookie that no
    /// longer signs anyone in (expired, signed out).
    package var staleCookie = false
    /// The client's address (behind a trusted proxy, the one it names).
    package var client: String = ""
}

package typealias GuardedHandler = @Sendable (Request, Caller) async throws -> Response

/// The one place a request's credentials are read and checked: a bearer
/// token (API clients) or the service's session cookie (its web page), and
/// the `Origin` a browser sends. Failed credentials count against the
/// client's address (`AttemptLimiter`).
package struct AccessPolicy: Sendable {
    package let rosters: LiveRoster
    package let cookie: SessionCookie
    package let sessions: Sessions
    package let attempts: AttemptLimiter
    package let clients: ClientAddresses
    /// The site's public origin (`https://gate.school.example`, from
    /// `PUBLIC_…_URL`), for a proxy that changes `Host`; the origin the
    /// `Host` header names is accepted too (another site's page can set
    /// neither).
    package let origin: String?
    let logger: Logger

    package init(
        rosters: LiveRoster, cookie: SessionCookie, sessions: Sessions, publicURL: String?,
        attempts: AttemptLimiter, clients: ClientAddresses = ClientAddresses(), logger: Logger
    ) {
        self.rosters = rosters
        self.cookie = cookie
        self.sessions = sessions
        self.attempts = attempts
        self.clients = clients
        self.logger = logger
        origin = publicURL.map(AccessPolicy.origin(of:))
    }

    /// A service's policy: its cookie, and sessions shared with every other
    /// replica through the session log (which `start` must start).
    package static func forService(
        cookieName: String, publicURL: String?, settings: WebSettings, rosters: LiveRoster, kafka: KafkaConfig, producer: Producer,
        clock: @escaping @Sendable () -> Double, logger: Logger
    ) -> AccessPolicy {
        if settings.secret == nil {
            logger.warning(
                "SESSION_SECRET is not set: sign-ins last until this process stops and work on this replica only; set the same SESSION_SECRET on every replica of both services"
            )
        }
        let log = SessionLog(
            topic: settings.topic, kafka: kafka, producer: producer, lifetime: .seconds(settings.days * 86_400), clock: clock,
            logger: logger.with(["part": "sessions"]))
        return AccessPolicy(
            rosters: rosters, cookie: SessionCookie(name: cookieName, publicURL: publicURL),
            sessions: Sessions(secret: settings.secret, days: settings.days, log: log),
            publicURL: publicURL,
            attempts: AttemptLimiter(
                limit: settings.failedSignInLimit, addressLimit: settings.failedSignInLimitPerAddress, clock: clock),
            clients: settings.clients,
            logger: logger.with(["part": "access"]))
    }

    /// The caller, or the 401/403/429 the request gets.
    package func admit(_ request: Request, _ access: Access) async throws(HTTPError) -> Caller {
        let roster = rosters.current
        let bearer = request.header("authorization")
        let cookieValue = bearer == nil ? cookie.value(in: request) : nil
        try checkOrigin(request, required: cookieValue != nil && request.method != "GET" && request.method != "HEAD")
        // Passed on by the other service: the client it served (`Forwarding`).
        let client = request.header("forwarded-client").flatMap(sessions.forwardedClient(from:)) ?? clients.client(of: request)
        var caller = Caller(roster: roster, teacher: nil, client: client)
        guard roster.authenticationEnabled else { return caller }
        if let bearer {
            caller = Caller(roster: roster, teacher: try bearerTeacher(bearer, request, caller.client, roster), client: caller.client)
        } else if let cookieValue {
            // A view of the session log older than a second (a frozen replica
            // just thawed) could let an ended session through: wait for it.
            if !sessions.log.isCurrent { _ = await sessions.log.current(atMost: .seconds(3)) }
            switch sessions.check(cookieValue, name: cookie.name, roster: roster) {
            case .valid(let session, let teacher):
                caller = Caller(roster: roster, teacher: teacher, session: session, client: caller.client)
            case .invalid(let reason):
                logger.info("session cookie refused", ["requestId": request.requestID, "reason": reason, "client": caller.client])
                caller.staleCookie = true
            case .starting:
                throw HTTPError.unavailable(
                    "sign-in is not ready (reading the session log up to its end); retry shortly", retryAfterSeconds: 2)
            }
        }
        switch access {
        case .open:
            return caller
        case .teacher:
            guard caller.teacher != nil else {
                throw HTTPError(AccessDenial.unauthenticated(AccessPolicy.signInHint(stale: caller.staleCookie)))
            }
            return caller
        case .school(let roles):
            guard let teacher = caller.teacher else {
                throw HTTPError(AccessDenial.unauthenticated(AccessPolicy.signInHint(stale: caller.staleCookie)))
            }
            guard teacher.schoolID == request.parameter("schoolId") else { throw HTTPError.otherSchool(teacher) }
            guard teacher.hasAny(of: roles) else { throw HTTPError(status: 403, detail: "a \(teacher.roleText) teacher may not do this") }
            return caller
        }
    }

    /// The teacher an `Authorization: Bearer <token>` header names; anything
    /// else in it, or a token nobody holds, is a 401 counted as a failure
    /// (a 429 once the address is past its limit). A right token passes
    /// whatever the address's count: a guesser behind a school's NAT slows
    /// only itself, and 256-bit tokens are not found by guessing.
    private func bearerTeacher(_ header: String, _ request: Request, _ client: String, _ roster: Roster) throws(HTTPError) -> Teacher {
        // Bytes, not characters: `count` and `lowercased()` walked the whole header as Unicode.
        let scheme = header.utf8.prefix(7)
        guard header.utf8.count > 7, scheme.elementsEqual("bearer ".utf8, by: { ($0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0) == $1 }) else {
            throw HTTPError(AccessDenial.unauthenticated("send 'Authorization: Bearer <token>'"))
        }
        guard let teacher = roster.teacher(forToken: String(header.dropFirst(7).trimmingWhitespace())) else {
            if let refusal = attempts.refusal(.address(client)) { throw refusal }
            failed("bearer token", request, client: client)
            throw HTTPError(AccessDenial.unauthenticated("the token is not valid"))
        }
        return teacher
    }

    /// Counts and logs a failed sign-in: by the client's address, and by the
    /// teacher when the attempt names one. `counted`: already counted by
    /// `AttemptLimiter.attempt`, only logged.
    package func failed(_ what: String, _ request: Request, client: String, teacher: String? = nil, counted: Bool = false) {
        if !counted { attempts.fail(AccessPolicy.attemptKeys(client: client, teacher: teacher)) }
        var fields = ["requestId": request.requestID, "client": client, "credential": what]
        if let teacher { fields["teacher"] = teacher }
        logger.warning("sign-in failed", fields)
    }

    /// What an attempt from `client` naming `teacher` is counted against.
    package static func attemptKeys(client: String, teacher: String? = nil) -> [AttemptKey] {
        [.address(client)] + (teacher.map { [.teacher($0)] } ?? [])
    }

    static func signInHint(stale: Bool) -> String {
        stale ? "the session has ended; sign in again" : "send 'Authorization: Bearer <token>', or sign in on the service's page"
    }

    /// A browser names the page a request comes from in `Origin`; another
    /// site's page is refused, on every method. A request signed in by
    /// cookie that changes something must carry it (every browser sends it
    /// with POST and DELETE); API clients need not.
    private func checkOrigin(_ request: Request, required: Bool) throws(HTTPError) {
        guard let sent = request.header("origin") else {
            guard !required else {
                throw HTTPError(status: 403, detail: "a request signed in by cookie that changes something must carry an Origin header")
            }
            return
        }
        let host = request.header("host").map { ["http://\($0)", "https://\($0)"] } ?? []
        let allowed = (origin.map { [$0] } ?? []) + host.map { $0.lowercased() }
        guard allowed.contains(sent.lowercased()) else {
            throw HTTPError(status: 403, detail: "the request comes from another site (Origin \(sent)); it is refused")
        }
    }

    /// `scheme://host[:port]` of a URL, lowercased.
    package static func origin(of url: String) -> String {
        let lowered = url.lowercased()
        guard let schemeEnd = lowered.range(of: "://") else { return lowered }
        let rest = lowered[schemeEnd.upperBound...]
        let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return String(lowered[..<schemeEnd.upperBound]) + host
    }
}

/// Routes whose access is declared as they are registered.
package struct GuardedRouter: Sendable {
    package private(set) var router: Router
    package let policy: AccessPolicy
    /// Asked before every `/v1/` route added after it is set: an error (a
    /// 503 while the service cannot serve) answers instead of the handler.
    package var unavailable: (@Sendable () -> HTTPError?)?

    package init(router: Router, policy: AccessPolicy) {
        self.router = router
        self.policy = policy
    }

    package mutating func add(
        _ method: String, _ pattern: String, _ access: Access, maxBody: Int? = nil, _ handler: @escaping GuardedHandler
    ) {
        let policy = self.policy
        let unavailable = pattern.hasPrefix("/v1/") ? self.unavailable : nil
        router.add(method, pattern, maxBody: maxBody) { request in
            if let error = unavailable?() { throw error }
            let caller = try await policy.admit(request, access)
            var response = try await handler(request, caller)
            // A session in use lives on: its cookie is renewed (hourly at most).
            if let session = caller.session, let renewed = policy.sessions.renewal(of: session),
                !response.headers.contains(where: { $0.0.lowercased() == "set-cookie" })
            {
                response.headers.append(
                    (
                        "Set-Cookie",
                        policy.cookie.set(policy.sessions.cookieValue(renewed, name: policy.cookie.name), maxAge: policy.sessions.maxAge)
                    ))
            }
            return response
        }
    }

    package mutating func get(_ pattern: String, _ access: Access, _ handler: @escaping GuardedHandler) {
        add("GET", pattern, access, handler)
    }
    package mutating func post(_ pattern: String, _ access: Access, maxBody: Int? = nil, _ handler: @escaping GuardedHandler) {
        add("POST", pattern, access, maxBody: maxBody, handler)
    }
    package mutating func delete(_ pattern: String, _ access: Access, _ handler: @escaping GuardedHandler) {
        add("DELETE", pattern, access, handler)
    }
}
