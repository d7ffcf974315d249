import Access
import Common
import Curl
import Foundation
import Guidance
import HTTP
import Kafka
import Web

/// The gate app's endpoints: validate against the roster, produce the event,
/// answer 202 only once the broker acknowledged it.
struct IngestHandlers: Sendable {
    let producer: Producer
    let topics: Topics
    let photos: StudentPhotos
    /// Every student and class a teacher looks up is recorded.
    let accessLog: AccessLog
    /// How far back `occurredAt` may reach (`Retention.windowDays`).
    let retention: Retention
    /// Now, for events' times and the schools' "today" (`IngestConfig.clock`).
    let clock: @Sendable () -> Double
    let metrics: Metrics
    let logger: Logger

    private static let gateRoles: Set<Teacher.Role> = [.gate, .admin]

    func routes(into router: inout GuardedRouter) {
        let gate = Access.school(roles: IngestHandlers.gateRoles)
        router.get("/v1/schools/{schoolId}/classes", gate, classes)
        router.get("/v1/schools/{schoolId}/reasons", gate, reasons)
        router.get("/v1/schools/{schoolId}/students/{grade}/{class}/{number}", gate, lookUpStudent)
        router.get("/v1/schools/{schoolId}/grades/{grade}/classes/{class}/students", gate, classStudents)
        router.get("/v1/schools/{schoolId}/names", gate, schoolNames)
        router.get("/v1/schools/{schoolId}/students", Access.school(roles: [.homeroom, .volunteerDuty, .admin]), findStudents)
        router.post("/v1/schools/{schoolId}/guidances", gate, register)
        router.delete("/v1/schools/{schoolId}/grades/{grade}/guidances/{guidanceId}", gate, delete)
        let service = Access.school(roles: IngestHandlers.communityServiceRoles)
        router.post("/v1/schools/{schoolId}/grades/{grade}/students/{studentId}/service", service, recordService)
        router.delete(
            "/v1/schools/{schoolId}/grades/{grade}/students/{studentId}/service/{serviceId}", service, withdrawService)
        router.post("/v1/schools/{schoolId}/service/sittings", Access.school(roles: [.admin]), addSitting)
        let cases = Access.school(roles: IngestHandlers.caseRoles)
        router.post("/v1/schools/{schoolId}/grades/{grade}/students/{studentId}/cases", cases, openCase)
        router.post("/v1/schools/{schoolId}/grades/{grade}/students/{studentId}/cases/{caseId}/steps", cases, stepCase)
        photos.routes(into: &router)
    }

    struct Classes: Encodable, Sendable {
        struct Grade: Encodable, Sendable {
            let grade: Int
            let classes: [Class]
        }
        struct Class: Encodable, Sendable {
            let classNumber: Int
            let numbers: [Int]
        }
        let schoolId: String
        let grades: [Grade]

        /// The school's seats as grades of classes of numbers, each level sorted.
        static func grades(_ roster: Roster, school: String) -> [Grade] {
            roster.seats(school: school).map { grade, classes in
                Grade(grade: grade, classes: classes.map { Class(classNumber: $0.classNumber, numbers: $0.numbers) })
            }
        }
    }

    /// The school's grades, classes and student numbers, for the gate page's
    /// 학년 / 반 / 번호 controls (names come one at a time, by look-up).
    @Sendable func classes(_ request: Request, _ caller: Caller) async throws -> Response {
        let schoolID = try caller.school(of: request).id
        return .json(Classes(schoolId: schoolID, grades: Classes.grades(caller.roster, school: schoolID)))
    }

    struct Reasons: Encodable, Sendable {
        let schoolId: String
        let items: [Reason]
    }

    /// The school's reason catalogue in its order, with the Korean labels.
    @Sendable func reasons(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        return .json(Reasons(schoolId: school.id, items: school.orderedReasons))
    }

    @Sendable func lookUpStudent(_ request: Request, _ caller: Caller) async throws -> Response {
        let roster = caller.roster
        let grade = try request.integerParameter("grade", in: Student.seatRange)
        let classNumber = try request.integerParameter("class", in: Student.seatRange)
        let number = try request.integerParameter("number", in: Student.seatRange)
        let schoolID = try caller.school(of: request).id
        guard let student = roster.student(school: schoolID, grade: grade, classNumber: classNumber, number: number) else {
            throw HTTPError.notFound("no student at grade \(grade), class \(classNumber), number \(number)")
        }
        accessLog.record(caller, .student, school: schoolID, target: student.id)
        return .json(written: StudentView(student, photoUrl: photos.url(for: student)).json)
    }

    struct ClassStudents: Encodable, Sendable {
        struct Entry: Encodable, Sendable {
            let studentId: String
            let number: Int
            let name: String
            let photoUrl: PhotoURL
        }
        let schoolId: String
        let grade: Int
        let classNumber: Int
        let students: [Entry]
    }

    /// A class's students in number order, for the gate page's face check:
    /// one request when the class is tapped, none per student.
    @Sendable func classStudents(_ request: Request, _ caller: Caller) async throws -> Response {
        let roster = caller.roster
        let schoolID = request.parameter("schoolId")
        let grade = try request.integerParameter("grade", in: Student.seatRange)
        let classNumber = try request.integerParameter("class", in: Student.seatRange)
        let students = roster.students(school: schoolID, grade: grade, classNumber: classNumber)
        guard !students.isEmpty else { throw HTTPError.notFound("no class \(grade)-\(classNumber) at school '\(schoolID)'") }
        // A list the gate fetches ahead for offline use (`X-Purpose: prefetch`) is not a read; a class opened is.
        if request.header("x-purpose") != "prefetch" {
            accessLog.record(caller, .classStudents, school: schoolID, target: "\(grade)-\(classNumber)")
        }
        return .json(
            ClassStudents(
                schoolId: schoolID, grade: grade, classNumber: classNumber,
                students: students.map {
                    ClassStudents.Entry(studentId: $0.id, number: $0.number, name: $0.name, photoUrl: PhotoURL(value: photos.url(for: $0)))
                }))
    }

    /// Every student's name by seat (`"1-3-12": "김민지"`), in one small
    /// answer the gate asks for as the app opens, before any photo: a class
    /// never opened shows its names offline. Kept ahead like the class lists
    /// fetched for offline use, it is not a read of any student (the class
    /// opened at the face check is).
    @Sendable func schoolNames(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        var writer = JSONWriter(capacity: 4096)
        writer.field("schoolId", school.id)
        writer.object("names") { writer in
            for student in caller.roster.students(school: school.id) {
                writer.field(named: "\(student.grade)-\(student.classNumber)-\(student.number)", student.name)
            }
        }
        return .json(written: writer.finish())
    }

    /// 학생 찾기: the students whose record (학생 기록) the caller may open
    /// (admins the school, homeroom teachers their class, volunteer-duty
    /// teachers their grade) whose name holds `q`, or whose 학번 begins with
    /// it (`10314`: 1학년 3반 14번; `103`: the class), in seat order, at most
    /// `foundAtMost`. Seats and names only, like the gate's names; opening a
    /// record is the read the access record keeps (`history`).
    @Sendable func findStudents(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        // Counted as the contract counts (Unicode scalars, as sent), then trimmed.
        let asked = request.query["q"] ?? ""
        let wanted = asked.trimmingCharacters(in: .whitespaces)
        guard (1...20).contains(asked.unicodeScalars.count), !wanted.isEmpty else {
            throw HTTPError(FieldError(field: "q", message: "must be 1 to 20 characters: part of a name, or the start of a 학번 (10314)"))
        }
        let byNumber = wanted.allSatisfy { $0.isASCII && $0.isNumber }
        let found = caller.roster.students(school: school.id).filter { student in
            (caller.teacher?.mayReadOtherDays(grade: student.grade, classNumber: student.classNumber) ?? true)
                && (byNumber ? IngestHandlers.studentNumber(student).hasPrefix(wanted) : student.name.contains(wanted))
        }
        var writer = JSONWriter(capacity: 256 + found.count * 96)
        writer.array("items", Array(found.prefix(IngestHandlers.foundAtMost))) { writer, student in
            writer.field("studentId", student.id)
            writer.field("grade", student.grade)
            writer.field("classNumber", student.classNumber)
            writer.field("number", student.number)
            writer.field("name", student.name)
        }
        writer.field("more", found.count > IngestHandlers.foundAtMost)
        writer.field("schoolId", school.id)
        return .json(written: writer.finish())
    }

    static let foundAtMost = 20

    /// The 학번 Korean schools write: the grade, then the class and the number in two digits each (1학년 3반 14번: `10314`).
    static func studentNumber(_ student: Student) -> String {
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return "\(student.grade)" + twoDigits(student.classNumber) + twoDigits(student.number)
    }

    @Sendable func register(_ request: Request, _ caller: Caller) async throws -> Response {
        let event = try registeredEvent(request, caller)
        return try await publish(
            event.json, type: .registered, topic: topics.registered, key: eventKey(school: event.schoolId, grade: event.student.grade),
            id: ("guidanceId", event.guidanceId), eventID: event.eventId, request: request)
    }

    /// The event a registration request stands for, or the 400/422 it gets.
    private func registeredEvent(_ request: Request, _ caller: Caller) throws(HTTPError) -> GuidanceRegistered {
        let roster = caller.roster
        let schoolID = request.parameter("schoolId")
        let body = try request.json(RegisterRequest.init(json:))
        let now = clock()
        let guidanceID = try guidanceID(body.guidanceId)
        let occurredAt = try body.occurredAt.map(IngestHandlers.occurredAt) ?? now
        let recordedBy = try caller.author(named: body.recordedBy, field: "recordedBy")
        let registration: Registration
        do {
            registration = try roster.registration(
                school: schoolID, grade: body.student.grade, classNumber: body.student.classNumber, number: body.student.number,
                reasonCode: body.reason.code, detail: body.reason.detail, recordedBy: recordedBy, occurredAt: occurredAt, recordedAt: now,
                pastDays: retention.windowDays)
        } catch {
            throw HTTPError.unprocessable(error.description, errors: error.problems)
        }
        return GuidanceRegistered(
            eventId: RandomID.uuid(), guidanceId: guidanceID, schoolId: schoolID, student: StudentRef(registration.student),
            reason: ReasonRef(code: registration.reason.code, label: registration.reason.label, detail: registration.detail),
            recordedBy: recordedBy, occurredAt: Timestamp.format(occurredAt), recordedAt: Timestamp.format(now))
    }

    private static func occurredAt(_ text: String) throws(HTTPError) -> Double {
        guard let seconds = Timestamp.parse(text) else {
            throw HTTPError(
                FieldError(field: "occurredAt", message: "must be an RFC 3339 timestamp with an offset, e.g. 2026-11-30T07:52:10+09:00"))
        }
        return seconds
    }

    /// The client's guidance id, lowercased, or a new one.
    func guidanceID(_ given: String?) throws(HTTPError) -> String {
        guard let given else { return RandomID.uuid() }
        guard RandomID.isUUID(given) else { throw HTTPError(FieldError(field: "guidanceId", message: "must be a UUID")) }
        return given.lowercased()
    }

    @Sendable func delete(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacher = caller.teacher
        let guidanceID = try guidanceID(request.parameter("guidanceId"))
        let (schoolID, grade) = try caller.grade(of: request)
        let deletedBy = teacher?.id ?? request.query["deletedBy"] ?? "unknown"
        let event = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: guidanceID, schoolId: schoolID, grade: grade,
            deletedBy: deletedBy, occurredAt: Timestamp.format(clock()))
        return try await publish(
            event.json, type: .deleted, topic: topics.deleted, key: eventKey(school: schoolID, grade: grade),
            id: ("guidanceId", guidanceID), eventID: event.eventId, request: request)
    }

    /// Produces an event and answers 202 once the broker acknowledged it;
    /// `id` names what it is about (`guidanceId`, `serviceId`), in the log,
    /// the answer and the 503 that asks for a retry with the same id.
    func publish(
        _ value: [UInt8], type: EventType, topic: String, key: String, id: (name: StaticString, value: String), eventID: String,
        request: Request
    ) async throws -> Response {
        let message = OutgoingMessage(topic: topic, key: Array(key.utf8), value: value, headers: type.headers)
        let report: DeliveryReport
        do {
            report = try await producer.send(message)
        } catch {
            metrics.increment(
                "ingest_produce_errors_total", help: "Events the broker did not acknowledge, by reason.",
                labels: [("code", "\(error.code)")])
            logger.warning(
                "event not acknowledged", ["requestId": request.requestID, id.name.description: id.value, "error": error.message])
            if error.isRetriable {
                throw HTTPError.unavailable(
                    "the event broker did not acknowledge the event; retry with the same \(id.name)", retryAfterSeconds: 2,
                    members: [(id.name.description, id.value)])
            }
            throw error
        }
        guard logger.isEnabled(.info) else { return accepted(id, eventID, report) }
        logger.info(
            IngestHandlers.logMessage(type),
            [
                "requestId": request.requestID, id.name.description: id.value, "key": key,
                "partition": String(report.partition), "offset": String(report.offset)
            ])
        return accepted(id, eventID, report)
    }

    private static func logMessage(_ type: EventType) -> String {
        switch type {
        case .registered: "guidance registered"
        case .deleted: "guidance deleted"
        case .communityServiceRecorded: "service recorded"
        case .communityServiceWithdrawn: "service withdrawn"
        case .caseStep: "case step"
        case .communityServiceSittingAdded: "service sitting added"
        }
    }

    private func accepted(_ id: (name: StaticString, value: String), _ eventID: String, _ report: DeliveryReport) -> Response {
        var body = JSONWriter(capacity: 192)
        body.field("eventId", eventID)
        body.field(id.name, id.value)
        body.field("offset", report.offset)
        body.field("partition", report.partition)
        body.field("topic", report.topic)
        return .json(written: body.finish(), status: 202)
    }
}
