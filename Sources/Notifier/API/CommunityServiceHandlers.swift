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
        router.get("/v1/schools/{schoolId}/service/sittings", recorders, sittings)
        router.get("/v1/schools/{schoolId}/service/plan", recorders, plan)
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
        let accounts = try await store.blocking { try store.communityServiceAccounts(school: school.id, asOf: asOf) }
        // The schedule as it stands now (a day asked for shows its accounts, not that day's schedule).
        let duties =
            school.service.isEmpty || asOf != nil
            ? [:] : Dictionary(grouping: try await store.blocking { try store.duties(school: school.id) }, by: \.studentId)
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
                school: school, today: today, asOf: asOf, items, duties: duties, photo: photos.url(for:),
                teacherName: { roster.teachers[$0]?.name }))
    }

    static func json(
        school: School, today: String, asOf: String? = nil, _ items: [(Student, CommunityServiceAccount)],
        duties: [String: [CommunityServiceDuty]] = [:], photo: (Student) -> String?, teacherName: (String) -> String?
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
            if !school.service.isEmpty && asOf == nil {
                let own = duties[student.id] ?? []
                // The session that says where the student stands: an overdue one, else the next open one.
                let open = own.filter { $0.servedOn == nil }
                let headline = open.first { $0.state(today: today) == .overdue } ?? open.first ?? own.last
                writer.field("state", headline.map { $0.state(today: today).rawValue })
                writer.field("dueDate", headline?.dueDate)
                CommunityServiceHandlers.write(slot: headline?.slot, to: &writer)
                writer.array("duties", own) { writer, duty in
                    duty.write(to: &writer)
                    writer.field("state", duty.state(today: today).rawValue)
                }
                let counts = CommunityServiceCounts(account.standing, duties: own)
                writer.field("missed", counts.missed)
                writer.field("late", counts.late)
            }
            writer.array("services", account.records) { writer, record in
                writer.field("serviceId", record.serviceId)
                writer.field("date", record.date)
                writer.field("sessions", record.sessions)
                writer.field("outcome", record.outcome.rawValue)
                writer.field("note", record.note)
                writer.field("recordedBy", record.recordedBy)
                writer.field("recordedByName", teacherName(record.recordedBy))
                writer.field("recordedAt", record.recordedAt)
            }
        }
        return writer.finish()
    }

    static func write(slot: SlotTime?, to writer: inout JSONWriter) {
        guard let slot else { return writer.field("slot", nil as String?) }
        writer.object("slot") { writer in
            writer.field("date", slot.date)
            writer.field("time", slot.time)
            writer.field("place", slot.place)
        }
    }

    /// `GET /v1/schools/{schoolId}/service/sittings?date=&grade=`: 오늘
    /// 교내봉사, the sittings of a day (the school's today unless asked, at
    /// most 60 days away) and who is due at each, served (완료) or missed
    /// (불참) that day. A volunteer-duty teacher sees their grade, an admin
    /// the school or the grade asked for.
    @Sendable func sittings(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        var grade = try request.integerQuery("grade", in: Student.seatRange)
        if let teacher = caller.teacher, !teacher.has(.admin) {
            if grade != nil && grade != teacher.grade {
                throw HTTPError(status: 403, detail: "a volunteer-duty teacher sees their own grade: grade=\(teacher.grade ?? 0)")
            }
            grade = teacher.grade
        }
        let now = Timestamp.localDate(clock(), in: school.timeZone)
        let today =
            try request.query["date"].map { (date) throws(HTTPError) -> String in
                guard let asked = Timestamp.civilDay(date), let current = Timestamp.civilDay(now), abs(asked - current) <= 60 else {
                    throw HTTPError(FieldError(field: "date", message: "must be YYYY-MM-DD within 60 days of the school's today (\(now))"))
                }
                return date
            } ?? now
        let store = self.store
        let (duties, missed, added) = try await store.blocking {
            (
                try store.duties(school: school.id, sittingOn: today), try store.missedSittings(school: school.id, on: today),
                try store.addedSittings(school: school.id, from: today, through: today)
            )
        }
        let roster = caller.roster
        struct Row {
            let student: Student
            let dutyId: String
            let state: String
            let serviceId: String?
            let dueDate: String?
            let sitting: SlotTime?
            /// Where a missed session went.
            var next: SlotTime?
        }
        var rows: [Row] = []
        for duty in duties {
            guard let student = roster.student(school: school.id, id: duty.studentId), grade == nil || student.grade == grade else {
                continue
            }
            let sitting = duty.slot.flatMap { $0.date == today ? $0 : nil }
            rows.append(
                Row(
                    student: student, dutyId: duty.dutyId,
                    state: duty.servedOn != nil ? "served" : today < now ? "unconfirmed" : "scheduled",
                    serviceId: duty.serviceId, dueDate: duty.dueDate, sitting: sitting))
        }
        for miss in missed {
            guard let student = roster.student(school: school.id, id: miss.studentId), grade == nil || student.grade == grade else {
                continue
            }
            rows.append(
                Row(
                    student: student, dutyId: miss.dutyId, state: "missed", serviceId: miss.serviceId, dueDate: nil, sitting: miss.slot,
                    next: miss.next))
        }
        // The day's sittings, weekly and added, each with its rows; rows of another sitting (served early) after them.
        let before = Timestamp.civilDay(today).map { Timestamp.dateString(civil: $0 - 1) } ?? today
        let sittings = Array(
            school.service.sittings(after: before, calendar: school.calendar, added: added).prefix { $0.0.date == today }
        ).map { (time: $0.0.time, place: $0.0.place, capacity: Optional($0.capacity)) }
        var groups: [(time: String?, place: String?, capacity: Int?, rows: [Row])] = sittings.map { sitting in
            (sitting.time, sitting.place, sitting.capacity, rows.filter { $0.sitting?.time == sitting.time })
        }
        let elsewhere = rows.filter { row in !sittings.contains { $0.time == row.sitting?.time } }
        if !elsewhere.isEmpty { groups.append((nil, nil, nil, elsewhere)) }
        accessLog.record(caller, .service, school: school.id, target: "sittings=\(today)" + (grade.map { "&grade=\($0)" } ?? ""))
        var writer = JSONWriter(capacity: 256 + rows.count * 300)
        writer.field("schoolId", school.id)
        writer.field("today", now)
        writer.field("date", today)
        writer.field("schoolDay", school.calendar.isSchoolDay(today))
        writer.field("dayOff", school.calendar.dayOff(today))
        writer.array("sittings", groups) { writer, group in
            writer.field("time", group.time)
            writer.field("place", group.place)
            if let capacity = group.capacity { writer.field("capacity", capacity) } else { writer.field("capacity", nil as String?) }
            writer.array(
                "items",
                group.rows.sorted {
                    ($0.student.grade, $0.student.classNumber, $0.student.number) < (
                        $1.student.grade, $1.student.classNumber, $1.student.number
                    )
                }
            ) { writer, row in
                writer.object("student") { StudentRef(row.student).write(to: &$0) }
                writer.field("photoUrl", photos.url(for: row.student))
                writer.field("dutyId", row.dutyId)
                writer.field("state", row.state)
                writer.field("serviceId", row.serviceId)
                writer.field("dueDate", row.dueDate)
                if row.state == "missed" { CommunityServiceHandlers.write(slot: row.next, to: &writer) }
            }
        }
        return .json(written: writer.finish())
    }

    /// `GET /v1/schools/{schoolId}/service/plan`: the school's 교내봉사 room
    /// for this week and the next three: per week, the seats its sittings
    /// (weekly and added) offer from today, those taken, the open sessions
    /// due that week and how many of them have no seat by their due date
    /// (`short`). Sittings are the school's, so the plan is too.
    @Sendable func plan(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let today = Timestamp.localDate(clock(), in: school.timeZone)
        let day = Timestamp.civilDay(today) ?? 0
        let monday = day - Timestamp.daysSinceMonday(civil: day)
        let last = Timestamp.dateString(civil: monday + 27)
        let store = self.store
        let (added, plan) = try await store.blocking {
            (
                try store.addedSittings(school: school.id, from: today, through: last),
                try store.servicePlan(school: school.id, from: today, through: last)
            )
        }
        let before = Timestamp.dateString(civil: day - 1)
        let sittings = Array(school.service.sittings(after: before, calendar: school.calendar, added: added).prefix { $0.0.date <= last })
        let addedTimes = Set(added.values.joined().map { "\($0.0.date) \($0.0.time)" })
        var writer = JSONWriter(capacity: 512 + sittings.count * 128)
        writer.field("schoolId", school.id)
        writer.field("today", today)
        writer.array("weeks", Array(0..<4)) { writer, week in
            let start = Timestamp.dateString(civil: monday + week * 7)
            let end = Timestamp.dateString(civil: monday + week * 7 + 6)
            let own = sittings.filter { $0.0.date >= start && $0.0.date <= end }
            let due = plan.due.filter { $0.date >= start && $0.date <= end }
            writer.field("start", start)
            writer.field("seats", own.reduce(0) { $0 + $1.capacity })
            writer.field("taken", own.reduce(0) { $0 + min($1.capacity, plan.taken["\($1.0.date) \($1.0.time)"] ?? 0) })
            writer.field("due", due.count)
            writer.field("short", due.count { $0.late })
            writer.array("sittings", own) { writer, sitting in
                writer.field("date", sitting.0.date)
                writer.field("time", sitting.0.time)
                writer.field("place", sitting.0.place)
                writer.field("capacity", sitting.capacity)
                writer.field("taken", plan.taken["\(sitting.0.date) \(sitting.0.time)"] ?? 0)
                writer.field("added", addedTimes.contains("\(sitting.0.date) \(sitting.0.time)"))
            }
        }
        return .json(written: writer.finish())
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
