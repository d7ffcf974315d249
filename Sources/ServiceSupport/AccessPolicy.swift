import Guidance
import HTTP

/// Who may call a route, declared when the route is registered on a
/// `GuardedRouter`, so a new route cannot leave it out.
public enum Access: Sendable {
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
public struct Caller: Sendable {
    public let roster: Roster
    public let teacher: Teacher?
}

public typealias GuardedHandler = @Sendable (Request, Caller) async throws -> Response

/// The one place a request's credentials are read and checked: a bearer
/// token (API clients) or the service's session cookie (its web page), and,
/// for requests that change something, the `Origin` a browser sends.
public struct AccessPolicy: Sendable {
    public let rosters: LiveRoster
    public let cookie: SessionCookie
    /// The site's public origin (`https://gate.school.example`, from
    /// `PUBLIC_…_URL`), for a proxy that changes `Host`; the origin the
    /// `Host` header names is accepted too (another site's page can set
    /// neither).
    public let origin: String?

    public init(rosters: LiveRoster, cookie: SessionCookie, publicURL: String?) {
        self.rosters = rosters
        self.cookie = cookie
        origin = publicURL.map(AccessPolicy.origin(of:))
    }

    /// The caller, or the 401/403 the request gets.
    public func admit(_ request: Request, _ access: Access) throws(HTTPError) -> Caller {
        let roster = rosters.current
        let credential = try self.credential(request)
        try checkOrigin(request, required: (credential?.fromCookie ?? false) && !["GET", "HEAD"].contains(request.method))
        do {
            switch access {
            case .open:
                let teacher = roster.authenticationEnabled ? credential.flatMap { roster.teacher(forToken: $0.token) } : nil
                return Caller(roster: roster, teacher: teacher)
            case .teacher:
                return Caller(roster: roster, teacher: try roster.authenticate(token: credential?.token))
            case .school(let roles):
                let school = request.parameter("schoolId")
                return Caller(roster: roster, teacher: try roster.authorize(token: credential?.token, school: school, roles: roles))
            }
        } catch {
            throw HTTPError(error)
        }
    }

    /// `Authorization: Bearer <token>` when the header is there (anything else
    /// in it is a 401), else the session cookie.
    private func credential(_ request: Request) throws(HTTPError) -> (token: String, fromCookie: Bool)? {
        if let authorization = request.header("authorization") {
            guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
                throw HTTPError(AccessDenial.unauthenticated("send 'Authorization: Bearer <token>'"))
            }
            return (String(authorization.dropFirst(7).trimmingWhitespace()), false)
        }
        return cookie.token(in: request).map { ($0, true) }
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
    static func origin(of url: String) -> String {
        let lowered = url.lowercased()
        guard let schemeEnd = lowered.range(of: "://") else { return lowered }
        let rest = lowered[schemeEnd.upperBound...]
        let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return String(lowered[..<schemeEnd.upperBound]) + host
    }
}

/// Routes whose access is declared as they are registered.
public struct GuardedRouter: Sendable {
    public private(set) var router: Router
    public let policy: AccessPolicy
    /// Asked before every `/v1/` route added after it is set: an error (a
    /// 503 while the service cannot serve) answers instead of the handler.
    public var unavailable: (@Sendable () -> HTTPError?)?

    public init(router: Router, policy: AccessPolicy) {
        self.router = router
        self.policy = policy
    }

    public mutating func add(_ method: String, _ pattern: String, _ access: Access, _ handler: @escaping GuardedHandler) {
        let policy = self.policy
        let unavailable = pattern.hasPrefix("/v1/") ? self.unavailable : nil
        router.add(method, pattern) { request in
            if let error = unavailable?() { throw error }
            return try await handler(request, try policy.admit(request, access))
        }
    }

    public mutating func get(_ pattern: String, _ access: Access, _ handler: @escaping GuardedHandler) { add("GET", pattern, access, handler) }
    public mutating func post(_ pattern: String, _ access: Access, _ handler: @escaping GuardedHandler) { add("POST", pattern, access, handler) }
    public mutating func delete(_ pattern: String, _ access: Access, _ handler: @escaping GuardedHandler) { add("DELETE", pattern, access, handler) }
}
