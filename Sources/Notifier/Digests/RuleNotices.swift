import Common
import Guidance
import Store

/// Tells teachers that a student crossed one of the school's rules
/// (`rules.csv`), or that a deletion withdrew the crossing, within seconds
/// of the event: the materializer decides crossings as it applies events
/// (`SQLStore.decideCrossings`), and this loop writes each change it finds
/// untold to the inboxes of the teachers the rule names, with deliveries
/// by their channels (`SQLStore.tellCrossings`, once across replicas).
final class RuleNotices: Sendable {
    private let rosters: LiveRoster
    private let store: SQLStore
    private let dispatcher: Dispatcher
    private let clock: @Sendable () -> Double
    private let metrics: Metrics
    private let logger: Logger

    init(
        roster: LiveRoster, store: SQLStore, dispatcher: Dispatcher, clock: @escaping @Sendable () -> Double, metrics: Metrics,
        logger: Logger
    ) {
        rosters = roster
        self.store = store
        self.dispatcher = dispatcher
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// How often a replica looks for crossings untold: a replica that
    /// stopped between applying a crossing and telling it leaves it to the
    /// others, told within this.
    static let period: Duration = .seconds(5)

    /// The loop: woken by this replica's commits that changed a crossing,
    /// and every `period` for another replica's, or one whose notices a
    /// stop or a store failure left untold.
    func part(every period: Duration, clock timer: any Clock<Duration>) -> Part {
        Loop(
            "rule notices", every: period, bell: store.crossingsChanged,
            wokenBy: "the materializer's commit that changed a rule crossing; the period: other replicas' commits, and retries",
            clock: timer
        ) { [self] in await turn() }.part()
    }

    func turn() async {
        let roster = rosters.current
        let now = clock()
        let store = self.store
        let dispatcher = self.dispatcher
        do {
            let digests = try await store.blocking { () throws(StoreError) -> [Digest] in
                let schools = try store.untoldSchools()
                guard !schools.isEmpty else { return [] }
                // Each teacher's 설정, as for their lists; an urgent rule's notice is never held.
                let preferences = try store.deliveryPreferences(schools: schools)
                let today = { (school: String) in roster.school(school).map { Timestamp.localDate(now, in: $0.timeZone) } ?? "" }
                return try store.tellCrossings(schools: schools, createdAt: Timestamp.format(now), today: today) { crossing in
                    RuleNotices.notices(of: crossing, roster: roster, now: now)
                } targets: { digest, crossing in
                    // Urgent as the rule's row in rules.csv says now.
                    let urgent = roster.rules[crossing.schoolId]?.first { $0.key == crossing.ruleKey }?.urgent ?? false
                    return dispatcher.targets(for: digest, roster: roster, preferences: preferences, urgent: urgent, now: now)
                }
            }
            guard !digests.isEmpty else { return }
            dispatcher.written(digests, roster: roster)
            metrics.increment(
                "notifier_rule_notices_total", help: "Notices of rule crossings (and their withdrawals) written to inboxes.",
                by: Double(digests.count))
            for school in Set(digests.map(\.schoolId)).sorted() {
                logger.info(
                    "rule crossings told", ["school": school, "notices": String(digests.count { $0.schoolId == school })])
            }
        } catch {
            logger.error("could not tell rule crossings; trying again at the next turn", ["error": "\(error)"])
        }
    }

    /// What each teacher the rule names is told of `crossing`: nothing for a
    /// crossing older than its rule's window (a school that adds a rule is
    /// not told of last term; a withdrawal then would withdraw what nobody
    /// was told), nor for a student no longer stored or seated. The
    /// teachers are those of the student's seat now.
    static func notices(of crossing: RuleCrossing, roster: Roster, now: Double) -> [RuleNotice] {
        guard let school = roster.school(crossing.schoolId) else { return [] }
        let rule = crossing.rule
        let today = Timestamp.localDate(now, in: school.timeZone)
        guard let current = Timestamp.civilDay(today), let crossed = Timestamp.civilDay(crossing.date), crossed > current - rule.days
        else { return [] }
        let seated = roster.student(school: school.id, id: crossing.studentId)
        guard
            let student = seated.map({
                StudentRef(studentId: $0.id, grade: $0.grade, classNumber: $0.classNumber, number: $0.number, name: $0.name)
            }) ?? crossing.records.last?.student
        else { return [] }
        var teachers: [Teacher] = []
        for role in SchoolRule.notifiable where rule.notify.contains(role) {
            teachers += roster.teachers(of: school.id, role: role).filter { teacher in
                switch role {
                case .homeroom: teacher.grade == student.grade && teacher.classNumber == student.classNumber
                case .volunteerDuty: teacher.grade == student.grade
                case .admin, .gate: true
                }
            }
        }
        var seen: Set<String> = []
        teachers = teachers.filter { seen.insert($0.id).inserted }
        let words = Words(crossing: crossing, school: school, student: student)
        let entries =
            crossing.active
            ? crossing.records.map {
                DigestEntry(guidanceId: $0.guidanceId, student: student, reason: $0.reason, occurredAt: $0.occurredAt, change: .added)
            }
            : []
        let counts = entries.reduce(into: [String: Int]()) { $0[$1.reason.code, default: 0] += 1 }
        return teachers.map { teacher in
            RuleNotice(
                teacherId: teacher.id, grade: student.grade, classNumber: student.classNumber, subject: words.subject, text: words.text,
                entries: entries, counts: counts)
        }
    }

    /// A notice in the words teachers use: it names the rule's label and
    /// measure, and says that the rule only flags. The student is named by
    /// seat: the name is in the entries only (the app shows it beside
    /// them), never in a subject a phone's lock screen shows, and erasure
    /// finds it where it finds every other.
    struct Words {
        let crossing: RuleCrossing
        let school: School
        let student: StudentRef

        /// "2학년 3반 5번"
        private var seat: String { "\(student.grade)학년 \(student.classNumber)반 \(student.number)번" }

        /// "최근 7일 동안 지도 3회"; "최근 7일 동안 복장 불량 3회"
        private var measure: String {
            let rule = crossing.rule
            let what = rule.reason.map { school.reason($0)?.label ?? $0 } ?? "지도"
            return "최근 \(rule.days)일 동안 \(what) \(rule.count)회"
        }

        var subject: String {
            crossing.active
                ? "[\(school.name)] \(crossing.rule.label): \(seat) (\(measure))"
                : "[\(school.name)] 철회 — \(crossing.rule.label): \(seat)"
        }

        var text: String {
            guard crossing.active else {
                return [
                    "\(seat) 학생의 '\(crossing.rule.label)' 알림을 철회합니다.",
                    "기록이 지워져 \(measure)에 미치지 않습니다."
                ].joined(separator: "\n")
            }
            let day = DigestText(
                school: school, date: crossing.date,
                recipient: Recipient(teacherId: "", scope: .rule, grade: student.grade, classNumber: nil),
                revision: 1, entries: [], counts: [:])
            var lines = [
                "\(seat) 학생이 학교 규칙 '\(crossing.rule.label)'의 기준에 이르렀습니다: \(measure).",
                "규칙은 알리기만 합니다. 어떻게 할지는 선생님이 정합니다.",
                ""
            ]
            for record in crossing.records {
                let entry = DigestEntry(
                    guidanceId: record.guidanceId, student: student, reason: record.reason, occurredAt: record.occurredAt, change: .added)
                lines.append("• \(Timestamp.koreanDay(record.date)) \(day.time(entry)) — \(day.reason(entry))")
            }
            return lines.joined(separator: "\n")
        }
    }
}
