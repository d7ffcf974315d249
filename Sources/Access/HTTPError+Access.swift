import Common
import Guidance
import HTTP

extension HTTPError {
    /// 401 with a Bearer challenge, or 403.
    package init(_ denial: AccessDenial) {
        switch denial {
        case .unauthenticated(let detail):
            self.init(status: 401, detail: detail, headers: [("WWW-Authenticate", "Bearer")])
        case .forbidden(let detail):
            self.init(status: 403, detail: detail)
        }
    }

    /// 403 for a school that is not the teacher's (see `AccessDenial.otherSchool`).
    package static func otherSchool(_ teacher: Teacher) -> HTTPError { HTTPError(AccessDenial.otherSchool(teacher)) }
}

extension Caller {
    /// The school the route's `{schoolId}` names; 404 when the roster has
    /// none (asked only once the caller may ask about that school).
    package func school(of request: Request) throws(HTTPError) -> School {
        let id = request.parameter("schoolId")
        guard let school = roster.school(id) else { throw HTTPError.notFound("unknown school '\(id)'") }
        return school
    }

    /// The teacher an event names as who made it (`field` of the body):
    /// signed in, the caller, whom the body may name or leave out; without
    /// authentication, the one the body names (422 when none). Signed in,
    /// naming anyone else is a 422: the event would leave no trace of who
    /// made it (an admin recording for a gate teacher, say).
    package func author(named: String?, field: String) throws(HTTPError) -> String {
        guard let author = named ?? teacher?.id else { throw HTTPError(FieldError(field: field, message: "is required"), status: 422) }
        if let teacher, teacher.id != author {
            throw HTTPError(FieldError(field: field, message: "must be the signed-in teacher \(teacher.id) (or left out)"), status: 422)
        }
        return author
    }

    /// The school and grade a route that writes an event names
    /// (`{schoolId}`, `{grade}`): 400 for a grade that is not a seat number,
    /// 422 for a school or grade the roster does not have (the event would
    /// be dead-lettered).
    package func grade(of request: Request) throws(HTTPError) -> (school: String, grade: Int) {
        let schoolID = request.parameter("schoolId")
        let grade = try request.integerParameter("grade", in: Student.seatRange)
        guard roster.school(schoolID) != nil else {
            throw HTTPError(FieldError(field: "schoolId", message: "unknown school '\(schoolID)'"), status: 422)
        }
        guard roster.hasGrade(grade, in: schoolID) else {
            throw HTTPError(FieldError(field: "grade", message: "school '\(schoolID)' has no grade \(grade)"), status: 422)
        }
        return (schoolID, grade)
    }
}
