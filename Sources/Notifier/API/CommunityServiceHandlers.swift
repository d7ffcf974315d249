import Access
import Common
import Guidance
import HTTP
import Store
import Web
import Wiring

/// The 봉사 명단: what each student owes, has served and has left, in the
/// caller's scope; and recording service (`봉사 완료`) from the teacher page,
/// passed on to the ingest, which publishes it.
struct CommunityServiceHandlers: Sendable {
    let store: SQLStore
    let photos: StudentPhotos
    let accessLog: AccessLog
    let clock: @Sendable () -> Double
    /// `INGEST_URL`; nil: recording is not set up here.
    let ingest: Forwarding?
    let logger: Logger

    func routes(into router: inout GuardedRouter) {
        let readers = Access.school(roles: [.homeroom, .volunteerDuty, .admin])
        router.get("/v1/schools/{schoolId}/service", readers, list)
        let recorders = Access.school(roles: [.volunteerDuty, .admin])
        router.post("/v1/schools/{schoolId}/grades/{grade}/students/{studentId}/service", recorders, forward)
        router.delete("/v1/schools/{schoolId}/grades/{grade}/students/{studentId}/service/{serviceId}", recorders, forward)
    }

    /// `GET /v1/schools/{schoolId}/service?grade=&class=&owing=true`: admins
    /// see the school, volunteer-duty teachers their grade, homeroom
    /// teachers their class (without a filter, their own scope); students
    /// with service left first, then by seat.
    @Sendable func list(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        var grade = try request.integerQuery("grade", in: Student.seatRange)
        var classNumber = try request.integerQuery("class", in: Student.seatRange)
        if classNumber != nil && grade == nil { throw HTTPError(FieldError(field: "grade", message: "is required with class")) }
        let owingOnly = try request.booleanQuery("owing") ?? false
        // Admins see the school; otherwise the widest scope the teacher's
        // roles give (a volunteer-duty teacher's grade, a homeroom teacher's
        // class), unasked or asked within it. Gate duty gives no 봉사 명단.
        if let teacher = caller.teacher, !teacher.has(.admin) {
            if teacher.has(.volunteerDuty) && (grade == nil || grade == teacher.grade) {
                grade = teacher.grade
            } else if teacher.has(.homeroom) && (grade == nil || grade == teacher.grade)
                && (classNumber == nil || classNumber == teacher.classNumber)
            {
                (grade, classNumber) = (teacher.grade, teacher.classNumber)
            } else if teacher.has(.volunteerDuty) {
                throw HTTPError(status: 403, detail: "a volunteer-duty teacher sees their own grade: grade=\(teacher.grade ?? 0)")
            } else {
                throw HTTPError(
                    status: 403,
                    detail: "a homeroom teacher sees their own class: grade=\(teacher.grade ?? 0)&class=\(teacher.classNumber ?? 0)")
            }
        }
        let today = Timestamp.localDate(clock(), in: school.timeZone)
        // As of a day the teacher picks: what was owed and served up to its end.
        let asOf = try request.query["date"].map { (date) throws(HTTPError) -> String in
            guard Timestamp.parseDate(date) != nil else { throw HTTPError(FieldError(field: "date", message: "must be YYYY-MM-DD")) }
            guard date <= today else {
                throw HTTPError(FieldError(field: "date", message: "must not be after the school's today (\(today))"))
            }
            return date
        }
        let store = self.store
        let accounts = try await blocking { try store.communityServiceAccounts(school: school.id, asOf: asOf) }
        let roster = caller.roster
        var items: [(Student, CommunityServiceAccount)] = accounts.compactMap { account in
            // The student's whole account, under the grade and class the roster
            // has now (records made before a grade change included). Students
            // who left the roster owe nothing anyone can run.
            guard let student = roster.student(school: school.id, id: account.studentId),
                grade == nil || student.grade == grade, classNumber == nil || student.classNumber == classNumber,
                !owingOnly || account.standing.outstanding > 0
            else { return nil }
            return (student, account)
        }
        items.sort { a, b in
            ((a.1.standing.outstanding > 0 ? 0 : 1), a.0.grade, a.0.classNumber, a.0.number)
                < ((b.1.standing.outstanding > 0 ? 0 : 1), b.0.grade, b.0.classNumber, b.0.number)
        }
        let scope = [("date", asOf), ("grade", grade.map(String.init)), ("class", classNumber.map(String.init))]
        accessLog.record(
            caller, .service, school: school.id,
            target: scope.compactMap { name, value in value.map { "\(name)=\($0)" } }.joined(separator: "&"))
        return .json(
            written: CommunityServiceHandlers.json(
                school: school, today: today, asOf: asOf, items, photo: photos.url(for:), teacherName: { roster.teachers[$0]?.name }))
    }

    static func json(
        school: School, today: String, asOf: String? = nil, _ items: [(Student, CommunityServiceAccount)], photo: (Student) -> String?,
        teacherName: (String) -> String?
    ) -> [UInt8] {
        var writer = JSONWriter(capacity: 128 + items.count * 400)
        writer.field("schoolId", school.id)
        writer.field("today", today)
        if let asOf { writer.field("date", asOf) }
        writer.array("items", items) { writer, item in
            let (student, account) = item
            writer.object("student") { StudentRef(student).write(to: &$0) }
            writer.field("photoUrl", photo(student))
            account.standing.write(to: &writer)
            if let last = account.lastGuidance {
                writer.object("lastGuidance") { writer in
                    writer.field("guidanceId", last.guidanceId)
                    writer.field("occurredAt", last.occurredAt)
                    writer.object("reason") {
                        ReasonRef(code: last.reasonCode, label: school.reason(last.reasonCode)?.label ?? last.reasonCode, detail: nil)
                            .write(to: &$0)
                    }
                }
            } else {
                writer.field("lastGuidance", nil as String?)
            }
            writer.field("lastServiceDate", account.lastService)
            writer.array("services", account.records) { writer, record in
                writer.field("serviceId", record.serviceId)
                writer.field("date", record.date)
                writer.field("sessions", record.sessions)
                writer.field("note", record.note)
                writer.field("recordedBy", record.recordedBy)
                writer.field("recordedByName", teacherName(record.recordedBy))
                writer.field("recordedAt", record.recordedAt)
            }
        }
        return writer.finish()
    }

    /// `봉사 완료` and taking it back from the teacher page: the same request
    /// passed on to the ingest with the caller's credential; the ingest
    /// checks it again and answers 202 once the broker acknowledged the event.
    @Sendable func forward(_ request: Request, _ caller: Caller) async throws -> Response {
        guard let ingest else {
            throw HTTPError.unavailable("recording service is not set up here (INGEST_URL is not set)", retryAfterSeconds: 60)
        }
        // The path again from its decoded parts, each encoded: an id holding `/` or `?` stays one segment.
        var path =
            "/v1/schools/" + request.parameter("schoolId").percentEncoded + "/grades/" + request.parameter("grade").percentEncoded
            + "/students/" + request.parameter("studentId").percentEncoded + "/service"
        if let serviceID = request.optionalParameter("serviceId") { path += "/" + serviceID.percentEncoded }
        return try await ingest.send(
            request.method, path, body: request.body, request: request, caller: caller,
            unavailable: "service cannot be recorded now (the ingest does not answer); retry with the same serviceId")
    }
}
