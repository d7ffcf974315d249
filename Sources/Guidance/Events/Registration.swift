import Common

/// A registration checked against the roster: the one set of rules that
/// ingest applies to a request and the notifier to an event, so that nothing
/// the notifier stores could not have been accepted at the gate.
package struct Registration: Sendable, Equatable {
    package let school: School
    package let student: Student
    package let reason: Reason
    /// Trimmed; nil when the reason has none.
    package let detail: String?
    package let recordedBy: String
    package let occurredAt: Double

    /// How far ahead of the clock that recorded it a guidance may lie (clock
    /// skew at the gate).
    package static let futureTolerance: Double = 5 * 60
    /// How far back a guidance, or a digest run, may reach.
    package static let pastWindowDays = 400

    /// Every rule a registration breaks, each naming its field.
    package struct Invalid: Error, Sendable, CustomStringConvertible {
        package let problems: [FieldError]
        /// Whether every problem is an id the roster does not list (school,
        /// student, teacher, reason code): a roster that reloads later may
        /// know them, so the notifier holds such an event for a while
        /// instead of dead-lettering it.
        package let awaitingRoster: Bool
        package var description: String { problems.map(\.description).joined(separator: "; ") }
    }

    /// Whether `occurredAt` lies in the window around `recordedAt`, reaching
    /// `pastDays` back (`Retention.windowDays`).
    package static func occurredAtProblem(_ occurredAt: Double, recordedAt: Double, pastDays: Int = pastWindowDays) -> String? {
        if occurredAt > recordedAt + futureTolerance { return "is more than 5 minutes in the future" }
        if occurredAt < recordedAt - Double(pastDays) * 86_400 { return "is more than \(pastDays) days in the past" }
        return nil
    }
}

extension Roster {
    /// The registration of the student at `grade`/`classNumber`/`number` of
    /// `schoolID`, as the gate asks for it; throws every rule it breaks,
    /// each naming its field as the HTTP contract does.
    package func registration(
        school schoolID: String, grade: Int, classNumber: Int, number: Int,
        reasonCode: String, detail: String?, recordedBy: String, occurredAt: Double, recordedAt: Double,
        pastDays: Int = Registration.pastWindowDays
    ) throws(Registration.Invalid) -> Registration {
        try registration(
            school: schoolID, student: student(school: schoolID, grade: grade, classNumber: classNumber, number: number),
            missing: "no student at grade \(grade), class \(classNumber), number \(number)",
            reasonCode: reasonCode, detail: detail, recordedBy: recordedBy, occurredAt: occurredAt, recordedAt: recordedAt,
            pastDays: pastDays)
    }

    /// The registration of an event ingest accepted: the student found by
    /// `studentID` and kept in the seat the event recorded (a student who
    /// changed class since is not an error), with the roster's name.
    package func registration(
        school schoolID: String, studentID: String, recordedSeat seat: (grade: Int, classNumber: Int, number: Int),
        reasonCode: String, detail: String?, recordedBy: String, occurredAt: Double, recordedAt: Double,
        pastDays: Int = Registration.pastWindowDays
    ) throws(Registration.Invalid) -> Registration {
        guard [seat.grade, seat.classNumber, seat.number].allSatisfy(Student.seatRange.contains) else {
            throw Registration.Invalid(
                problems: [FieldError(field: "student", message: "seat \(seat.grade)-\(seat.classNumber)-\(seat.number) is out of range")],
                awaitingRoster: false)
        }
        let student = knownStudent(school: schoolID, id: studentID).map {
            Student(
                schoolID: $0.schoolID, id: $0.id, grade: seat.grade, classNumber: seat.classNumber, number: seat.number,
                name: $0.name, photoURL: $0.photoURL)
        }
        return try registration(
            school: schoolID, student: student, missing: "no student '\(studentID)' at this school",
            reasonCode: reasonCode, detail: detail, recordedBy: recordedBy, occurredAt: occurredAt, recordedAt: recordedAt,
            pastDays: pastDays, formerTeachers: true)
    }

    private func registration(
        school schoolID: String, student: Student?, missing: @autoclosure () -> String,
        reasonCode: String, detail rawDetail: String?, recordedBy: String, occurredAt: Double, recordedAt: Double, pastDays: Int,
        formerTeachers: Bool = false
    ) throws(Registration.Invalid) -> Registration {
        guard let school = school(schoolID) else {
            throw Registration.Invalid(
                problems: [FieldError(field: "schoolId", message: "unknown school '\(schoolID)'")], awaitingRoster: true)
        }
        var problems: [FieldError] = []
        // Problems that name an id the roster does not list (yet).
        var unknownIDs = 0
        if student == nil {
            problems.append(FieldError(field: "student", message: missing()))
            unknownIDs += 1
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
            problems.append(
                FieldError(field: "reason.code", message: "unknown reason; one of \(school.reasonOrder.joined(separator: ", "))"))
            unknownIDs += 1
        }
        // An event's recorder may have left since (a roster version); a request's is the caller now.
        switch (formerTeachers ? knownTeacher(recordedBy) : teachers[recordedBy])?.schoolID {
        case schoolID:
            break
        case nil:
            problems.append(FieldError(field: "recordedBy", message: "unknown teacher '\(recordedBy)' at this school"))
            unknownIDs += 1
        default:
            problems.append(FieldError(field: "recordedBy", message: "unknown teacher '\(recordedBy)' at this school"))
        }
        if let problem = Registration.occurredAtProblem(occurredAt, recordedAt: recordedAt, pastDays: pastDays) {
            problems.append(FieldError(field: "occurredAt", message: problem))
        }
        guard problems.isEmpty, let student, let reason else {
            throw Registration.Invalid(problems: problems, awaitingRoster: unknownIDs == problems.count)
        }
        return Registration(
            school: school, student: student, reason: reason, detail: detail, recordedBy: recordedBy, occurredAt: occurredAt)
    }
}
