// The values the store holds and answers with; the store itself is `GuidanceStore`.
import Guidance

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
    /// What is left to serve; service beyond what is owed (a guidance
    /// deleted after it was served) is not carried over as credit.
    package var outstanding: Int { max(0, owed - served) }

    package init(owed: Int, served: Int) {
        self.owed = owed
        self.served = served
    }

    private enum CodingKeys: String, CodingKey { case owed, served, outstanding }

    package init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(owed: try container.decode(Int.self, forKey: .owed), served: try container.decode(Int.self, forKey: .served))
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(owed, forKey: .owed)
        try container.encode(served, forKey: .served)
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

/// An event of a batch that the store kept out, and why: `conflict` (the id
/// was registered with other content) or `foreign` (the id belongs to another
/// school).
package struct Rejection: Sendable, Equatable {
    package let index: Int
    package let reason: String

    package init(index: Int, reason: String) {
        self.index = index
        self.reason = reason
    }
}

/// An event ready for the store; registrations carry their local date.
package enum StoredEvent: Sendable, Equatable {
    case registered(GuidanceRecord)
    case deleted(guidanceId: String, schoolId: String, grade: Int, deletedBy: String, occurredAt: String)
    /// Reads of student data, for the access log (each stored once per `accessId`).
    case accessed([AccessRecord])
    /// Service served; the first record of a `serviceId` wins.
    case communityServiceRecorded(CommunityServiceRecord)
    /// A service record taken back: a tombstone that wins whatever the order.
    case communityServiceWithdrawn(
        serviceId: String, schoolId: String, grade: Int, studentId: String, withdrawnBy: String, occurredAt: String)
}

package enum DigestScope: String, Sendable, Codable, Hashable {
    case `class`
    case grade
    /// The weekly 봉사 명단: a grade's students who still owe service, on Mondays.
    case service
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

    /// The first day of each count for `date` (`YYYY-MM-DD`): 6 and 29 days
    /// before it; nil for a malformed date.
    package static func window(of date: String) -> (last7Start: String, last30Start: String)? {
        guard let (year, month, day) = Timestamp.parseDate(date) else { return nil }
        let days = Timestamp.daysFromCivil(year: year, month: month, day: day)
        return (Timestamp.dateString(civil: days - 6), Timestamp.dateString(civil: days - 29))
    }

    /// Whether `date` is a Monday, the day the weekly 봉사 명단 goes out.
    package static func isWeekStart(_ date: String) -> Bool {
        guard let (year, month, day) = Timestamp.parseDate(date) else { return false }
        let days = Timestamp.daysFromCivil(year: year, month: month, day: day)
        // Day 0 (1970-01-01) was a Thursday: Monday is 0 after shifting by 3.
        return ((days + 3) % 7 + 7) % 7 == 0
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

    package init(
        guidanceId: String, student: StudentRef, reason: ReasonRef, occurredAt: String, change: Change, frequency: Frequency? = nil,
        service: CommunityServiceStanding? = nil
    ) {
        self.guidanceId = guidanceId
        self.student = student
        self.reason = reason
        self.occurredAt = occurredAt
        self.change = change
        self.frequency = frequency
        self.service = service
    }

    /// What a recipient's revisions tell apart: a guidance in a day's list,
    /// a student in the weekly 봉사 명단 (whose newest guidance may change).
    package func key(in scope: DigestScope) -> String { scope == .service ? student.studentId : guidanceId }
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
    package let text: String
    package let entries: [DigestEntry]
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

/// What a digest run sees inside its transaction.
package struct DeliveryState: Sendable {
    /// Active guidances of the school and date.
    package let active: [GuidanceRecord]
    /// What each recipient was already told is active: the entries its
    /// revisions added and did not remove since, as they were told.
    package let reported: [Recipient: [DigestEntry]]
    /// The newest revision each recipient has for the date.
    package let revisions: [Recipient: Int]
    /// Each student's guidances this week and month, by student id (a
    /// student the day's entries name and who has none left is absent: 0).
    package let frequencies: [String: Frequency]
    /// Each student's volunteer service as of the date, by student id: the
    /// date's students (a Monday: the school's), those with neither
    /// guidances nor service absent.
    package let accounts: [String: CommunityServiceAccount]

    package init(
        active: [GuidanceRecord], reported: [Recipient: [DigestEntry]], revisions: [Recipient: Int], frequencies: [String: Frequency] = [:],
        accounts: [String: CommunityServiceAccount] = [:]
    ) {
        self.active = active
        self.reported = reported
        self.revisions = revisions
        self.frequencies = frequencies
        self.accounts = accounts
    }
}

/// One school's day for `GuidanceStore.writeDigests`.
package struct DeliveryRun: Sendable {
    package let school: String
    package let date: String
    package let completedAt: String
    package let plan: @Sendable (DeliveryState) -> [Digest]
    package let targets: @Sendable (Digest) -> [DeliveryTarget]

    package init(
        school: String, date: String, completedAt: String, plan: @escaping @Sendable (DeliveryState) -> [Digest],
        targets: @escaping @Sendable (Digest) -> [DeliveryTarget]
    ) {
        self.school = school
        self.date = date
        self.completedAt = completedAt
        self.plan = plan
        self.targets = targets
    }
}

extension Digest {
    /// The id of a recipient's revision of a day: the same on every replica
    /// and every rerun, so the store's uniqueness decides between them.
    package static func id(school: String, date: String, recipient: Recipient, revision: Int) -> String {
        "\(school).\(date).\(recipient.teacherId).\(recipient.scope.rawValue).r\(revision)"
    }
}

/// How a digest reaches a teacher besides the inbox: the name of a channel,
/// stored with each delivery. The notifier's `DeliveryChannel`s say which exist.
package struct Channel: RawRepresentable, Hashable, Sendable, Codable {
    package let rawValue: String

    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    package static let email = Channel(rawValue: "email")
    package static let webhook = Channel(rawValue: "webhook")
}

/// Where one digest revision must be sent: an e-mail address or a webhook URL.
package struct DeliveryTarget: Sendable, Equatable {
    package let channel: Channel
    package let target: String

    package init(channel: Channel, target: String) {
        self.channel = channel
        self.target = target
    }
}

/// One digest revision on its way through one channel: the outbox row.
package struct Delivery: Sendable, Equatable {
    package enum Status: String, Sendable, Codable, CaseIterable {
        case pending, sent, failed
    }

    /// `<digestId>.<channel>`: the same on every attempt, so receivers dedupe by it.
    package let deliveryId: String
    package let digestId: String
    package let schoolId: String
    package let teacherId: String
    package let channel: Channel
    package let target: String
    package let status: Status
    /// Attempts that ended (sent, refused or unreachable).
    package let attempts: Int
    package let lastError: String?
    /// Seconds since the epoch; when the digest was written.
    package let createdAt: Double
    /// When a pending delivery is due next.
    package let nextAttemptAt: Double?
    package let sentAt: Double?

    package static func id(digest: String, channel: Channel) -> String { "\(digest).\(channel.rawValue)" }
}

/// A delivery claimed by one dispatcher until `leaseUntil`, with its digest.
package struct ClaimedDelivery: Sendable {
    package let delivery: Delivery
    package let digest: Digest
    /// When the delivery was (re)queued; retries stop a maximum age after it.
    package let queuedAt: Double
    /// Another sender claimed it before and never reported back (killed, or
    /// stuck past its lease): it may have been sent already.
    package let takenOver: Bool
}

/// What one attempt came to.
package enum DeliveryOutcome: Sendable, Equatable {
    case sent
    /// Transient failure: try again at `at` (seconds since the epoch).
    case retry(error: String, at: Double)
    case failed(error: String)
}

/// What asking to send a failed delivery again found.
package enum RequeueResult: Sendable, Equatable {
    case requeued
    case notFound
    /// Only a failed delivery goes back in the queue.
    case notFailed(Delivery.Status)
}

/// The pending deliveries of one channel, for the metrics.
package struct DeliveryBacklog: Sendable, Equatable {
    package let channel: Channel
    package let pending: Int
    /// Seconds since the epoch of the oldest pending delivery's digest.
    package let oldestCreatedAt: Double?
}
