import Access
import Common
import Guidance
import HTTP
import Store

/// 할 일 and the case file (issue 66). `GET …/cases`: the open cases the
/// caller holds (`GuidanceCase.isHeld`), urgent ones first, then those due
/// (확인 전, or their next date today or past), with counts for the tab;
/// an admin's `?scope=school` gives every open case of the school, and
/// `?only=counts` the counts alone (the tab's badge as the app opens: no
/// student named, nothing in the access record). `GET
/// …/cases/{caseId}`: one case with its history and the records it counts,
/// for whoever may read the student's record or holds the case. Both are
/// in the access record (they name students).
struct CaseHandlers: Sendable {
    let store: SQLStore
    let accessLog: AccessLog
    let clock: @Sendable () -> Double

    func routes(into router: inout GuardedRouter) {
        let readers = Access.school(roles: [.homeroom, .volunteerDuty, .admin])
        router.get("/v1/schools/{schoolId}/cases", readers, todo)
        router.get("/v1/schools/{schoolId}/cases/{caseId}", readers, file)
        router.get("/v1/schools/{schoolId}/students/{studentId}/standing", Access.school(roles: Set(Teacher.Role.allCases)), standing)
    }

    /// The face check's one line (`최근 7일 2회 · 상담 예정`): the student's
    /// active records of the last 7 school-local days and their open case,
    /// for any teacher of the school (the gate's is the one who needs it:
    /// the third time in a week looks like the first without it). In the
    /// access record as a look-up of the student.
    @Sendable func standing(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let studentID = request.parameter("studentId")
        guard let student = caller.roster.student(school: school.id, id: studentID) else {
            throw HTTPError.notFound("no student '\(studentID)' at this school")
        }
        let today = Timestamp.localDate(clock(), in: school.timeZone)
        let store = self.store
        let (frequencies, cases) = try await store.blocking {
            (
                try store.frequencies(school: school.id, date: today, grade: student.grade, classNumber: student.classNumber),
                try store.cases(school: school.id, students: [student.id])
            )
        }
        accessLog.record(caller, .student, school: school.id, target: student.id)
        var writer = JSONWriter(capacity: 256)
        writer.field("studentId", student.id)
        writer.field("date", today)
        writer.field("last7Days", frequencies[student.id]?.last7Days ?? 0)
        if let open = cases.first {
            writer.object("case") { CaseHandlers.writeTag(open, into: &$0) }
        } else {
            writer.field("case", nil as String?)
        }
        return .json(written: writer.finish())
    }

    @Sendable func todo(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let scope = request.query["scope"] ?? "mine"
        guard scope == "mine" || scope == "school" else {
            throw HTTPError(FieldError(field: "scope", message: "must be mine or school"))
        }
        guard let teacher = caller.teacher else { throw HTTPError(status: 403, detail: "할 일 is a teacher's: sign in as one") }
        if scope == "school" && !teacher.has(.admin) {
            throw HTTPError(status: 403, detail: "every case of the school is for admins; leave scope out for your own")
        }
        let store = self.store
        let open = try await store.blocking { try store.cases(school: school.id) }
        let today = Timestamp.localDate(clock(), in: school.timeZone)
        let rules = caller.roster.rules[school.id] ?? []
        var items: [(item: GuidanceCase, student: Student?, urgent: Bool, due: Bool)] = []
        for item in open {
            let student = caller.roster.student(school: school.id, id: item.studentId)
            if scope == "mine" {
                guard let student, item.isHeld(by: teacher, seat: (student.grade, student.classNumber)) else { continue }
            }
            let urgent = item.ruleKey.map { key in rules.first { $0.key == key }?.urgent ?? false } ?? false
            let due = item.state == .new || (item.nextDate.map { $0 <= today } ?? false)
            items.append((item, student, urgent, due))
        }
        // Urgent first, then due, then the newest change (the store's order).
        items = items.enumerated().sorted { a, b in
            (a.element.urgent ? 0 : 1, a.element.due ? 0 : 1, a.offset) < (b.element.urgent ? 0 : 1, b.element.due ? 0 : 1, b.offset)
        }.map(\.element)
        let countsOnly = request.query["only"] == "counts"
        if request.query["only"] != nil && !countsOnly { throw HTTPError(FieldError(field: "only", message: "must be counts")) }
        if !items.isEmpty && !countsOnly { accessLog.record(caller, .cases, school: school.id, target: "scope=\(scope)") }
        var writer = JSONWriter(capacity: 256 + items.count * 320)
        writer.field("schoolId", school.id)
        writer.field("today", today)
        writer.field("scope", scope)
        writer.object("counts") { counts in
            counts.field("open", items.count)
            counts.field("due", items.filter(\.due).count)
            counts.field("urgent", items.filter(\.urgent).count)
        }
        if countsOnly { return .json(written: writer.finish()) }
        writer.array("cases", items) { writer, entry in
            CaseHandlers.write(entry.item, student: entry.student, roster: caller.roster, into: &writer)
            writer.field("urgent", entry.urgent)
            writer.field("due", entry.due)
        }
        return .json(written: writer.finish())
    }

    @Sendable func file(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let id = request.parameter("caseId").lowercased()
        guard RandomID.isUUID(id) else { throw HTTPError(FieldError(field: "caseId", message: "must be a UUID")) }
        let store = self.store
        guard let (item, counted, history) = try await store.blocking({ try store.guidanceCase(school: school.id, id: id) }) else {
            throw HTTPError.notFound("no case '\(id)' at this school")
        }
        let student = caller.roster.student(school: school.id, id: item.studentId)
        if let teacher = caller.teacher,
            !teacher.mayReadOtherDays(grade: student?.grade, classNumber: student?.classNumber),
            student.map({ item.isHeld(by: teacher, seat: ($0.grade, $0.classNumber)) }) != true
        {
            throw HTTPError(
                status: 403,
                detail: "a case is for those who hold it, the student's homeroom teacher, the grade's volunteer-duty teacher and admins")
        }
        let records = try await store.blocking { try store.records(school: school.id, student: item.studentId) }
        accessLog.record(caller, .caseFile, school: school.id, target: item.studentId)
        var writer = JSONWriter(capacity: 1024 + history.count * 256)
        CaseHandlers.write(item, student: student, roster: caller.roster, into: &writer)
        // What it counts: guidances (a rule's case), or 불참 records (교내봉사's).
        let guidances = records.guidances.filter { counted.contains($0.record.guidanceId) }.map {
            (
                id: $0.record.guidanceId, date: $0.record.date, at: $0.record.occurredAt, reason: $0.record.reason.label,
                detail: $0.record.reason.detail, gone: $0.deletedAt != nil
            )
        }
        let missed = records.services.filter { counted.contains($0.record.serviceId) }.map {
            (
                id: $0.record.serviceId, date: $0.record.date, at: $0.record.recordedAt, reason: "교내봉사 불참", detail: $0.record.note,
                gone: $0.withdrawnAt != nil
            )
        }
        writer.array("records", guidances + missed) { writer, record in
            writer.field("guidanceId", record.id)
            writer.field("date", record.date)
            writer.field("occurredAt", record.at)
            writer.field("reason", record.reason)
            writer.field("detail", record.detail)
            writer.field("deleted", record.gone)
        }
        // Whom it may be handed to: the teachers the ingest accepts for a
        // hand-over (those who may read the student's record), not the one
        // who holds it, nor the caller.
        let candidates = caller.roster.teachers.values.filter { other in
            other.schoolID == school.id && other.id != item.holder && other.id != caller.teacher?.id
                && student.map { other.mayReadOtherDays(grade: $0.grade, classNumber: $0.classNumber) } == true
        }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
        writer.array("handOverTo", candidates) { writer, teacher in
            writer.field("teacherId", teacher.id)
            writer.field("name", teacher.name)
        }
        writer.array("history", history) { writer, line in
            writer.field("stepId", line.stepId)
            writer.field("action", line.action)
            writer.field("state", line.state)
            writer.field("stateLabel", line.state.flatMap(GuidanceCase.State.init(rawValue:))?.label)
            writer.field("nextDate", line.nextDate)
            writer.field("to", line.to)
            writer.field("toName", line.to.flatMap { caller.roster.teachers[$0]?.name })
            writer.field("note", line.note)
            writer.field("by", line.by.isEmpty ? nil : line.by)
            writer.field("byName", caller.roster.teachers[line.by]?.name)
            writer.field("at", line.at)
            writer.field("refused", line.refused)
            if line.action == CaseStep.Action.guardianNotice.name { writer.field("notice", line.notice) }
        }
        return .json(written: writer.finish())
    }

    /// The contract's `CaseTag`: a student's open case in a list row or the face check's line.
    static func writeTag(_ item: GuidanceCase, into writer: inout JSONWriter) {
        writer.field("caseId", item.caseId)
        writer.field("label", item.label)
        writer.field("state", item.state.rawValue)
        writer.field("stateLabel", item.state.label)
    }

    /// A case as both answers give it: the student as the roster seats
    /// them now (null once they left it), where it stands and who holds it.
    static func write(_ item: GuidanceCase, student: Student?, roster: Roster, into writer: inout JSONWriter) {
        writer.field("caseId", item.caseId)
        writer.field("origin", item.origin.rawValue)
        writer.field("label", item.label)
        writer.field("state", item.state.rawValue)
        writer.field("stateLabel", item.state.label)
        writer.field("holder", item.holder)
        writer.field("holderName", item.holder.flatMap { roster.teachers[$0]?.name })
        writer.field("roles", Teacher.Role.allCases.filter(item.roles.contains).map(\.rawValue).joined(separator: "+"))
        writer.field("nextDate", item.nextDate)
        writer.field("openedAt", item.openedAt)
        writer.field("changedAt", item.changedAt)
        if let student {
            writer.object("student") { writer in
                writer.field("studentId", student.id)
                writer.field("grade", student.grade)
                writer.field("classNumber", student.classNumber)
                writer.field("number", student.number)
                writer.field("name", student.name)
            }
        } else {
            writer.field("student", nil as String?)
        }
    }
}
