import Access
import Common
import Guidance
import HTTP
import Kafka
import Store
import Web

/// The teachers' read side: guidance lists, inboxes, and digest runs.
struct NotifierHandlers: Sendable {
    let store: SQLStore
    let runner: DigestRunner
    /// Where the pages load each listed student's photo from.
    let photos: StudentPhotos
    /// Every list and inbox a teacher reads is recorded.
    let accessLog: AccessLog
    /// How far back a digest run may reach (`Retention.windowDays`).
    let retention: Retention
    /// Web Push, when `VAPID_PRIVATE_KEY` is set.
    let push: VAPIDSettings?
    /// Push endpoints may be http on loopback (`DeliveryConfig.pushOverHTTP`).
    let pushOverHTTP: Bool
    /// `QUIET_HOURS`: a teacher's who chose none of their own.
    let quietHours: QuietHours?
    /// The service's one clock (`NotifierConfig.clock`).
    let clock: @Sendable () -> Double
    let logger: Logger

    /// Every route takes any teacher; each handler narrows to what the
    /// teacher's role covers (`mayView`, `mayReadInbox`, admins run digests).
    func routes(into router: inout GuardedRouter) {
        router.get("/v1/schools/{schoolId}/guidances", .teacher, listGuidances)
        router.get("/v1/teachers/{teacherId}/inbox", .teacher, inbox)
        router.get("/v1/teachers/{teacherId}/inbox/unread", .teacher, unread)
        router.post("/v1/teachers/{teacherId}/inbox/{digestId}/read", .teacher, markRead)
        router.get("/v1/teachers/{teacherId}/settings", .teacher, settings)
        router.post("/v1/teachers/{teacherId}/settings", .teacher, changeSettings)
        router.post("/v1/teachers/{teacherId}/push", .teacher, subscribe)
        router.post("/v1/teachers/{teacherId}/push/remove", .teacher, unsubscribe)
        router.post("/v1/digests/run", .teacher, runDigests)
    }

    @Sendable func listGuidances(_ request: Request, _ caller: Caller) async throws -> Response {
        let (roster, teacher) = (caller.roster, caller.teacher)
        let schoolID = request.parameter("schoolId")
        var grade = try request.integerQuery("grade", in: Student.seatRange)
        var classNumber = try request.integerQuery("classNumber", in: Student.seatRange)
        if let scope = request.query["scope"], scope != "school" {
            throw HTTPError(FieldError(field: "scope", message: "must be school (or left out)"))
        }
        if classNumber != nil && grade == nil {
            throw HTTPError(FieldError(field: "grade", message: "is required with classNumber"))
        }
        // Another school's id is refused whether it exists or not, so ids cannot be probed.
        if let teacher, teacher.schoolID != schoolID { throw HTTPError.otherSchool(teacher) }
        let school = try caller.school(of: request)
        let today = runner.today(for: school)
        let period = try NotifierHandlers.period(request, today: today)
        // A period's list ends on its last day; each row's counts are as of its own day.
        let date = try period?.to ?? queryDate(request) ?? today
        let (from, isToday) = (period?.from ?? date, period == nil && date == today)
        if let teacher {
            // Without a filter, a teacher sees the widest scope their roles give
            // that day, unless they ask for the whole school (`scope=school`).
            let wholeSchool = request.query["scope"] == "school"
            if grade == nil && classNumber == nil && !wholeSchool && !teacher.has(.admin) && !(teacher.has(.gate) && isToday) {
                if teacher.has(.volunteerDuty) {
                    grade = teacher.grade
                } else if teacher.has(.homeroom) {
                    (grade, classNumber) = (teacher.grade, teacher.classNumber)
                }
            }
            try mayView(teacher, grade: grade, classNumber: classNumber, today: isToday)
        }
        let store = self.store
        let (scopeGrade, scopeClass) = (grade, classNumber)
        let mayReadRecords = teacher?.hasAny(of: [.homeroom, .volunteerDuty, .admin]) ?? true
        let (records, frequency, cases) = try await store.blocking {
            (
                try store.guidances(school: schoolID, from: from, to: date, grade: scopeGrade, classNumber: scopeClass),
                try NotifierHandlers.frequencies(store, school: schoolID, from: from, to: date, grade: scopeGrade, classNumber: scopeClass),
                // Not read for a gate teacher, whose day list (polled by every gate device) shows no case.
                mayReadRecords ? try store.cases(school: schoolID) : []
            )
        }
        // A student's open case (the newest changed) tags their rows, for
        // those who may read the student's record.
        var openCases: [String: GuidanceCase] = [:]
        for item in cases where openCases[item.studentId] == nil { openCases[item.studentId] = item }
        let photos = self.photos
        let days = period.map { [("from", $0.from), ("to", $0.to)] } ?? [("date", date)]
        let scope = days + [("grade", grade.map(String.init)), ("classNumber", classNumber.map(String.init))]
        accessLog.record(
            caller, .list, school: schoolID,
            target: scope.compactMap { name, value in value.map { "\(name)=\($0)" } }.joined(separator: "&"))
        if DataProtectionHandlers.wantsCSV(request) {
            return DataProtectionHandlers.csvFile(
                NotifierHandlers.csv(records, school: school, teacherName: { roster.teachers[$0]?.name }),
                name: "guidances-\(from)" + (from == date ? "" : "-\(date)") + ".csv")
        }
        return .json(
            streamed: NotifierHandlers.guidanceList(
                school: schoolID, date: date, period: period, records, frequency: frequency,
                photo: { roster.student(school: schoolID, id: $0.studentId).flatMap { photos.url(for: $0, seenBy: teacher) } },
                teacherName: { roster.teachers[$0]?.name },
                openCase: { student in
                    guard teacher?.mayReadOtherDays(grade: student.grade, classNumber: student.classNumber) ?? true else { return nil }
                    return openCases[student.studentId]
                }))
    }

    /// Each row's `Frequency` as of its own day: one count per student for a
    /// day's list, counts by day for a period's.
    private static func frequencies(_ store: SQLStore, school: String, from: String, to: String, grade: Int?, classNumber: Int?)
        throws(StoreError) -> @Sendable (GuidanceRecord) -> Frequency?
    {
        if from == to {
            let counts = try store.frequencies(school: school, date: to, grade: grade, classNumber: classNumber)
            return { counts[$0.student.studentId] }
        }
        let days = try store.guidanceDays(school: school, from: from, to: to, grade: grade, classNumber: classNumber)
        return { record in days[record.student.studentId].map { Frequency(asOf: record.date, byDay: $0) } }
    }

    /// `{date, items, schoolId}` written piece by piece as it is sent, 256
    /// items at a time (an item's `case`: its student's open case, where
    /// `openCase` gives one): a busy school's day (40,000 guidances, 20 MB
    /// of JSON) through `JSONEncoder` built a tree of every value first and
    /// took the notifier from 108 to 204 MiB; written into one buffer, it
    /// still held the 20 MB beside the records.
    static func guidanceList(
        school: String, date: String, period: (from: String, to: String)? = nil, _ records: [GuidanceRecord],
        frequency: @escaping (GuidanceRecord) -> Frequency?, photo: @escaping (StudentRef) -> String? = { _ in nil },
        teacherName: @escaping (String) -> String?, openCase: @escaping (StudentRef) -> GuidanceCase? = { _ in nil }
    ) -> BodyStream {
        var writer = JSONWriter()
        writer.field("date", date)
        if let period {
            writer.field("from", period.from)
            writer.field("to", period.to)
        }
        writer.openArray("items")
        var (next, over) = (0, false)
        return BodyStream {
            guard !over else { return nil }
            let end = min(next + 256, records.count)
            for index in next..<end {
                let record = records[index]
                writer.element(first: index == 0) { writer in
                    // Every listed guidance is active, so its student has at least one.
                    let counts = frequency(record) ?? Frequency(last7Days: 1, last30Days: 1)
                    writer.object("frequency") { counts.write(to: &$0) }
                    writer.field("guidanceId", record.guidanceId)
                    writer.field("occurredAt", record.occurredAt)
                    writer.field("photoUrl", photo(record.student))
                    writer.object("reason") { record.reason.write(to: &$0) }
                    writer.field("recordedBy", record.recordedBy)
                    writer.field("recordedByName", teacherName(record.recordedBy))
                    writer.object("student") { record.student.write(to: &$0) }
                    if let open = openCase(record.student) { writer.object("case") { CaseHandlers.writeTag(open, into: &$0) } }
                }
            }
            next = end
            guard next == records.count else { return writer.take() }
            writer.closeArray()
            writer.field("schoolId", school)
            over = true
            return writer.finish()
        }
    }

    struct Inbox: Encodable, Sendable {
        let teacherId: String
        let unreadCount: Int
        let items: [DigestJSON]
    }

    @Sendable func inbox(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacherID = request.parameter("teacherId")
        try mayReadInbox(caller, of: teacherID)
        let unreadOnly = try request.booleanQuery("unread") ?? false
        let store = self.store
        let digests = try await store.blocking { try store.inbox(teacher: teacherID) }
        if let school = caller.roster.teachers[teacherID]?.schoolID { accessLog.record(caller, .inbox, school: school, target: teacherID) }
        let unread = digests.filter { !$0.read }
        let (roster, photos) = (caller.roster, self.photos)
        let photo = { @Sendable (school: String, student: String) in roster.student(school: school, id: student).flatMap(photos.url(for:)) }
        return .json(
            Inbox(
                teacherId: teacherID, unreadCount: unread.count, items: (unreadOnly ? unread : digests).map { DigestJSON($0, photo: photo) }
            ))
    }

    struct Unread: Encodable, Sendable {
        let teacherId: String
        let unreadCount: Int
    }

    /// `GET /v1/teachers/{teacherId}/inbox/unread`: the count alone, for the
    /// 알림함 badge from the moment the app opens. It names no student, so it
    /// is not a read of student data and leaves no access record.
    @Sendable func unread(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacherID = request.parameter("teacherId")
        try mayReadInbox(caller, of: teacherID)
        let store = self.store
        let count = try await store.blocking { try store.unreadCount(teacher: teacherID) }
        return .json(Unread(teacherId: teacherID, unreadCount: count))
    }

    @Sendable func markRead(_ request: Request, _ caller: Caller) async throws -> Response {
        let teacherID = request.parameter("teacherId")
        let digestID = request.parameter("digestId")
        try mayReadInbox(caller, of: teacherID)
        // An admin may read another teacher's 알림함 but not mark it read:
        // what is still unread is the teacher's own to know.
        if let teacher = caller.teacher, teacher.id != teacherID {
            throw HTTPError(status: 403, detail: "only teacher \(teacherID) marks their own 알림함 read")
        }
        let store = self.store
        guard try await store.blocking({ try store.markRead(teacher: teacherID, digestId: digestID) }) else {
            throw HTTPError.notFound("teacher \(teacherID) has no digest \(digestID)")
        }
        return .noContent
    }

    struct RunRequest: Sendable {
        let schoolId: String?
        let date: String?

        /// Either field may be left out; `null` is refused rather than read
        /// as "every school" or "today".
        init(json body: JSONFields) throws(FieldError) {
            for key in ["schoolId", "date"] where body.object[key] == .null {
                throw FieldError(field: key, message: "must be a string; leave it out for \(key == "date" ? "today" : "every school")")
            }
            schoolId = try body.optionalString("schoolId")
            date = try body.optionalString("date")
        }

        init() {
            schoolId = nil
            date = nil
        }
    }

    struct RunResponse: Encodable, Sendable {
        let runs: [DigestRunner.Run]
    }

    @Sendable func runDigests(_ request: Request, _ caller: Caller) async throws -> Response {
        let (roster, teacher) = (caller.roster, caller.teacher)
        let body = request.body.isEmpty ? RunRequest() : try request.json(RunRequest.init(json:))
        if let teacher {
            guard teacher.has(.admin) else { throw HTTPError(status: 403, detail: "only an admin may run digests") }
            if let schoolID = body.schoolId, schoolID != teacher.schoolID { throw HTTPError.otherSchool(teacher) }
        }
        var schools: [School]
        if let schoolID = body.schoolId {
            guard let school = roster.school(schoolID) else {
                throw HTTPError(FieldError(field: "schoolId", message: "unknown school '\(schoolID)'"), status: 422)
            }
            schools = [school]
        } else {
            schools = roster.schools.values.sorted { $0.id < $1.id }
        }
        if let teacher { schools = schools.filter { $0.id == teacher.schoolID } }
        var batch: [(School, String)] = []
        for school in schools {
            let today = runner.today(for: school)
            guard let date = body.date else {
                batch.append((school, today))
                continue
            }
            guard let problem = DigestRunner.dateProblem(date, today: today, pastDays: retention.windowDays) else {
                batch.append((school, date))
                continue
            }
            throw HTTPError(FieldError(field: "date", message: problem), status: 422)
        }
        do {
            let runs = try await runner.run(batch)
            return .json(RunResponse(runs: runs))
        } catch let timeout as DigestRunner.CutoffTimeout {
            logger.warning("digest run waited too long for the cutoff", ["schools": String(schools.count), "error": timeout.description])
            throw HTTPError.unavailable(
                "events acknowledged before the cutoff are not all applied yet; retry shortly", retryAfterSeconds: 5)
        }
    }

    // MARK: - Access

    /// A teacher reads their own inbox; an admin, any inbox of their school.
    func mayReadInbox(_ caller: Caller, of teacherID: String) throws(HTTPError) {
        let owner = caller.roster.teachers[teacherID]
        guard let teacher = caller.teacher else {
            guard owner != nil else { throw HTTPError.notFound("unknown teacher '\(teacherID)'") }
            return
        }
        // The same answer whether the teacher exists or not, so ids cannot be enumerated.
        guard let owner, teacher.id == owner.id || (teacher.has(.admin) && teacher.schoolID == owner.schoolID) else {
            throw HTTPError(status: 403, detail: "teacher \(teacher.id) may only read their own inbox")
        }
    }

    /// Every teacher of the school sees the school's day list today, as the
    /// notes' 명단조회 does (전체 / 우리 반 / 우리 학년; each read is in the
    /// access record, photos only of the students the teacher may see); other
    /// days, what `Teacher.mayReadOtherDays` allows.
    private func mayView(_ teacher: Teacher, grade: Int?, classNumber: Int?, today: Bool) throws(HTTPError) {
        if today || teacher.mayReadOtherDays(grade: grade, classNumber: classNumber) { return }
        if teacher.has(.volunteerDuty) {
            throw HTTPError(status: 403, detail: "a volunteer-duty teacher sees their own grade: grade=\(teacher.grade ?? 0)")
        }
        if teacher.has(.homeroom) {
            throw HTTPError(
                status: 403,
                detail: "a homeroom teacher sees their own class: grade=\(teacher.grade ?? 0)&classNumber=\(teacher.classNumber ?? 0)")
        }
        throw HTTPError(status: 403, detail: "gate teachers see the school's list of today only")
    }

    /// The longest period a list or an overview covers: a quarter.
    static let longestPeriod = 92

    /// `from` and `to` (school-local days, both or neither, not with
    /// `date`): a period of at most `longestPeriod` days, none after today.
    static func period(_ request: Request, today: String) throws(HTTPError) -> (from: String, to: String)? {
        let (from, to) = (request.query["from"], request.query["to"])
        guard from != nil || to != nil else { return nil }
        guard request.query["date"] == nil else { throw HTTPError(FieldError(field: "date", message: "is not given with from and to")) }
        guard let from, let to else {
            throw HTTPError(FieldError(field: from == nil ? "from" : "to", message: "is required with the other"))
        }
        guard let first = Timestamp.civilDay(from), let last = Timestamp.civilDay(to) else {
            throw HTTPError(FieldError(field: Timestamp.civilDay(from) == nil ? "from" : "to", message: "must be YYYY-MM-DD"))
        }
        let days = last - first + 1
        guard days >= 1 else { throw HTTPError(FieldError(field: "to", message: "must not be before from")) }
        guard days <= longestPeriod else {
            throw HTTPError(FieldError(field: "to", message: "must be at most \(longestPeriod) days after from (the period holds \(days))"))
        }
        guard to <= today else { throw HTTPError(FieldError(field: "to", message: "must not be after the school's today (\(today))")) }
        return (from, to)
    }

    /// A list as a spreadsheet reads it: one row per guidance, the header in
    /// Korean and English, fields as the export writes them (no formulas).
    static func csv(_ records: [GuidanceRecord], school: School, teacherName: (String) -> String?) -> String {
        let header = [
            "날짜(date)", "시각(time)", "학년(grade)", "반(class)", "번호(number)", "이름(name)", "사유(reason)", "상세(detail)",
            "기록(recordedBy)", "guidanceId"
        ]
        var lines = [header.map(DataProtectionHandlers.field).joined(separator: ",")]
        for record in records {
            let time = Timestamp.parse(record.occurredAt).map { Timestamp.local($0, in: school.timeZone).minuteOfDay } ?? 0
            lines.append(
                [
                    record.date, Roster.clock(time), String(record.student.grade),
                    String(record.student.classNumber), String(record.student.number), record.student.name, record.reason.label,
                    record.reason.detail ?? "", teacherName(record.recordedBy) ?? record.recordedBy, record.guidanceId
                ].map(DataProtectionHandlers.field).joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private func queryDate(_ request: Request) throws(HTTPError) -> String? {
        guard let text = request.query["date"] else { return nil }
        guard Timestamp.parseDate(text) != nil else {
            throw HTTPError(FieldError(field: "date", message: "must be YYYY-MM-DD"))
        }
        return text
    }
}
