import Guidance
import Store

/// Decides what each recipient must be told about a school's day: the
/// difference between the active guidances and what the recipient already
/// has. The first revision lists every guidance; later ones only the changes.
/// Pure: the store calls it inside its transaction.
struct DigestPlanner: Sendable {
    let roster: Roster

    /// A recipient and how to list what they are to be told: each list is
    /// made when its digest is, and dropped with it (a big school's 80,000
    /// entries were held twice over, as lists and as digests).
    private typealias List = (recipient: Recipient, entries: @Sendable () -> [DigestEntry])

    /// Every digest of the day, made at once.
    func plan(school: School, date: String, state: DeliveryState, createdAt: String) -> [Digest] {
        drafts(school: school, date: date, state: state, createdAt: createdAt).compactMap { $0() }
    }

    /// Each recipient's digest of the day, made with its list when the run
    /// comes to it (`DeliveryRun.Draft`).
    func drafts(school: School, date: String, state: DeliveryState, createdAt: String) -> [DeliveryRun.Draft] {
        var lists = dayLists(school: school, state: state)
        let volunteerDuty = roster.teachers(of: school.id, role: .volunteerDuty).compactMap { teacher in
            teacher.grade.map { (teacher.id, $0) }
        }
        // The week's first school day: each volunteer-duty teacher's weekly 봉사 명단.
        if school.calendar.isWeekStart(date) {
            for (teacher, grade) in volunteerDuty {
                lists.append(
                    (
                        Recipient(teacherId: teacher, scope: .service, grade: grade, classNumber: nil),
                        { owing(state, school: school, grade: grade) }
                    ))
            }
        }
        // Sessions of 교내봉사 past their due date, missed or seated after
        // it: the homeroom teacher's class, the volunteer-duty teacher's
        // grade (who runs the sittings), the admins' school.
        let overdue = overdueEntries(state, school: school)
        for teacher in roster.teachers(of: school.id, role: .homeroom) {
            guard let grade = teacher.grade, let classNumber = teacher.classNumber else { continue }
            lists.append(
                (
                    Recipient(teacherId: teacher.id, scope: .overdue, grade: grade, classNumber: classNumber),
                    { overdue.filter { $0.student.grade == grade && $0.student.classNumber == classNumber } }
                ))
        }
        for (teacher, grade) in volunteerDuty {
            lists.append(
                (
                    Recipient(teacherId: teacher, scope: .overdue, grade: grade, classNumber: nil),
                    { overdue.filter { $0.student.grade == grade } }
                ))
        }
        for teacher in roster.teachers(of: school.id, role: .admin) {
            lists.append((Recipient(teacherId: teacher.id, scope: .overdue, grade: 0, classNumber: nil), { overdue }))
        }
        return lists.map { recipient, entries in
            { digest(recipient, current: entries(), school: school, date: date, state: state, createdAt: createdAt) }
        }
    }

    /// The day's lists of `teachers` who were told nothing of the day yet:
    /// each one's list at their own time, before the school's. The school's
    /// run tells them the rest as an 정정.
    func earlyPlan(school: School, date: String, state: DeliveryState, teachers: Set<String>, createdAt: String) -> [Digest] {
        dayLists(school: school, state: state, of: teachers).compactMap { recipient, entries in
            guard state.revisions[recipient] == nil else { return nil }
            return digest(recipient, current: entries(), school: school, date: date, state: state, createdAt: createdAt)
        }
    }

    /// The day's lists: each homeroom teacher's class, each volunteer-duty
    /// teacher's grade (only `teachers`' when given).
    private func dayLists(school: School, state: DeliveryState, of teachers: Set<String>? = nil) -> [List] {
        var lists: [List] = []
        let chosen = { (teacher: Teacher) in teachers?.contains(teacher.id) ?? true }
        for teacher in roster.teachers(of: school.id, role: .homeroom) where chosen(teacher) {
            guard let grade = teacher.grade, let classNumber = teacher.classNumber else { continue }
            let recipient = Recipient(teacherId: teacher.id, scope: .class, grade: grade, classNumber: classNumber)
            lists.append((recipient, { dayEntries(state, grade: grade, classNumber: classNumber) }))
        }
        for teacher in roster.teachers(of: school.id, role: .volunteerDuty) where chosen(teacher) {
            guard let grade = teacher.grade else { continue }
            let recipient = Recipient(teacherId: teacher.id, scope: .grade, grade: grade, classNumber: nil)
            lists.append((recipient, { dayEntries(state, grade: grade, classNumber: nil) }))
        }
        return lists
    }

    /// What the recipient was not told yet, and what it was told that no
    /// longer holds; nil when nothing changed.
    private func digest(
        _ recipient: Recipient, current: [DigestEntry], school: School, date: String, state: DeliveryState, createdAt: String
    ) -> Digest? {
        let told = state.reported[recipient] ?? Told()
        let currentKeys = Set(current.map { $0.key(in: recipient.scope) })
        // What was told and no longer holds: as told, or (an active guidance not
        // kept, whose list it left) as the day's records have it now.
        let gone = told.keys.subtracting(currentKeys).compactMap { key in
            told.kept[key] ?? state.active.first { $0.guidanceId == key }.map { entry($0, state) }
        }
        let entries =
            (current.filter { !told.keys.contains($0.key(in: recipient.scope)) }
            + gone.map { removed($0, scope: recipient.scope, state) })
            .sorted(by: DigestPlanner.order)
        guard !entries.isEmpty else { return nil }
        let revision = (state.revisions[recipient] ?? 0) + 1
        var counts: [String: Int] = [:]
        for entry in entries where entry.change == .added && (recipient.scope == .class || recipient.scope == .grade) {
            counts[entry.reason.code, default: 0] += 1
        }
        let text = DigestText(school: school, date: date, recipient: recipient, revision: revision, entries: entries, counts: counts)
        return Digest(
            digestId: Digest.id(school: school.id, date: date, recipient: recipient, revision: revision),
            teacherId: recipient.teacherId, schoolId: school.id, date: date, scope: recipient.scope,
            grade: recipient.grade, classNumber: recipient.classNumber, revision: revision, createdAt: createdAt,
            read: false, subject: text.subject, text: text.body, entries: entries, counts: counts)
    }

    /// The day's active guidances in a grade (and class), each with the
    /// student's counts and service as of the day.
    private func dayEntries(_ state: DeliveryState, grade: Int, classNumber: Int?) -> [DigestEntry] {
        state.active.filter { $0.student.grade == grade && (classNumber == nil || $0.student.classNumber == classNumber) }.map {
            entry($0, state)
        }
    }

    /// A day list's entry of an active guidance.
    private func entry(_ record: GuidanceRecord, _ state: DeliveryState) -> DigestEntry {
        DigestEntry(
            guidanceId: record.guidanceId, student: record.student, reason: record.reason, occurredAt: record.occurredAt,
            change: .added,
            frequency: frequency(record.student, state), service: state.accounts[record.student.studentId]?.standing)
    }

    /// The grade's students (in the roster now) who still owe service as of
    /// the day, each with their newest guidance.
    private func owing(_ state: DeliveryState, school: School, grade: Int) -> [DigestEntry] {
        state.accounts.values.compactMap { account in
            guard account.standing.outstanding > 0, let last = account.lastGuidance,
                let student = roster.student(school: school.id, id: account.studentId), student.grade == grade
            else { return nil }
            return DigestEntry(
                guidanceId: last.guidanceId, student: StudentRef(student),
                reason: ReasonRef(code: last.reasonCode, label: school.reason(last.reasonCode)?.label ?? last.reasonCode, detail: nil),
                occurredAt: last.occurredAt, change: .added, service: account.standing)
        }
    }

    /// Each overdue session under its student's seat now (the guidance's
    /// when the student left the roster).
    private func overdueEntries(_ state: DeliveryState, school: School) -> [DigestEntry] {
        state.overdue.map { duty, guidance in
            DigestEntry(
                guidanceId: guidance.guidanceId,
                student: roster.student(school: school.id, id: duty.studentId).map(StudentRef.init) ?? guidance.student,
                reason: guidance.reason, occurredAt: guidance.occurredAt, change: .added, overdue: duty)
        }
    }

    /// Every listed guidance is active, so its student has at least one.
    private func frequency(_ student: StudentRef, _ state: DeliveryState) -> Frequency {
        state.frequencies[student.studentId] ?? Frequency(last7Days: 0, last30Days: 0)
    }

    /// An entry told before, taken back as it was told, with the student's
    /// counts and service as they are now (the cancelled guidance no longer in them).
    private func removed(_ told: DigestEntry, scope: DigestScope, _ state: DeliveryState) -> DigestEntry {
        DigestEntry(
            guidanceId: told.guidanceId, student: told.student, reason: told.reason, occurredAt: told.occurredAt, change: .removed,
            frequency: scope == .service ? nil : frequency(told.student, state),
            service: state.accounts[told.student.studentId]?.standing ?? CommunityServiceStanding(owed: 0, served: 0))
    }

    static func order(_ a: DigestEntry, _ b: DigestEntry) -> Bool {
        (a.student.grade, a.student.classNumber, a.student.number, a.occurredAt, a.guidanceId)
            < (b.student.grade, b.student.classNumber, b.student.number, b.occurredAt, b.guidanceId)
    }
}
