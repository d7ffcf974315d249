import Common
import Foundation
import Guidance
import HTTP
import ServiceSupport
import Kafka

/// The gate app's endpoints: validate against the roster, produce the event,
/// answer 202 only once the broker acknowledged it.
struct IngestHandlers: Sendable {
    let roster: Roster
    let producer: Producer
    let topics: Topics
    let metrics: Metrics
    let logger: Logger
    let futureTolerance: Double

    private static let gateRoles: Set<Teacher.Role> = [.gate, .admin]

    func routes(into router: inout Router) {
        router.get("/v1/schools/{schoolId}/students/{grade}/{class}/{number}", lookUpStudent)
        router.post("/v1/schools/{schoolId}/guidances", register)
        router.delete("/v1/schools/{schoolId}/grades/{grade}/guidances/{guidanceId}", delete)
    }

    @Sendable func lookUpStudent(_ request: Request) async throws -> Response {
        let schoolID = request.parameter("schoolId")
        try authorize(request, school: schoolID)
        let grade = try request.positiveParameter("grade")
        let classNumber = try request.positiveParameter("class")
        let number = try request.positiveParameter("number")
        guard roster.school(schoolID) != nil else { throw HTTPError.notFound("unknown school '\(schoolID)'") }
        guard let student = roster.student(school: schoolID, grade: grade, classNumber: classNumber, number: number) else {
            throw HTTPError.notFound("no student at grade \(grade), class \(classNumber), number \(number)")
        }
        return .json(StudentView(student))
    }

    @Sendable func register(_ request: Request) async throws -> Response {
        let schoolID = request.parameter("schoolId")
        let teacher = try authorize(request, school: schoolID)
        let body = try request.decode(RegisterRequest.self, plain: RegisterRequest.init(plain:))

        var malformed: [FieldError] = []
        let guidanceID = body.guidanceId.map { $0.lowercased() } ?? RandomID.uuid()
        if let given = body.guidanceId, UUID(uuidString: given) == nil {
            malformed.append(FieldError(field: "guidanceId", message: "must be a UUID"))
        }
        let occurredAt = body.occurredAt.map(Timestamp.parse) ?? Timestamp.now()
        if occurredAt == nil {
            malformed.append(FieldError(field: "occurredAt", message: "must be an RFC 3339 timestamp with an offset, e.g. 2026-11-30T07:52:10+09:00"))
        }
        guard malformed.isEmpty, let occurredAt else {
            throw HTTPError.badRequest(malformed.map { "\($0.field) \($0.message)" }.joined(separator: "; "), errors: malformed)
        }

        guard let school = roster.school(schoolID) else {
            throw HTTPError.unprocessable("unknown school '\(schoolID)'", errors: [FieldError(field: "schoolId", message: "unknown school")])
        }
        var invalid: [FieldError] = []
        let student = roster.student(school: schoolID, grade: body.student.grade, classNumber: body.student.classNumber, number: body.student.number)
        if student == nil {
            invalid.append(FieldError(field: "student", message: "no student at grade \(body.student.grade), class \(body.student.classNumber), number \(body.student.number)"))
        }
        let reason = school.reason(body.reason.code)
        let detail = body.reason.detail?.trimmingWhitespace()
        if reason == nil {
            invalid.append(FieldError(field: "reason.code", message: "unknown reason; one of \(school.reasonOrder.joined(separator: ", "))"))
        } else if reason!.requiresDetail && (detail ?? "").isEmpty {
            invalid.append(FieldError(field: "reason.detail", message: "is required for '\(reason!.code)'"))
        }
        if let detail, detail.count > Reason.maxDetailLength {
            invalid.append(FieldError(field: "reason.detail", message: "must be at most \(Reason.maxDetailLength) characters"))
        }
        let now = Timestamp.now()
        if occurredAt > now + futureTolerance {
            invalid.append(FieldError(field: "occurredAt", message: "is more than 5 minutes in the future"))
        }
        let recordedBy = body.recordedBy ?? teacher?.id
        if let recordedBy {
            if roster.teachers[recordedBy]?.schoolID != schoolID {
                invalid.append(FieldError(field: "recordedBy", message: "unknown teacher '\(recordedBy)' at this school"))
            } else if let teacher, teacher.id != recordedBy, teacher.role != .admin {
                invalid.append(FieldError(field: "recordedBy", message: "must be the authenticated teacher \(teacher.id)"))
            }
        } else {
            invalid.append(FieldError(field: "recordedBy", message: "is required"))
        }
        guard invalid.isEmpty, let student, let reason, let recordedBy else {
            throw HTTPError.unprocessable(invalid.map { "\($0.field) \($0.message)" }.joined(separator: "; "), errors: invalid)
        }

        let event = GuidanceRegistered(
            eventId: RandomID.uuid(), guidanceId: guidanceID, schoolId: schoolID,
            student: StudentRef(student), reason: ReasonRef(code: reason.code, label: reason.label, detail: (detail ?? "").isEmpty ? nil : detail),
            recordedBy: recordedBy, occurredAt: Timestamp.format(occurredAt), recordedAt: Timestamp.format(now))
        return try await publish(
            event.json, type: .registered, topic: topics.registered, key: eventKey(school: schoolID, grade: student.grade),
            guidanceID: guidanceID, eventID: event.eventId, request: request)
    }

    @Sendable func delete(_ request: Request) async throws -> Response {
        let schoolID = request.parameter("schoolId")
        let teacher = try authorize(request, school: schoolID)
        let grade = try request.positiveParameter("grade")
        let guidanceID = request.parameter("guidanceId").lowercased()
        guard UUID(uuidString: guidanceID) != nil else {
            throw HTTPError.badRequest("guidanceId must be a UUID", errors: [FieldError(field: "guidanceId", message: "must be a UUID")])
        }
        guard roster.school(schoolID) != nil else {
            throw HTTPError.unprocessable("unknown school '\(schoolID)'", errors: [FieldError(field: "schoolId", message: "unknown school")])
        }
        guard roster.hasGrade(grade, in: schoolID) else {
            throw HTTPError.unprocessable("school '\(schoolID)' has no grade \(grade)", errors: [FieldError(field: "grade", message: "unknown grade")])
        }
        let deletedBy = teacher?.id ?? request.query["deletedBy"] ?? "unknown"
        let event = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: guidanceID, schoolId: schoolID, grade: grade,
            deletedBy: deletedBy, occurredAt: Timestamp.format(Timestamp.now()))
        return try await publish(
            event.json, type: .deleted, topic: topics.deleted, key: eventKey(school: schoolID, grade: grade),
            guidanceID: guidanceID, eventID: event.eventId, request: request)
    }

    private func publish(
        _ value: [UInt8], type: EventType, topic: String, key: String, guidanceID: String, eventID: String, request: Request
    ) async throws -> Response {
        let message = OutgoingMessage(
            topic: topic, key: key, value: value,
            headers: [(EventHeader.type, type.rawValue), (EventHeader.schemaVersion, "1"), (EventHeader.contentType, "application/json")])
        let report: DeliveryReport
        do {
            report = try await producer.send(message)
        } catch {
            metrics.increment("ingest_produce_errors_total", help: "Events the broker did not acknowledge, by reason.", labels: [("code", "\(error.code)")])
            logger.warning("event not acknowledged", ["requestId": request.requestID, "guidanceId": guidanceID, "error": error.message])
            if error.isRetriable {
                throw HTTPError.unavailable("the event broker did not acknowledge the event; retry with the same guidanceId", retryAfterSeconds: 2)
            }
            throw error
        }
        guard logger.isEnabled(.info) else { return accepted(guidanceID, eventID, report) }
        logger.info(type == .registered ? "guidance registered" : "guidance deleted", [
            "requestId": request.requestID, "guidanceId": guidanceID, "key": key,
            "partition": String(report.partition), "offset": String(report.offset),
        ])
        return accepted(guidanceID, eventID, report)
    }

    private func accepted(_ guidanceID: String, _ eventID: String, _ report: DeliveryReport) -> Response {
        var body = JSONWriter(capacity: 192)
        body.field("eventId", eventID)
        body.field("guidanceId", guidanceID)
        body.field("offset", report.offset)
        body.field("partition", report.partition)
        body.field("topic", report.topic)
        return .json(written: body.finish(), status: 202)
    }

    @discardableResult
    private func authorize(_ request: Request, school: String) throws(HTTPError) -> Teacher? {
        do {
            return try roster.authorize(request.header("authorization"), school: school, roles: IngestHandlers.gateRoles)
        } catch {
            throw HTTPError(error)
        }
    }
}
