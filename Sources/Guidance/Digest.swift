// What a digest is: to whom (`Recipient`), of what scope, with which entries;
// the notifier plans them and the store keeps them.
import Common

/// A guidance as materialised from the events, with its school-local date.
package struct GuidanceRecord: Sendable, Equatable, Codable {
    package let guidanceId: String
    package let schoolId: String
    /// `YYYY-MM-DD` in the school's time zone.
    package let date: String
    package let student: StudentRef
    package let reason: ReasonRef
    /// RFC 3339, UTC.
    package let occurredAt: String
    package let recordedBy: String
    /// Sessions of volunteer service it puts on the student's account (its
    /// reason's `serviceSessions` when it was stored).
    package var serviceSessions = 1

    package init(
        guidanceId: String, schoolId: String, date: String, student: StudentRef, reason: ReasonRef, occurredAt: String, recordedBy: String,
        serviceSessions: Int = 1
    ) {
        self.guidanceId = guidanceId
        self.schoolId = schoolId
        self.date = date
        self.student = student
        self.reason = reason
        self.occurredAt = occurredAt
        self.recordedBy = recordedBy
        self.serviceSessions = serviceSessions
    }
}

/// Sessions of volunteer service a student owes (one per active guidance,
/// or its reason's number) and has served.
package struct CommunityServiceStanding: Sendable, Equatable, Codable {
    package let owed: Int
    package let served: Int
    /// Sessions closed without being served (종결, with a reason).
    package let closed: Int
    /// What is left to serve; service beyond what is owed (a guidance
    /// deleted after it was served) is not carried over as credit.
    package var outstanding: Int { max(0, owed - served - closed) }

    package init(owed: Int, served: Int, closed: Int = 0) {
        self.owed = owed
        self.served = served
        self.closed = closed
    }

    private enum CodingKeys: String, CodingKey { case owed, served, closed, outstanding }

    package init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            owed: try container.decode(Int.self, forKey: .owed), served: try container.decode(Int.self, forKey: .served),
            closed: try container.decodeIfPresent(Int.self, forKey: .closed) ?? 0)
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(owed, forKey: .owed)
        try container.encode(served, forKey: .served)
        try container.encode(closed, forKey: .closed)
        try container.encode(outstanding, forKey: .outstanding)
    }
}

/// One student's volunteer-service account as of a day.
package struct CommunityServiceAccount: Sendable, Equatable {
    package let studentId: String
    package let standing: CommunityServiceStanding
    /// The newest active guidance: its id, time and reason code.
    package let lastGuidance: (guidanceId: String, occurredAt: String, reasonCode: String)?
    /// The newest day service was served.
    package let lastService: String?
    /// The active service records, oldest first (only where asked for).
    package var records: [CommunityServiceRecord] = []

    package init(
        studentId: String, standing: CommunityServiceStanding, lastGuidance: (guidanceId: String, occurredAt: String, reasonCode: String)?,
        lastService: String?
    ) {
        self.studentId = studentId
        self.standing = standing
        self.lastGuidance = lastGuidance
        self.lastService = lastService
    }

    package static func == (a: CommunityServiceAccount, b: CommunityServiceAccount) -> Bool {
        a.studentId == b.studentId && a.standing == b.standing && a.lastGuidance?.guidanceId == b.lastGuidance?.guidanceId
            && a.lastService == b.lastService && a.records == b.records
    }
}

package enum DigestScope: String, Sendable, Codable, Hashable {
    case `class`
    case grade
    /// The weekly 봉사 명단: a grade's students who still owe service, on Mondays.
    case service
    /// A notice that a student crossed a school rule (`rules.csv`), or that
    /// a deletion withdrew the crossing; its revision counts the teacher's
    /// notices of that day.
    case rule
    /// Sessions of 교내봉사 that passed their due date unserved: on the next
    /// school day, to the student's homeroom teacher (a class) and to the
    /// school's admins (grade 0: every grade).
    case overdue
    /// A 보호자 안내 a teacher sent from a case: to the school's webhook
    /// only (never a teacher's inbox, e-mail or push), its one entry the
    /// case (`guidanceId`: the case's id) under the student's seat.
    case guardian
}

/// Who receives a digest: a homeroom teacher for a class, or a volunteer-duty
/// teacher for a grade.
package struct Recipient: Sendable, Hashable {
    package let teacherId: String
    package let scope: DigestScope
    package let grade: Int
    package let classNumber: Int?

    package init(teacherId: String, scope: DigestScope, grade: Int, classNumber: Int?) {
        self.teacherId = teacherId
        self.scope = scope
        self.grade = grade
        self.classNumber = classNumber
    }
}

/// How often a student was stopped: the active guidances of the last 7 and
/// of the last 30 school-local days up to and including a date. The 7 lie
/// within the 30, so the two counts never contradict each other (a calendar
/// week's and month's did at a month's start: 3 this week, 2 this month). A
/// deletion lowers both.
package struct Frequency: Sendable, Equatable, Codable {
    package let last7Days: Int
    package let last30Days: Int

    package init(last7Days: Int, last30Days: Int) {
        self.last7Days = last7Days
        self.last30Days = last30Days
    }

    /// As of `date`, from a student's active guidances counted by day
    /// (`YYYY-MM-DD`, any order): a row of a week's or month's list says how
    /// often the student had been stopped by its own day, not by the period's end.
    package init(asOf date: String, byDay counts: [(date: String, count: Int)]) {
        let (last7Start, last30Start) = Frequency.window(of: date) ?? (date, date)
        var last7 = 0
        var last30 = 0
        for (day, count) in counts where day <= date && day >= last30Start {
            last30 += count
            if day >= last7Start { last7 += count }
        }
        self.init(last7Days: last7, last30Days: last30)
    }

    /// The first day of each count for `date` (`YYYY-MM-DD`): 6 and 29 days
    /// before it; nil for a malformed date.
    package static func window(of date: String) -> (last7Start: String, last30Start: String)? {
        guard let days = Timestamp.civilDay(date) else { return nil }
        return (Timestamp.dateString(civil: days - 6), Timestamp.dateString(civil: days - 29))
    }
}

package struct DigestEntry: Sendable, Equatable, Codable {
    package enum Change: String, Sendable, Codable {
        case added, removed
    }

    package let guidanceId: String
    package let student: StudentRef
    package let reason: ReasonRef
    package let occurredAt: String
    package let change: Change
    /// The student's guidances this week and month as of the digest's day,
    /// when it was written; nil in digests written before it was counted.
    package let frequency: Frequency?
    /// The student's volunteer service as of the digest's day, when it was
    /// written; nil in digests written before it was kept.
    package let service: CommunityServiceStanding?
    /// In an overdue list: the session past its due date (served late when
    /// `servedOn` is set).
    package let overdue: CommunityServiceDuty?

    package init(
        guidanceId: String, student: StudentRef, reason: ReasonRef, occurredAt: String, change: Change, frequency: Frequency? = nil,
        service: CommunityServiceStanding? = nil, overdue: CommunityServiceDuty? = nil
    ) {
        self.overdue = overdue
        self.guidanceId = guidanceId
        self.student = student
        self.reason = reason
        self.occurredAt = occurredAt
        self.change = change
        self.frequency = frequency
        self.service = service
    }

    /// What a recipient's revisions tell apart: a guidance in a day's list,
    /// a student in the weekly 봉사 명단 (whose newest guidance may change),
    /// an overdue session as served or not (served late, it is told again).
    package func key(in scope: DigestScope) -> String {
        switch scope {
        case .service: student.studentId
        case .overdue: "\(overdue?.dutyId ?? guidanceId)/\(overdue?.servedOn ?? "")"
        default: guidanceId
        }
    }
}

/// One digest in a teacher's inbox; `(teacherId, schoolId, date, scope,
/// revision)` is unique in the store. Its JSON (the inbox API, webhooks) is
/// the notifier's business: `DigestJSON`.
package struct Digest: Sendable, Equatable {
    package let digestId: String
    package let teacherId: String
    package let schoolId: String
    package let date: String
    package let scope: DigestScope
    package let grade: Int
    package let classNumber: Int?
    package let revision: Int
    package let createdAt: String
    package var read: Bool
    package let subject: String
    package var text: String
    /// Empty in what `SQLStore.writeDigests` returns: written, they are read from the store.
    package var entries: [DigestEntry]
    package let counts: [String: Int]

    package init(
        digestId: String, teacherId: String, schoolId: String, date: String, scope: DigestScope, grade: Int, classNumber: Int?,
        revision: Int, createdAt: String, read: Bool, subject: String, text: String, entries: [DigestEntry], counts: [String: Int]
    ) {
        self.digestId = digestId
        self.teacherId = teacherId
        self.schoolId = schoolId
        self.date = date
        self.scope = scope
        self.grade = grade
        self.classNumber = classNumber
        self.revision = revision
        self.createdAt = createdAt
        self.read = read
        self.subject = subject
        self.text = text
        self.entries = entries
        self.counts = counts
    }

    package var recipient: Recipient { Recipient(teacherId: teacherId, scope: scope, grade: grade, classNumber: classNumber) }
}

extension Digest {
    /// The id of a recipient's revision of a day: the same on every replica
    /// and every rerun, so the store's uniqueness decides between them.
    package static func id(school: String, date: String, recipient: Recipient, revision: Int) -> String {
        "\(school).\(date).\(recipient.teacherId).\(recipient.scope.rawValue).r\(revision)"
    }
}
