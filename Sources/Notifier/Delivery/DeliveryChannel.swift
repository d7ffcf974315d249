import Guidance
import Store

/// One way a digest revision leaves the notifier besides the inbox. The
/// dispatcher does the rest for every channel alike: claims under a lease,
/// spreads the claims over the channel's connections, retries with backoff,
/// records outcomes, and holds a teacher's messages for their own time and
/// quiet hours when the channel says so. A new channel is a file with a type
/// conforming to this and a line in `DeliveryConfig.channels` (`DeliveryTests` adds one that
/// exists in the tests only).
protocol DeliveryChannel: Sendable {
    /// Stored with each delivery, the end of its id and a metrics label.
    var id: Channel { get }
    /// Where this channel sends, for the start log (never a secret).
    var summary: String { get }
    /// Sends this replica makes at once over the channel; `send` is called
    /// with a connection below it, one call at a time per connection.
    var connections: Int { get }
    /// Most time one `send` may take to hand its message over; the
    /// dispatcher starts no send that could not do so inside its lease. An
    /// answer may take longer (SMTP's reply to the final dot: 10 minutes),
    /// while the dispatcher renews the lease.
    var timeout: Duration { get }
    /// Whom it serves: where `digest` goes over this channel (an address, a
    /// URL), or nil when it does not go this way, by the roster and the
    /// teachers' 설정 and devices.
    func target(of digest: Digest, in roster: Roster, preferences: DeliveryPreferences) -> String?
    /// How: whether a teacher's own time and quiet hours hold its messages
    /// (what reaches a teacher's inbox or phone), or not (a school's system).
    var followsTeacherHours: Bool { get }
    /// One attempt. Blocks (the dispatcher calls it on a thread of its senders, never a task's).
    func send(_ claim: ClaimedDelivery, roster: Roster, over connection: Int, now: Double) -> DeliveryAttempt
    /// After digest runs wrote `digests`: a channel that leaves some out may
    /// count and log them.
    func written(_ digests: [Digest], roster: Roster)
    /// Stops every send under way within about a second, and every later
    /// one (a shutdown); they end as retriable failures.
    func cancelSends()
}

extension DeliveryChannel {
    var followsTeacherHours: Bool { true }
    func written(_ digests: [Digest], roster: Roster) {}
    func cancelSends() {}
}

/// What one attempt came to, before the retry policy decides when again;
/// retriable or not in the words of `RetriableError`.
enum DeliveryAttempt: Sendable, Equatable {
    case sent
    /// Worth trying again (the receiver's condition: a 4xx reply, no
    /// answer); its `Retry-After` in seconds if it gave one.
    case retriable(String, retryAfter: Double? = nil)
    /// Not worth trying again unchanged (a 5xx reply, an address that is none).
    case notRetriable(String)
}
