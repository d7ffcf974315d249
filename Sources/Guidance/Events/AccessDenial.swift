import Common

/// Why a request may not proceed: no valid token (401), or a teacher acting
/// outside their school or role (403).
package enum AccessDenial: Error, Sendable, Equatable {
    case unauthenticated(String)
    case forbidden(String)

    /// The one answer for a school that is not the teacher's, whether it
    /// exists or not, so school ids cannot be probed.
    package static func otherSchool(_ teacher: Teacher) -> AccessDenial {
        .forbidden("teacher \(teacher.id) belongs to another school")
    }
}
