import Guidance
import HTTP

extension HTTPError {
    /// 401 with a Bearer challenge, or 403.
    public init(_ denial: AccessDenial) {
        switch denial {
        case .unauthenticated(let detail):
            self.init(status: 401, detail: detail, headers: [("WWW-Authenticate", "Bearer")])
        case .forbidden(let detail):
            self.init(status: 403, detail: detail)
        }
    }

    /// 403 for a school that is not the teacher's (see `AccessDenial.otherSchool`).
    public static func otherSchool(_ teacher: Teacher) -> HTTPError { HTTPError(AccessDenial.otherSchool(teacher)) }
}

extension Caller {
    /// The school the route's `{schoolId}` names; 404 when the roster has
    /// none (asked only once the caller may ask about that school).
    public func school(of request: Request) throws(HTTPError) -> School {
        let id = request.parameter("schoolId")
        guard let school = roster.school(id) else { throw HTTPError.notFound("unknown school '\(id)'") }
        return school
    }
}
