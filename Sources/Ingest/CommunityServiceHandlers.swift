import Access
import Common
import Foundation
import Guidance
import HTTP

/// Volunteer service served (봉사 완료) and taken back: events on the
/// student's key (`school/grade`), answered 202 once the broker acknowledged
/// them, like registrations.
extension IngestHandlers {
    /// The grade's volunteer-duty teacher runs the sessions; admins may record too.
    static let communityServiceRoles: Set<Teacher.Role> = [.volunteerDuty, .admin]

    /// `POST /v1/schools/{schoolId}/grades/{grade}/students/{studentId}/service`
    /// `{"serviceId": "<uuid>", "date": "YYYY-MM-DD", "sessions": 1, "note": "…"}`, with
    /// `"outcome": "missed"` and `"dutyId"` for 불참 at a session's sitting
    /// (`dutyId` alone: 완료 of that session); `"outcome": "closed"` with the
    /// reason as `note` for 종결 (admins only).
    @Sendable func recordService(_ request: Request, _ caller: Caller) async throws -> Response {
        let event = try communityServiceRecorded(request, caller)
        return try await publish(
            event.json, type: .communityServiceRecorded, topic: topics.communityService,
            key: eventKey(school: event.record.schoolId, grade: event.record.grade),
            id: ("serviceId", event.record.serviceId), eventID: event.eventId, request: request)
    }

    /// `DELETE …/students/{studentId}/service/{serviceId}`: the record taken back.
    @Sendable func withdrawService(_ request: Request, _ caller: Caller) async throws -> Response {
        let (schoolID, grade, studentID) = try communityServiceTarget(request, caller)
        guard RandomID.isUUID(request.parameter("serviceId")) else {
            throw HTTPError(FieldError(field: "serviceId", message: "must be a UUID"))
        }
        let event = CommunityServiceWithdrawn(
            eventId: RandomID.uuid(), serviceId: request.parameter("serviceId").lowercased(), schoolId: schoolID, grade: grade,
            studentId: studentID, withdrawnBy: caller.teacher?.id ?? request.query["withdrawnBy"] ?? "unknown",
            occurredAt: Timestamp.format(clock()))
        return try await publish(
            event.json, type: .communityServiceWithdrawn, topic: topics.communityService, key: eventKey(school: schoolID, grade: grade),
            id: ("serviceId", event.serviceId), eventID: event.eventId, request: request)
    }

    /// `POST /v1/schools/{schoolId}/service/sittings` (admins)
    /// `{"sittingId": "<uuid>", "date": "YYYY-MM-DD", "time": "HH:MM", "place": "상담실", "capacity": 4}`:
    /// a one-off sitting of 교내봉사; the notifier seats in it, in due order,
    /// the sessions that had no seat by their due date.
    @Sendable func addSitting(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let body = try request.json { (fields: JSONFields) throws(FieldError) in
            (
                sittingId: try fields.string("sittingId"), date: try fields.string("date"), time: try fields.string("time"),
                place: try fields.string("place"), capacity: try fields.integer("capacity"),
                addedBy: try fields.optionalString("addedBy")
            )
        }
        let addedBy = try caller.author(named: body.addedBy, field: "addedBy")
        let now = clock()
        let asked = CommunityServiceSittingAdded(
            eventId: RandomID.uuid(), sittingId: body.sittingId, schoolId: school.id,
            slot: SlotTime(date: body.date, time: body.time, place: body.place), capacity: body.capacity,
            addedBy: addedBy, addedAt: Timestamp.format(now))
        let sitting: CommunityServiceSittingAdded
        do {
            sitting = try caller.roster.checkedSitting(asked, today: Timestamp.localDate(now, in: school.timeZone))
        } catch {
            throw HTTPError.unprocessable(error.description, errors: error.problems)
        }
        return try await publish(
            sitting.json, type: .communityServiceSittingAdded, topic: topics.communityService, key: eventKey(school: school.id, grade: 0),
            id: ("sittingId", sitting.sittingId), eventID: sitting.eventId, request: request)
    }

    /// The school, grade and student a service route names; a volunteer-duty
    /// teacher only their own grade (403), an unknown school or grade 422,
    /// and a student the roster does not list in that grade 422: the path
    /// alone authorizes nothing (the notifier also holds a withdrawal to the
    /// record's own school, student and grade).
    private func communityServiceTarget(_ request: Request, _ caller: Caller) throws(HTTPError) -> (
        school: String, grade: Int, student: String
    ) {
        let (schoolID, grade) = try caller.grade(of: request)
        if let teacher = caller.teacher, !teacher.has(.admin), teacher.grade != grade {
            throw HTTPError(status: 403, detail: "a volunteer-duty teacher records service for their own grade (\(teacher.grade ?? 0))")
        }
        let studentID = request.parameter("studentId")
        guard let student = caller.roster.student(school: schoolID, id: studentID), student.grade == grade else {
            throw HTTPError(FieldError(field: "studentId", message: "is not a student of grade \(grade) at this school"), status: 422)
        }
        return (schoolID, grade, student.id)
    }

    private func communityServiceRecorded(_ request: Request, _ caller: Caller) throws(HTTPError) -> CommunityServiceRecorded {
        let (schoolID, grade, studentID) = try communityServiceTarget(request, caller)
        let body = try request.json(CommunityServiceRequest.init(json:))
        if body.outcome == .closed, let teacher = caller.teacher, !teacher.has(.admin) {
            throw HTTPError(status: 403, detail: "only the school's admins close owed 봉사 (outcome closed)")
        }
        guard RandomID.isUUID(body.serviceId) else { throw HTTPError(FieldError(field: "serviceId", message: "must be a UUID")) }
        let recordedBy = try caller.author(named: body.recordedBy, field: "recordedBy")
        let now = clock()
        let asked = CommunityServiceRecord(
            serviceId: body.serviceId, schoolId: schoolID, grade: grade, studentId: studentID,
            date: body.date, sessions: body.sessions, note: body.note, recordedBy: recordedBy, recordedAt: Timestamp.format(now),
            outcome: body.outcome, dutyId: body.dutyId)
        let today = caller.roster.school(schoolID).map { Timestamp.localDate(now, in: $0.timeZone) } ?? ""
        do {
            return CommunityServiceRecorded(
                eventId: RandomID.uuid(),
                record: try caller.roster.checkedService(asked, today: today, firstDay: retention.firstKeptDay(today: today)))
        } catch {
            throw HTTPError.unprocessable(error.description, errors: error.problems)
        }
    }
}

/// The body of a service record.
struct CommunityServiceRequest: Sendable {
    let serviceId: String
    let date: String
    let sessions: Int
    let note: String?
    let recordedBy: String?
    let outcome: CommunityServiceRecord.Outcome
    let dutyId: String?

    init(json body: JSONFields) throws(FieldError) {
        // Left out means served; `null` is not a value the contract allows.
        if body.object["outcome"] == .null {
            throw FieldError(field: "outcome", message: "must be \(CommunityServiceRecord.Outcome.names); leave it out for served")
        }
        let outcome = try body.optionalString("outcome") ?? CommunityServiceRecord.Outcome.served.rawValue
        guard let named = CommunityServiceRecord.Outcome(rawValue: outcome) else {
            throw FieldError(field: "outcome", message: "must be \(CommunityServiceRecord.Outcome.names)")
        }
        self.outcome = named
        dutyId = try body.optionalString("dutyId")
        serviceId = try body.string("serviceId")
        date = try body.string("date")
        sessions = try body.integer("sessions")
        note = try body.optionalString("note")
        recordedBy = try body.optionalString("recordedBy")
    }
}
