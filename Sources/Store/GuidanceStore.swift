import Guidance

/// The materialised guidances, the digests and the inboxes. Implementations
/// are blocking: call them from threads of their own, never from Swift's
/// cooperative pool.
package protocol GuidanceStore: AnyObject, Sendable {
    /// Applies a batch of events in one transaction. Replays change nothing;
    /// a deletion wins over its registration whatever the order. A guidance
    /// id belongs to the school that first registered it, with the content
    /// it was first registered with: events that contradict that change
    /// nothing and come back as rejections, for the dead-letter topic.
    func apply(_ events: [StoredEvent]) throws(StoreError) -> [Rejection]

    /// Active guidances of a school-local date, ordered by grade, class,
    /// number and time.
    func guidances(school: String, date: String, grade: Int?, classNumber: Int?) throws(StoreError) -> [GuidanceRecord]

    /// Each student's `Frequency` as of `date`, by student id, for the
    /// students seated in the grade and class given (nil: all); students
    /// without an active guidance in the window are absent.
    func frequencies(school: String, date: String, grade: Int?, classNumber: Int?) throws(StoreError) -> [String: Frequency]

    /// For each run, all or nothing: reads the delivery state of its school
    /// and date, lets `plan` turn it into new digests, writes them with what
    /// they reported and one pending delivery per target `targets` names
    /// (the outbox), and records the run. The runs share one commit (one
    /// disk flush for many schools); a run that fails on its own leaves the
    /// others written. Returns each run's digests or its error, in order;
    /// throws, with none written, when the database is busy or lost.
    func writeDigests(_ runs: [DeliveryRun]) throws(StoreError) -> [Result<[Digest], StoreError>]

    /// Each student's volunteer-service account as of `date` (nil: all
    /// days), whatever grade its records name (the caller places the
    /// student by the roster), with their active service records; students
    /// with neither guidances nor service are absent.
    func communityServiceAccounts(school: String, asOf date: String?) throws(StoreError) -> [CommunityServiceAccount]

    /// Whether a digest run for `school` and `date` completed.
    func runCompleted(school: String, date: String) throws(StoreError) -> Bool

    /// School and date pairs changed after their digests went out.
    func pendingAmendments() throws(StoreError) -> [(school: String, date: String)]

    /// A teacher's digests, newest first, read or not.
    func inbox(teacher: String) throws(StoreError) -> [Digest]
    /// How many of them are unread.
    func unreadCount(teacher: String) throws(StoreError) -> Int

    /// Marks a digest read; false when the teacher has no such digest.
    func markRead(teacher: String, digestId: String) throws(StoreError) -> Bool

    /// Whether the teacher's lists also go by e-mail (by default they do).
    func emailsLists(school: String, teacher: String) throws(StoreError) -> Bool
    func setEmailsLists(_ on: Bool, school: String, teacher: String, at: String) throws(StoreError)
    /// The teachers of `schools` who turned e-mailed lists off.
    func teachersWithoutEmailedLists(schools: [String]) throws(StoreError) -> Set<String>

    /// Whether the store answers.
    func ping() throws(StoreError)

    // MARK: Outbox

    /// Claims up to `limit` due deliveries of `channel` for `owner` until
    /// `leaseUntil`: pending, due by `now`, and not leased by a live claim.
    /// Two dispatchers never hold the same delivery at once.
    func claimDeliveries(channel: Channel, limit: Int, owner: String, now: Double, leaseUntil: Double) throws(StoreError)
        -> [ClaimedDelivery]

    /// Records attempts' outcomes in one transaction and ends `owner`'s
    /// leases on them. A `sent` is recorded even if the lease was lost
    /// meanwhile (the message went out); a retry or failure only while the
    /// delivery is still pending.
    func record(_ outcomes: [(deliveryId: String, outcome: DeliveryOutcome)], owner: String, now: Double) throws(StoreError)

    /// Gives back claims that were never attempted (a stopping dispatcher).
    func release(deliveryIds: [String], owner: String) throws(StoreError)

    /// Moves the lease of `owner`'s pending claims among `deliveryIds` to
    /// `until`: a send waiting for its answer keeps its claim.
    func extendLeases(deliveryIds: [String], owner: String, until: Double) throws(StoreError)

    /// A school's deliveries, newest first, at most `limit`.
    func deliveries(school: String, status: Delivery.Status?, limit: Int) throws(StoreError) -> [Delivery]

    /// Puts a failed delivery of `school` back in the queue, due at `now`.
    func requeue(school: String, deliveryId: String, now: Double) throws(StoreError) -> RequeueResult

    /// Pending deliveries of each of `channels` that has some.
    func deliveryBacklog(of channels: [Channel]) throws(StoreError) -> [DeliveryBacklog]

    // Data protection (docs/guarantees.md, "Data protection").

    /// A school's access records in `[from, to)`, newest first, at most
    /// `limit`, and how many there are in all; only a teacher's, of one
    /// kind, or of some students (their ids; none: nothing) when asked.
    func accessLog(
        school: String, from: Double, to: Double, teacher: String?, action: AccessRecord.Action?, students: [String]?, limit: Int
    ) throws(StoreError) -> (records: [AccessRecord], total: Int)
    /// Every school the store holds anything of.
    func schoolsStored() throws(StoreError) -> [String]
    /// Whether this caller is the first to purge on `day`.
    func claimPurge(day: String, now: Double) throws(StoreError) -> Bool
    /// Removes (or counts) what each cut says is past its retention, in short batches.
    func purge(_ cuts: [PurgeCut], dryRun: Bool) throws(StoreError) -> PurgeReport
    /// Everything stored about one student.
    func records(school: String, student: String) throws(StoreError) -> StudentRecords
    /// Erases one student: guidances gone, digests' entries neutral, access records' target `(erased)`.
    func erase(school: String, student: String, rewrite: @Sendable (Digest) -> (subject: String, text: String)) throws(StoreError) -> (
        guidances: Int, digests: Int
    )
}

extension GuidanceStore {
    /// One run alone: its digests, or its error.
    package func writeDigests(
        school: String, date: String, completedAt: String, plan: @escaping @Sendable (DeliveryState) -> [Digest],
        targets: @escaping @Sendable (Digest) -> [DeliveryTarget]
    ) throws(StoreError) -> [Digest] {
        try writeDigests([DeliveryRun(school: school, date: date, completedAt: completedAt, plan: plan, targets: targets)])[0].get()
    }
}
