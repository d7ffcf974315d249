// A rule crossed by a student, and what its teachers are told of it.

/// The `ordinal`-th time a student crossed a school's rule, as stored.
package struct RuleCrossing: Sendable, Equatable {
    package let schoolId: String
    package let studentId: String
    /// The rule as it was when it was crossed: its measure, words and
    /// whom it notifies (`urgent` is the roster's, not kept).
    package let rule: SchoolRule
    package let ordinal: Int
    /// The school-local day of the record that crossed.
    package let date: String
    /// Whether the records still make it a crossing (a deletion can undo it).
    package let active: Bool
    /// Whether its teachers were last told it stands.
    package let told: Bool
    package let changedAt: String
    /// The records it counted that are stored, deleted or not, oldest first.
    package let records: [GuidanceRecord]

    package init(
        schoolId: String, studentId: String, rule: SchoolRule, ordinal: Int, date: String, active: Bool, told: Bool, changedAt: String,
        records: [GuidanceRecord]
    ) {
        self.schoolId = schoolId
        self.studentId = studentId
        self.rule = rule
        self.ordinal = ordinal
        self.date = date
        self.active = active
        self.told = told
        self.changedAt = changedAt
        self.records = records
    }

    /// `SchoolRule.key`: what the store keys the crossing by.
    package var ruleKey: String { rule.key }
}

/// What one teacher is told of a crossing: a digest of scope `rule` but for
/// its id and revision, which the store gives it.
package struct RuleNotice: Sendable {
    package let teacherId: String
    package let grade: Int
    package let classNumber: Int?
    package let subject: String
    package let text: String
    package let entries: [DigestEntry]
    package let counts: [String: Int]

    package init(
        teacherId: String, grade: Int, classNumber: Int?, subject: String, text: String, entries: [DigestEntry], counts: [String: Int]
    ) {
        self.teacherId = teacherId
        self.grade = grade
        self.classNumber = classNumber
        self.subject = subject
        self.text = text
        self.entries = entries
        self.counts = counts
    }
}
