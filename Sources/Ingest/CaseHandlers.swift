import Access
import Common
import Guidance
import HTTP

/// Cases opened and moved by teachers (issue 66): `guidance.case.step`
/// events on the student's key (`school/grade`), answered 202 once the
/// broker acknowledged them. The notifier folds them into the case
/// (`GuidanceCase.applying`); a step the case's state does not allow is
/// kept in its history as refused.
extension IngestHandlers {
    /// Those who may read the student's record act on their cases.
    static let caseRoles: Set<Teacher.Role> = [.homeroom, .volunteerDuty, .admin]

    /// `POST /v1/schools/{schoolId}/grades/{grade}/students/{studentId}/cases`
    /// `{"caseId": "<uuid>", "note": "why"}`: a case opened by hand, held by
    /// the teacher who opened it.
    @Sendable func openCase(_ request: Request, _ caller: Caller) async throws -> Response {
        let body = try request.json(CaseStepRequest.init(json:))
        guard let caseID = body.caseId else { throw HTTPError(FieldError(field: "caseId", message: "is required"), status: 422) }
        guard body.note != nil else {
            throw HTTPError(FieldError(field: "note", message: "says why the case is opened; it is required"), status: 422)
        }
        return try await publish(caseStep(request, caller, caseID: caseID, action: .open, body: body), request)
    }

    /// `POST …/students/{studentId}/cases/{caseId}/steps`
    /// `{"stepId": "<uuid>", "action": "move", "state": "counseling-planned", "nextDate": "YYYY-MM-DD", "note": "…"}`;
    /// `"action": "note"` with a note, `"action": "hand-over"` with `"to": "<teacher id>"`,
    /// `"action": "guardian-notice"` with the text to the parents as its note.
    @Sendable func stepCase(_ request: Request, _ caller: Caller) async throws -> Response {
        let body = try request.json(CaseStepRequest.init(json:))
        guard body.action != .open else {
            throw HTTPError(FieldError(field: "action", message: "a case is opened by POST …/cases, not as a step"), status: 422)
        }
        if (body.action == .note || body.action == .guardianNotice) && body.note == nil {
            throw HTTPError(FieldError(field: "note", message: "is required for a note or a 보호자 안내 (its text)"), status: 422)
        }
        return try await publish(
            caseStep(request, caller, caseID: request.parameter("caseId"), action: body.action, body: body), request)
    }

    private func publish(_ step: CaseStep, _ request: Request) async throws -> Response {
        try await publish(
            step.json, type: .caseStep, topic: topics.cases, key: eventKey(school: step.schoolId, grade: step.grade),
            id: ("caseId", step.caseId), eventID: step.eventId, request: request)
    }

    /// The step a request asks for, checked: the student in the path's
    /// grade, the caller (and the teacher a case is handed to) one who may
    /// read the student's record.
    private func caseStep(_ request: Request, _ caller: Caller, caseID: String, action: CaseStep.Action, body: CaseStepRequest)
        throws(HTTPError) -> CaseStep
    {
        guard RandomID.isUUID(caseID) else { throw HTTPError(FieldError(field: "caseId", message: "must be a UUID")) }
        let (schoolID, grade) = try caller.grade(of: request)
        let studentID = request.parameter("studentId")
        guard let student = caller.roster.student(school: schoolID, id: studentID), student.grade == grade else {
            throw HTTPError(FieldError(field: "studentId", message: "is not a student of grade \(grade) at this school"), status: 422)
        }
        guard let teacher = caller.teacher else {
            throw HTTPError(status: 403, detail: "a case step is a teacher's: sign in as one")
        }
        guard teacher.mayReadOtherDays(grade: student.grade, classNumber: student.classNumber) else {
            throw HTTPError(
                status: 403, detail: "a student's cases are for their homeroom teacher, their grade's volunteer-duty teacher and admins")
        }
        if action == .guardianNotice && caller.roster.webhooks[schoolID] == nil {
            throw HTTPError(
                FieldError(
                    field: "action",
                    message: "a 보호자 안내 goes through the school's webhook (webhooks.csv), and this school has none"), status: 422)
        }
        if case .handOver(let to) = action {
            guard let other = caller.roster.teachers[to], other.schoolID == schoolID,
                other.mayReadOtherDays(grade: student.grade, classNumber: student.classNumber)
            else {
                throw HTTPError(
                    FieldError(
                        field: "to",
                        message:
                            "must be a teacher of this school who may read the student's record (their homeroom teacher, the grade's volunteer-duty teacher or an admin)"
                    ), status: 422)
            }
        }
        let stepID = body.stepId ?? RandomID.uuid()
        guard RandomID.isUUID(stepID) else { throw HTTPError(FieldError(field: "stepId", message: "must be a UUID")) }
        let step = CaseStep(
            eventId: stepID.lowercased(), caseId: caseID.lowercased(), schoolId: schoolID, grade: grade, studentId: student.id,
            action: action, note: body.note, by: teacher.id, at: Timestamp.format(clock()))
        if let problem = caller.roster.caseProblem(step) { throw HTTPError.unprocessable(problem, errors: []) }
        return step
    }
}

/// The body of a case request: a step, or an opening (`action` left out).
struct CaseStepRequest: Sendable {
    let caseId: String?
    let stepId: String?
    let action: CaseStep.Action
    let note: String?

    init(json body: JSONFields) throws(FieldError) {
        // Every field the contract knows is held to its type whatever the
        // action: `to` on a move is an error, not ignored; only `note` and
        // `nextDate` may be null.
        for key in ["caseId", "stepId", "action", "state", "to"] where body.object[key] == .null {
            throw FieldError(field: key, message: "must be a string; leave it out rather than null")
        }
        for key in ["caseId", "stepId", "action", "state", "to"] where try body.optionalString(key)?.isEmpty == true {
            throw FieldError(field: key, message: "must not be empty")
        }
        if let nextDate = try body.optionalString("nextDate"), Timestamp.parseDate(nextDate) == nil {
            throw FieldError(field: "nextDate", message: "must be a date, YYYY-MM-DD")
        }
        caseId = try body.optionalString("caseId")
        stepId = try body.optionalString("stepId")
        action = body.object["action"] == nil ? .open : try CaseStep.action(body)
        let raw = try body.optionalString("note")
        do {
            note = try Reason.detail(raw)
        } catch {
            throw FieldError(field: "note", message: error.description)
        }
    }
}
