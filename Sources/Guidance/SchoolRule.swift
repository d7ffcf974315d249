/// A school's rule from `rules.csv`: `count` active records of `reason` (nil:
/// any reason) within `days` school-local days flag the student to the
/// teachers `notify` names. A rule flags; it never decides.
package struct SchoolRule: Sendable, Equatable {
    package static let countRange = 2...100
    package static let daysRange = 1...365
    /// The roles a rule may notify: the student's homeroom teacher, the
    /// grade's volunteer-duty teacher, the school's admins.
    package static let notifiable: [Teacher.Role] = [.homeroom, .volunteerDuty, .admin]

    package let schoolID: String
    package let reason: String?
    package let count: Int
    package let days: Int
    package let notify: Set<Teacher.Role>
    /// The words shown: "선도위원회 검토 대상".
    package let label: String
    /// Whether its notices ignore a teacher's quiet hours.
    package let urgent: Bool
    /// Whether its window reaches back across a new school year (`rules.csv`
    /// `across_years`); by default it starts again on the day one began.
    package var acrossYears = false
    /// The days (since 1970-01-01) the school's new years began (진급
    /// versions served), ascending: set by the roster, not the file.
    package var yearStarts: [Int] = []

    package init(
        schoolID: String, reason: String?, count: Int, days: Int, notify: Set<Teacher.Role>, label: String, urgent: Bool = false
    ) {
        self.schoolID = schoolID
        self.reason = reason
        self.count = count
        self.days = days
        self.notify = notify
        self.label = label
        self.urgent = urgent
    }

    /// The rule as a crossing keeps it (`key`, `notifyText` and its
    /// label); nil for a key that is none.
    package init?(schoolID: String, key: String, notifyText: String, label: String) {
        let parts = key.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let count = Int(parts[1]), let days = Int(parts[2]) else { return nil }
        let notify = notifyText.split(separator: "+").compactMap { Teacher.Role(rawValue: String($0)) }
        self.init(
            schoolID: schoolID, reason: parts[0] == "*" ? nil : String(parts[0]), count: count, days: days, notify: Set(notify),
            label: label)
    }

    /// What tells a rule apart in its school, kept with each crossing:
    /// `late/3/7`, `*/10/30`. A new label or `notify` is the same rule.
    package var key: String { "\(reason ?? "*")/\(count)/\(days)" }

    /// `notify` as `rules.csv` writes it (`homeroom+admin`), in a fixed order.
    package var notifyText: String { SchoolRule.notifiable.filter(notify.contains).map(\.rawValue).joined(separator: "+") }

    /// A student's record as a rule counts it.
    package struct Counted: Sendable, Equatable {
        package let guidanceId: String
        /// `YYYY-MM-DD`, school-local.
        package let date: String
        package let reasonCode: String
        /// RFC 3339, UTC: when it was recorded (a case a crossing opens is
        /// opened at its last record's time, in a replay too).
        package var occurredAt = ""

        package init(guidanceId: String, date: String, reasonCode: String, occurredAt: String = "") {
            self.guidanceId = guidanceId
            self.date = date
            self.reasonCode = reasonCode
            self.occurredAt = occurredAt
        }
    }

    /// The times a student crossed this rule, given their active records in
    /// time order: each the records it counted, the last of them the one
    /// that crossed. A crossing counts `count` records within `days` days
    /// that no earlier crossing counted, so a student who keeps coming back
    /// crosses again after `count` more (3 in 7 days: the 3rd and the 6th),
    /// and none from before the school year's first day.
    /// Decided from the records alone: a replay or another replica finds
    /// the same crossings, and a deletion that undoes one finds it gone.
    package func crossings(of records: [Counted]) -> [[Counted]] {
        var crossings: [[Counted]] = []
        var open: [(day: Int, record: Counted)] = []
        for record in records where reason == nil || record.reasonCode == reason {
            guard let today = Timestamp.civilDay(record.date) else { continue }
            // Last school year's records count nothing in this one, unless the school says so.
            let start = acrossYears ? nil : yearStarts.last { $0 <= today }
            open.removeAll { $0.day <= today - days || $0.day < start ?? Int.min }
            open.append((today, record))
            if open.count >= count {
                crossings.append(open.map(\.record))
                open = []
            }
        }
        return crossings
    }
}
