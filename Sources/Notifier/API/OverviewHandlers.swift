import Access
import Common
import Foundation
import Guidance
import HTTP
import Store

/// 현황: how a week or a month went, for what the teacher may see (an admin
/// the school, a volunteer-duty teacher the grade, a homeroom teacher the
/// class): the total and each figure against the same days of the period
/// before, the last four weeks by school day, by reason, by grade or class, by
/// hour, and the students with the most records. Counted from the same
/// active guidances the list API gives for the period (`from`…`to`), so the
/// two agree. Each read is in the access record (`overview`).
struct OverviewHandlers: Sendable {
    let store: SQLStore
    let accessLog: AccessLog
    let clock: @Sendable () -> Double

    func routes(into router: inout GuardedRouter) {
        router.get("/v1/schools/{schoolId}/overview", Access.school(roles: [.homeroom, .volunteerDuty, .admin]), overview)
    }

    /// Days as counted here: `YYYY-MM-DD` and its number from the epoch.
    struct Days: Sendable, Equatable {
        let from: String
        let to: String

        init(from: String, to: String) {
            self.from = from
            self.to = to
        }

        init(civil first: Int, _ last: Int) {
            from = Timestamp.dateString(civil: first)
            to = Timestamp.dateString(civil: last)
        }

        func contains(_ date: String) -> Bool { from <= date && date <= to }
    }

    typealias Periods = (current: Days, previous: Days, chart: Days, baseline: Days)

    /// The period holding `date` (a week from Monday, or a month), its days
    /// up to `today`; the same number of days of the period before; the
    /// four weeks the chart shows, ending on the period's last day counted;
    /// and the four weeks before the period, against which a rise is one.
    static func periods(_ kind: String, date: String, today: String) -> Periods? {
        guard let (year, month, day) = Timestamp.parseDate(min(date, today)),
            let now = Timestamp.parseDate(today)
        else { return nil }
        let civil = Timestamp.daysFromCivil(year: year, month: month, day: day)
        let last = Timestamp.daysFromCivil(year: now.year, month: now.month, day: now.day)
        let start: Int
        let end: Int
        let previousStart: Int
        let previousEnd: Int
        if kind == "month" {
            start = Timestamp.daysFromCivil(year: year, month: month, day: 1)
            let (nextYear, nextMonth) = month == 12 ? (year + 1, 1) : (year, month + 1)
            end = min(Timestamp.daysFromCivil(year: nextYear, month: nextMonth, day: 1) - 1, last)
            let (lastYear, lastMonth) = month == 1 ? (year - 1, 12) : (year, month - 1)
            previousStart = Timestamp.daysFromCivil(year: lastYear, month: lastMonth, day: 1)
            previousEnd = min(previousStart + (end - start), start - 1)
        } else {
            start = civil - Timestamp.daysSinceMonday(civil: civil)
            end = min(start + 6, last)
            previousStart = start - 7
            previousEnd = previousStart + (end - start)
        }
        return (
            Days(civil: start, end), Days(civil: previousStart, previousEnd), Days(civil: end - 27, end), Days(civil: start - 28, start - 1)
        )
    }

    struct Overview: Encodable, Sendable {
        struct Scope: Encodable, Sendable {
            let grade: Int?
            let classNumber: Int?

            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(grade, forKey: .grade)
                try container.encode(classNumber, forKey: .classNumber)
            }

            enum CodingKeys: String, CodingKey { case grade, classNumber }
        }

        struct Day: Encodable, Sendable {
            let date: String
            let count: Int
        }

        struct Figure: Encodable, Sendable {
            let key: String
            let label: String
            let count: Int
            let previous: Int
        }

        /// A class and reason whose count rose against its own four weeks
        /// before the period: `average` is what those weeks gave for as
        /// many school days as the period has had.
        struct Rise: Encodable, Sendable {
            let grade: Int
            let classNumber: Int
            let reason: ReasonRef
            let count: Int
            let average: Double
        }

        struct StudentFigure: Encodable, Sendable {
            let student: StudentRef
            let count: Int
            let previous: Int
        }

        let schoolId: String
        let period: String
        let from: String
        let to: String
        let previousFrom: String
        let previousTo: String
        let scope: Scope
        let total: Int
        let previousTotal: Int
        /// The school days (Monday to Friday) of the four weeks up to `to`.
        let days: [Day]
        let reasons: [Figure]
        /// By grade for the school, by class for a grade; none for a class.
        let groups: [Figure]
        /// By the hour of the school's clock the guidance was recorded at.
        let hours: [Figure]
        /// The ten with the most records in the period, most first.
        let students: [StudentFigure]
        /// At most three classes and reasons that rose most against their
        /// own four-week average, by at least `Overview.riseAtLeast`, most first.
        let rises: [Rise]
        /// Whether what the school does works, each for the period and the one before.
        let working: Working

        static let riseAtLeast = 3.0

        /// 교내봉사 in sessions: owed by the period's records, served, served
        /// by the session's due date, and missed (불참); cases opened and
        /// closed (종결) in the period, and those open at its end by state;
        /// students who served and those of them recorded again within
        /// `Working.againWithin` days after a day they served. Service and
        /// cases follow the roster's seat of the student now; owed, the
        /// seat the record has.
        struct Working: Encodable, Sendable {
            let service: [Figure]
            let cases: [Figure]
            let repeats: [Figure]

            static let againWithin = 30
        }
    }

    /// The overview of `records` (the scope's active guidances of the days
    /// `periods` covers), as its parts count them.
    static func overview(
        _ records: [GuidanceRecord], school: School, kind: String, periods: Periods, scope: Overview.Scope, working: Overview.Working
    ) -> Overview {
        let current = records.filter { periods.current.contains($0.date) }
        let previous = records.filter { periods.previous.contains($0.date) }
        /// Counts by `key` in both periods, in the order of `order` (then by key).
        func figures(_ key: (GuidanceRecord) -> String, label: (String) -> String, order: [String] = []) -> [Overview.Figure] {
            var counts: [String: (Int, Int)] = [:]
            for record in current { counts[key(record), default: (0, 0)].0 += 1 }
            for record in previous { counts[key(record), default: (0, 0)].1 += 1 }
            let rank = Dictionary(order.enumerated().map { ($1, $0) }) { first, _ in first }
            return counts.keys.sorted { (rank[$0] ?? Int.max, $0) < (rank[$1] ?? Int.max, $1) }.map {
                Overview.Figure(key: $0, label: label($0), count: counts[$0]?.0 ?? 0, previous: counts[$0]?.1 ?? 0)
            }
        }
        let labels = Dictionary(records.map { ($0.reason.code, $0.reason.label) }) { first, _ in first }
        let groups: [Overview.Figure]
        if scope.grade == nil {
            groups = figures({ String(format: "%03d", $0.student.grade) }, label: { "\(Int($0) ?? 0)학년" })
        } else if scope.classNumber == nil {
            groups = figures({ String(format: "%03d", $0.student.classNumber) }, label: { "\(Int($0) ?? 0)반" })
        } else {
            groups = []
        }
        let hours = figures(
            { record in
                let minute = Timestamp.parse(record.occurredAt).map { Timestamp.local($0, in: school.timeZone).minuteOfDay } ?? 0
                return String(format: "%02d", minute / 60)
            }, label: { "\(Int($0) ?? 0)시" })
        var byStudent: [String: (student: StudentRef, count: Int, previous: Int)] = [:]
        for record in current { byStudent[record.student.studentId, default: (record.student, 0, 0)].count += 1 }
        for record in previous where byStudent[record.student.studentId] != nil { byStudent[record.student.studentId]?.previous += 1 }
        let students = byStudent.values.sorted {
            ($1.count, $0.student.grade, $0.student.classNumber, $0.student.number)
                < ($0.count, $1.student.grade, $1.student.classNumber, $1.student.number)
        }.prefix(10).map { Overview.StudentFigure(student: $0.student, count: $0.count, previous: $0.previous) }
        var days: [Overview.Day] = []
        var perDay: [String: Int] = [:]
        for record in records where periods.chart.contains(record.date) { perDay[record.date, default: 0] += 1 }
        if let (year, month, day) = Timestamp.parseDate(periods.chart.from) {
            let first = Timestamp.daysFromCivil(year: year, month: month, day: day)
            for civil in first..<(first + 28) where Timestamp.daysSinceMonday(civil: civil) < 5 {
                let date = Timestamp.dateString(civil: civil)
                days.append(Overview.Day(date: date, count: perDay[date] ?? 0))
            }
        }
        return Overview(
            schoolId: school.id, period: kind, from: periods.current.from, to: periods.current.to, previousFrom: periods.previous.from,
            previousTo: periods.previous.to, scope: scope, total: current.count, previousTotal: previous.count, days: days,
            reasons: figures(\.reason.code, label: { labels[$0] ?? school.reason($0)?.label ?? $0 }, order: school.reasonOrder),
            groups: groups, hours: hours, students: Array(students),
            rises: rises(current, baseline: records.filter { periods.baseline.contains($0.date) }, school: school, periods: periods),
            working: working)
    }

    /// "Is it working" of `facts` and the scope's `records` (read up to
    /// `Working.againWithin` days past the period, as far as today), for
    /// the students `inScope` says are the scope's.
    static func working(
        _ facts: SQLStore.FollowUp, records: [GuidanceRecord], school: School, periods: Periods, inScope: (String) -> Bool
    ) -> Overview.Working {
        let localDate = { (at: String) in Timestamp.parse(at).map { Timestamp.localDate($0, in: school.timeZone) } ?? at }
        let service = facts.records.filter { inScope($0.studentId) }
        let served = facts.served.filter { inScope($0.studentId) }
        func figure(_ key: String, _ label: String, _ count: (Days) -> Int) -> Overview.Figure {
            Overview.Figure(key: key, label: label, count: count(periods.current), previous: count(periods.previous))
        }
        let serviceFigures = [
            figure("owed", "부과된 봉사") { days in records.filter { days.contains($0.date) }.reduce(0) { $0 + $1.serviceSessions } },
            figure("served", "이행한 봉사") { days in
                service.filter { $0.outcome == .served && days.contains($0.date) }.reduce(0) { $0 + $1.sessions }
            },
            figure("on-time", "기한 안에 이행") { days in
                served.filter { duty in
                    guard let day = duty.servedOn, days.contains(day) else { return false }
                    return duty.dueDate.map { day <= $0 } ?? true
                }.count
            },
            figure("missed", "불참") { days in service.filter { $0.outcome == .missed && days.contains($0.date) }.count }
        ]
        // Each case as it stood at the end of each period: its steps up to that day folded.
        let cases = facts.cases.filter { inScope($0.opened.studentId) }
        func stood(at end: String) -> [(opened: String, now: GuidanceCase)] {
            cases.compactMap { item in
                let opened = localDate(item.opened.openedAt)
                guard opened <= end else { return nil }
                return (opened, item.opened.folding(item.steps.filter { localDate($0.at) <= end }).0)
            }
        }
        let atEnd = (current: stood(at: periods.current.to), previous: stood(at: periods.previous.to))
        let stoodAt = { (days: Days) in days == periods.current ? atEnd.current : atEnd.previous }
        var caseFigures = [
            figure("opened", "새로 연 사례") { days in stoodAt(days).filter { days.contains($0.opened) }.count },
            figure("closed", "종결한 사례") { days in
                stoodAt(days).filter { $0.now.state == .closed && days.contains(localDate($0.now.changedAt)) }.count
            }
        ]
        for state in GuidanceCase.State.allCases where state.isOpen {
            let open = figure("open-\(state.rawValue)", "기간 끝에 열린 사례 · \(state.label)") { days in
                stoodAt(days).filter { $0.now.state == state }.count
            }
            if open.count > 0 || open.previous > 0 { caseFigures.append(open) }
        }
        // Students who served in the period, and those recorded again after a day they served.
        var recordedDays: [String: [Int]] = [:]
        for record in records {
            if let day = Timestamp.civilDay(record.date) { recordedDays[record.student.studentId, default: []].append(day) }
        }
        func repeaters(in days: Days) -> (served: Int, again: Int) {
            var servedDays: [String: [Int]] = [:]
            for record in service where record.outcome == .served && days.contains(record.date) {
                if let day = Timestamp.civilDay(record.date) { servedDays[record.studentId, default: []].append(day) }
            }
            let again = servedDays.filter { student, served in
                (recordedDays[student] ?? []).contains { day in served.contains { day > $0 && day <= $0 + Overview.Working.againWithin } }
            }
            return (servedDays.count, again.count)
        }
        let repeats = (current: repeaters(in: periods.current), previous: repeaters(in: periods.previous))
        return Overview.Working(
            service: serviceFigures, cases: caseFigures,
            repeats: [
                Overview.Figure(key: "served", label: "봉사한 학생", count: repeats.current.served, previous: repeats.previous.served),
                Overview.Figure(
                    key: "again", label: "그 뒤 \(Overview.Working.againWithin)일 안에 다시 기록된 학생", count: repeats.current.again,
                    previous: repeats.previous.again)
            ])
    }

    /// Each class and reason of the period against its own four weeks
    /// before: their count scaled to the period's school days so far.
    private static func rises(
        _ current: [GuidanceRecord], baseline: [GuidanceRecord], school: School, periods: Periods
    ) -> [Overview.Rise] {
        let schoolDays = { (days: Days) in
            guard let from = Timestamp.civilDay(days.from), let to = Timestamp.civilDay(days.to), from <= to else { return 0 }
            return (from...to).filter { school.calendar.isSchoolDay($0) }.count
        }
        let scale = Double(schoolDays(periods.current)) / Double(max(1, schoolDays(periods.baseline)))
        struct Key: Hashable {
            let grade: Int
            let classNumber: Int
            let reason: String
        }
        var counts: [Key: (count: Int, before: Int, reason: ReasonRef)] = [:]
        for record in current {
            let key = Key(grade: record.student.grade, classNumber: record.student.classNumber, reason: record.reason.code)
            counts[key, default: (0, 0, ReasonRef(code: record.reason.code, label: record.reason.label, detail: nil))].count += 1
        }
        for record in baseline {
            let key = Key(grade: record.student.grade, classNumber: record.student.classNumber, reason: record.reason.code)
            counts[key]?.before += 1
        }
        let rises = counts.compactMap { key, value -> Overview.Rise? in
            let average = (Double(value.before) * scale * 10).rounded() / 10
            guard Double(value.count) - average >= Overview.riseAtLeast else { return nil }
            return Overview.Rise(grade: key.grade, classNumber: key.classNumber, reason: value.reason, count: value.count, average: average)
        }
        return Array(
            rises.sorted {
                (Double($1.count) - $1.average, $0.grade, $0.classNumber, $0.reason.code)
                    < (Double($0.count) - $0.average, $1.grade, $1.classNumber, $1.reason.code)
            }.prefix(3))
    }

    /// `GET …/overview?period=week|month&date=&grade=&classNumber=`: the
    /// period holding `date` (today by default); without `grade`, the
    /// teacher's own scope (an admin's school, a volunteer-duty teacher's
    /// grade, a homeroom teacher's class).
    @Sendable func overview(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let kind = request.query["period"] ?? "week"
        guard kind == "week" || kind == "month" else { throw HTTPError(FieldError(field: "period", message: "must be week or month")) }
        var grade = try request.integerQuery("grade", in: Student.seatRange)
        var classNumber = try request.integerQuery("classNumber", in: Student.seatRange)
        if classNumber != nil && grade == nil { throw HTTPError(FieldError(field: "grade", message: "is required with classNumber")) }
        let today = Timestamp.localDate(clock(), in: school.timeZone)
        let date = request.query["date"] ?? today
        guard Timestamp.parseDate(date) != nil else { throw HTTPError(FieldError(field: "date", message: "must be YYYY-MM-DD")) }
        if let teacher = caller.teacher {
            if grade == nil && !teacher.has(.admin) {
                (grade, classNumber) = teacher.has(.volunteerDuty) ? (teacher.grade, nil) : (teacher.grade, teacher.classNumber)
            }
            guard teacher.mayReadOtherDays(grade: grade, classNumber: classNumber) else {
                throw HTTPError(
                    status: 403,
                    detail:
                        "현황 covers what the teacher's lists of other days do: an admin the school, a volunteer-duty teacher the grade, a homeroom teacher the class"
                )
            }
        }
        guard let periods = OverviewHandlers.periods(kind, date: date, today: today) else {
            throw HTTPError(FieldError(field: "date", message: "must be YYYY-MM-DD"))
        }
        let store = self.store
        let (scopeGrade, scopeClass) = (grade, classNumber)
        // Up to `againWithin` days past the period, as far as today: a repeat after a served 봉사.
        let through = min(
            today, Timestamp.civilDay(periods.current.to).map { Timestamp.dateString(civil: $0 + Overview.Working.againWithin) } ?? today)
        let (records, facts) = try await store.blocking {
            (
                try store.guidances(
                    school: school.id, from: min(periods.previous.from, periods.chart.from, periods.baseline.from), to: through,
                    grade: scopeGrade, classNumber: scopeClass),
                try store.followUp(school: school.id, from: periods.previous.from, to: periods.current.to)
            )
        }
        let roster = caller.roster
        let working = OverviewHandlers.working(facts, records: records, school: school, periods: periods) { studentId in
            guard let grade = scopeGrade else { return true }
            guard let student = roster.student(school: school.id, id: studentId) else { return false }
            return student.grade == grade && (scopeClass == nil || student.classNumber == scopeClass)
        }
        let scope =
            [("period", kind), ("from", periods.current.from), ("to", periods.current.to)]
            + [("grade", grade.map(String.init)), ("classNumber", classNumber.map(String.init))].compactMap { name, value in
                value.map { (name, $0) }
            }
        accessLog.record(caller, .overview, school: school.id, target: scope.map { "\($0.0)=\($0.1)" }.joined(separator: "&"))
        return .json(
            OverviewHandlers.overview(
                records, school: school, kind: kind, periods: periods, scope: Overview.Scope(grade: grade, classNumber: classNumber),
                working: working))
    }
}
