import Common

/// Why a request may not proceed: no valid token (401), or a teacher acting
/// outside their school or role (403).
public enum AccessDenial: Error, Sendable, Equatable {
    case unauthenticated(String)
    case forbidden(String)

    /// The one answer for a school that is not the teacher's, whether it
    /// exists or not, so school ids cannot be probed.
    public static func otherSchool(_ teacher: Teacher) -> AccessDenial {
        .forbidden("teacher \(teacher.id) belongs to another school")
    }
}

extension Roster {
    /// The teacher `token` belongs to, or nil when authentication is off (no
    /// `tokens.csv`). `token` is nil when the request carried none.
    public func authenticate(token: String?) throws(AccessDenial) -> Teacher? {
        guard authenticationEnabled else { return nil }
        guard let token, !token.isEmpty else {
            throw .unauthenticated("send 'Authorization: Bearer <token>', or sign in on the service's page")
        }
        guard let teacher = teacher(forToken: token) else {
            throw .unauthenticated("the token is not valid")
        }
        return teacher
    }

    /// Authenticates and checks that the teacher belongs to `school` and has
    /// one of `roles`. Returns nil when authentication is off.
    @discardableResult
    public func authorize(token: String?, school: String, roles: Set<Teacher.Role>) throws(AccessDenial) -> Teacher? {
        guard let teacher = try authenticate(token: token) else { return nil }
        guard teacher.schoolID == school else { throw .otherSchool(teacher) }
        guard roles.contains(teacher.role) else {
            throw .forbidden("a \(teacher.role.rawValue) teacher may not do this")
        }
        return teacher
    }
}
