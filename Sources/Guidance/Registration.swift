import Common

/// A registration checked against the roster: the one set of rules that
/// ingest applies to a request and the notifier to an event, so that nothing
/// the notifier stores could not have been accepted at the gate.
public struct Registration: Sendable, Equatable {
    public let school: School
    public let student: Student
    public let reason: Reason
    /// Trimmed; nil when the reason has none.
    public let detail: String?
    public let recordedBy: String
    public let occurredAt: Double

    /// How far ahead of the clock that recorded it a guidance may lie (clock
    /// skew at the gate).
    public static let futureTolerance: Double = 5 * 60
    /// How far back a guidance, or a digest run, may reach.
    public static let pastWindowDays = 400

    /// Every rule a registration breaks, each naming its field.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let problems: [FieldError]
        public var description: String { problems.map(\.description).joined(separator: "; ") }
    }

    /// Whether `occurredAt` lies in the window around `recordedAt`.
    public static func occurredAtProblem(_ occurredAt: Double, recordedAt: Double) -> String? {
        if occurredAt > recordedAt + futureTolerance { return "is more than 5 minutes in the future" }
        if occurredAt < recordedAt - Double(pastWindowDays) * 86_400 { return "is more than \(pastWindowDays) days in the past" }
        return nil
    }
}

extension Roster {
    /// The registration of the student at `grade`/`classNumber`/`number` of
    /// `schoolID`; throws every rule it breaks, each naming its field as the
    /// HTTP contract does.
    public func registration(
        school schoolID: String, grade: Int, classNumber: Int, number: Int,
        reasonCode: String, detail rawDetail: String?, recordedBy: String, occurredAt: Double, recordedAt: Double
    ) throws(Registration.Invalid) -> Registration {
        guard let school = school(schoolID) else {
            throw Registration.Invalid(problems: [FieldError(field: "schoolId", message: "unknown school '\(schoolID)'")])
        }
        var problems: [FieldError] = []
        let student = self.student(school: schoolID, grade: grade, classNumber: classNumber, number: number)
        if student == nil {
            problems.append(FieldError(field: "student", message: "no student at grade \(grade), class \(classNumber), number \(number)"))
        }
        var detail: String?
        do {
            detail = try Reason.detail(rawDetail)
        } catch {
            problems.append(FieldError(field: "reason.detail", message: error.description))
        }
        let reason = school.reason(reasonCode)
        if let reason {
            if reason.requiresDetail && detail == nil && !problems.contains(where: { $0.field == "reason.detail" }) {
                problems.append(FieldError(field: "reason.detail", message: "is required for '\(reason.code)'"))
            }
        } else {
            problems.append(FieldError(field: "reason.code", message: "unknown reason; one of \(school.reasonOrder.joined(separator: ", "))"))
        }
        if teachers[recordedBy]?.schoolID != schoolID {
            problems.append(FieldError(field: "recordedBy", message: "unknown teacher '\(recordedBy)' at this school"))
        }
        if let problem = Registration.occurredAtProblem(occurredAt, recordedAt: recordedAt) {
            problems.append(FieldError(field: "occurredAt", message: problem))
        }
        guard problems.isEmpty, let student, let reason else { throw Registration.Invalid(problems: problems) }
        return Registration(school: school, student: student, reason: reason, detail: detail, recordedBy: recordedBy, occurredAt: occurredAt)
    }
}
