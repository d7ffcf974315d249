// The values the store holds and answers with; the store itself is `SQLStore`.
import Guidance

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
    /// A one-off sitting of 교내봉사; the first of a `sittingId` wins.
    case sittingAdded(CommunityServiceSittingAdded)
    /// A teacher's step of a case, once per event id.
    case caseStep(CaseStep)
    /// A 보호자 안내 step, with what the roster said when it was decoded.
    case guardianNotice(CaseStep, GuardianNotice)
}

/// What a 보호자 안내 needs besides its step, from the roster and the clock
/// when it was decoded: where it goes and whom it must not name.
package struct GuardianNotice: Sendable, Equatable {
    /// The student as the roster seats them.
    package let student: StudentRef
    package let schoolName: String
    /// The school's webhook URL (webhooks.csv); nil: none, nothing is sent.
    package let webhook: String?
    /// The school-local day of the step.
    package let date: String
    /// The school's teachers' names by id: a text naming one who recorded
    /// a guidance of the student is not sent.
    package let teacherNames: [String: String]
    /// Seconds since the epoch when it was decoded.
    package let decidedAt: Double

    package init(
        student: StudentRef, schoolName: String, webhook: String?, date: String, teacherNames: [String: String], decidedAt: Double
    ) {
        self.student = student
        self.schoolName = schoolName
        self.webhook = webhook
        self.date = date
        self.teacherNames = teacherNames
        self.decidedAt = decidedAt
    }

    /// The notice as a digest: the school's webhook receives it as
    /// `case.guardian_notice` (`WebhookMessage`), its one entry the case.
    package func digest(of step: CaseStep) -> Digest {
        Digest(
            digestId: "\(step.schoolId).\(date).\(step.by).guardian.\(step.eventId)", teacherId: step.by, schoolId: step.schoolId,
            date: date, scope: .guardian, grade: student.grade, classNumber: student.classNumber, revision: 1, createdAt: step.at,
            read: true, subject: "[\(schoolName)] 보호자 안내", text: step.note ?? "",
            entries: [
                DigestEntry(
                    guidanceId: step.caseId, student: student, reason: ReasonRef(code: "guardian-notice", label: "보호자 안내", detail: nil),
                    occurredAt: step.at, change: .added)
            ], counts: [:])
    }
}

/// What one recipient was told of a day and still stands, folded revision
/// by revision (an entry added stands until a later revision removes it):
/// the keys of its entries (`DigestEntry.key(in:)`), and the entries as
/// told only where the day's active guidances do not stand for them (a
/// guidance deleted since, a 봉사 list's student): what an 정정 lists as
/// removed. A big school's day told 80,000 entries; held whole, they were
/// 39 of the notifier's 93 MB peak of heap.
package struct Told: Sendable {
    package private(set) var keys: Set<String> = []
    package private(set) var kept: [String: DigestEntry] = [:]

    package init() {}

    /// `entries` told, each kept as told.
    package init(_ entries: [DigestEntry], scope: DigestScope) {
        fold(entries, scope: scope) { _ in false }
    }

    /// A revision's entries, after those before it. `isActive` says whether
    /// a guidance id is one of the day's active guidances, which a day
    /// list's entry is made from again.
    package mutating func fold(_ revision: [DigestEntry], scope: DigestScope, isActive: (String) -> Bool) {
        for entry in revision { fold(entry, scope: scope, isActive: isActive) }
    }

    /// One entry of a revision, after those before it.
    package mutating func fold(_ entry: DigestEntry, scope: DigestScope, isActive: (String) -> Bool) {
        let key = entry.key(in: scope)
        if entry.change == .added {
            keys.insert(key)
            kept[key] = (scope == .class || scope == .grade) && isActive(key) ? nil : entry
        } else {
            keys.remove(key)
            kept[key] = nil
        }
    }
}

/// What a digest run sees inside its transaction.
package struct DeliveryState: Sendable {
    /// Active guidances of the school and date.
    package let active: [GuidanceRecord]
    /// What each recipient was already told is active: the entries its
    /// revisions added and did not remove since.
    package let reported: [Recipient: Told]
    /// The newest revision each recipient has for the date.
    package let revisions: [Recipient: Int]
    /// Each student's guidances this week and month, by student id (a
    /// student the day's entries name and who has none left is absent: 0).
    package let frequencies: [String: Frequency]
    /// Each student's volunteer service as of the date, by student id: the
    /// date's students (a Monday: the school's), those with neither
    /// guidances nor service absent.
    package let accounts: [String: CommunityServiceAccount]
    /// Sessions of 교내봉사 that fell due since the school day before the
    /// date and were not served by their due date (`DeliveryRun.overdueSince`),
    /// each with the guidance that owed it.
    package var overdue: [(duty: CommunityServiceDuty, guidance: GuidanceRecord)] = []

    package init(
        active: [GuidanceRecord], reported: [Recipient: Told], revisions: [Recipient: Int], frequencies: [String: Frequency] = [:],
        accounts: [String: CommunityServiceAccount] = [:]
    ) {
        self.active = active
        self.reported = reported
        self.revisions = revisions
        self.frequencies = frequencies
        self.accounts = accounts
    }
}

/// One school's day for `SQLStore.writeDigests`.
package struct DeliveryRun: Sendable {
    package let school: String
    package let date: String
    package let completedAt: String
    /// The week's first school day: the weekly 봉사 명단 goes out, from every account.
    package var weekly: Bool
    /// On a school day, the school day before it: sessions due from then
    /// until the date and not served by then are its overdue ones.
    package var overdueSince: String?
    /// False for a teacher's own list before the school's time: its digests
    /// are written, but the day's run is not, so the school's time still
    /// runs it (and tells that teacher the rest as an 정정).
    package var recordsRun = true
    /// The run's digests as drafts, each made when the run comes to it.
    package let drafts: @Sendable (DeliveryState) -> [Draft]
    package let targets: @Sendable (Digest) -> [DeliveryTarget]

    /// A recipient's digest, made (with its list) when it is called; nil
    /// when there is nothing to tell them. A big school's lists are made,
    /// written and dropped one at a time, not held together.
    package typealias Draft = @Sendable () -> Digest?

    package init(
        school: String, date: String, completedAt: String, weekly: Bool? = nil, overdueSince: String? = nil, recordsRun: Bool = true,
        drafts: @escaping @Sendable (DeliveryState) -> [Draft], targets: @escaping @Sendable (Digest) -> [DeliveryTarget]
    ) {
        self.school = school
        self.date = date
        self.completedAt = completedAt
        self.weekly = weekly ?? SchoolCalendar().isWeekStart(date)
        self.overdueSince = overdueSince
        self.recordsRun = recordsRun
        self.drafts = drafts
        self.targets = targets
    }

    /// A run whose digests are made all at once.
    package init(
        school: String, date: String, completedAt: String, weekly: Bool? = nil, overdueSince: String? = nil, recordsRun: Bool = true,
        plan: @escaping @Sendable (DeliveryState) -> [Digest], targets: @escaping @Sendable (Digest) -> [DeliveryTarget]
    ) {
        self.init(
            school: school, date: date, completedAt: completedAt, weekly: weekly, overdueSince: overdueSince, recordsRun: recordsRun,
            drafts: { state in plan(state).map { digest in { digest } } }, targets: targets)
    }
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
    /// How many held messages of its kind this one replaced (quiet hours):
    /// it says it stands for them.
    package var merged = 0
    /// Pushed with `Urgency: high` (an urgent rule's notice).
    package var urgent = false

    package init(delivery: Delivery, digest: Digest, queuedAt: Double, takenOver: Bool, merged: Int = 0, urgent: Bool = false) {
        self.delivery = delivery
        self.digest = digest
        self.queuedAt = queuedAt
        self.takenOver = takenOver
        self.merged = merged
        self.urgent = urgent
    }
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
