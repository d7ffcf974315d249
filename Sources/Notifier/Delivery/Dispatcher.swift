import Common
import Foundation
import Guidance
import HTTP
import Store
import Synchronization

/// Sends the outbox. On every replica, one loop per connection of each
/// channel claims due deliveries under a lease, sends them over its
/// connection, and records each outcome: sent, retried with backoff, or
/// failed. The loops go at their own pace: a slow receiver holds its own
/// connection, not the others'. A school whose deliveries already take
/// half a channel's connections gets no more of them while another
/// school's are due (its slow endpoints cannot hold another school's
/// messages), and all of them when nobody else's are. A replica killed
/// mid-send loses its lease and another sends again: at-least-once, with
/// the same Message-ID / webhook-id for the receiver to drop a copy.
final class Dispatcher: Sendable {
    private let config: DeliveryConfig
    private let rosters: LiveRoster
    private let store: SQLStore
    private let metrics: Metrics
    private let logger: Logger
    private let clock: @Sendable () -> Double
    /// What the loops' poll and the leases' renewals wait on.
    private let timer: any Clock<Duration>
    /// This process's name on its leases.
    private let owner = "\(ProcessInfo.processInfo.hostName)-\(RandomID.uuid().prefix(8))"
    /// The channels on this replica, each sending its own deliveries.
    private let channels: [any DeliveryChannel]
    /// Where batches are sent (libcurl blocks): one thread per connection
    /// of every channel, so a slow receiver holds its own connection's.
    private let senders: BlockingExecutor
    /// Rung to wake idle loops: a digest run on this replica wrote or ended,
    /// or the dispatcher stops.
    private let doorbell = Doorbell()
    /// Digest runs under way on this replica. They write the outbox that
    /// claims would write too, on the same database: new claims wait for
    /// the runs to end (sends already claimed go on).
    private let runs = Atomic<Int>(0)
    /// Set at stop: sends under way give back what they have not sent.
    private let stopping = Atomic<Bool>(false)
    /// Channels whose last attempt failed, retriably: logged once per change.
    private let failing = Mutex<Set<Channel>>([])
    private let backlog = Mutex<(readAt: Double, items: [DeliveryBacklog])>((0, []))
    /// Per channel and school, how many connections are sending its
    /// deliveries; held while a claim is made, so that two connections'
    /// claims see each other's.
    private let sending = Mutex<[Channel: [String: Int]]>([:])
    /// The channels one of whose loops is claiming now. One claim a channel
    /// at a time: the others' loops skip their turn rather than park a
    /// thread behind it (a store that stopped answering would hold one per
    /// connection); a claim that found work rings them.
    private let claiming = Mutex<Set<Channel>>([])

    /// Deliveries claimed per connection at a time.
    static let batchPerConnection = 16

    init(
        config: DeliveryConfig, channels: [any DeliveryChannel], roster: LiveRoster, store: SQLStore, metrics: Metrics,
        logger: Logger,
        clock: @escaping @Sendable () -> Double, timer: any Clock<Duration>
    ) {
        self.config = config
        self.channels = channels
        senders = BlockingExecutor("senders", threads: channels.reduce(0) { $0 + $1.connections })
        rosters = roster
        self.store = store
        self.metrics = metrics
        self.logger = logger.with(["part": "dispatcher"])
        self.clock = clock
        self.timer = timer
        registerGauges()
    }

    /// Where `digest`, written at `now`, goes and when: each channel's
    /// target for it, by its teacher's settings (설정), held for their own
    /// time and quiet hours unless `urgent` or the channel serves a school
    /// rather than a teacher.
    func targets(for digest: Digest, roster: Roster, preferences: DeliveryPreferences, urgent: Bool = false, now: Double)
        -> [DeliveryTarget]
    {
        let release =
            roster.school(digest.schoolId).map {
                preferences.of(digest.teacherId).release(
                    of: digest, urgent: urgent, school: $0, now: now, quietByDefault: config.quietHours)
            } ?? now
        return channels.compactMap { channel in
            guard let target = channel.target(of: digest, in: roster, preferences: preferences) else { return nil }
            guard channel.followsTeacherHours else { return DeliveryTarget(channel: channel.id, target: target) }
            return DeliveryTarget(channel: channel.id, target: target, heldUntil: release > now ? release : nil, urgent: urgent)
        }
    }

    /// Lets each channel count what it left out, and wakes the loops: the
    /// new deliveries go out now, not at the next poll.
    func written(_ digests: [Digest], roster: Roster) {
        for channel in channels { channel.written(digests, roster: roster) }
        doorbell.ring()
    }

    /// The part: a loop per connection of each channel, woken by `doorbell`
    /// or the poll interval. Stopping stops claiming and gives back what was not sent:
    /// another replica sends it. The messages under way have half of
    /// `limit` to finish (a reply that comes saves a copy sent twice); then
    /// they are cancelled, so that a server that does not answer cannot hold
    /// the replica. It waits at most `limit`.
    func part(stoppingWithin limit: Duration) -> Part {
        let wokenBy = "a digest run on this replica; other replicas' runs write the same outbox unseen, so the period"
        let loops = channels.flatMap { channel in
            (0..<channel.connections).map { connection in
                Loop(
                    "dispatcher (\(channel.id.rawValue) \(connection + 1))", every: config.pollInterval, bell: doorbell, wokenBy: wokenBy,
                    clock: timer
                ) { [weak self] in await self?.turn(channel, over: connection) }
            }
        }
        let waits = Part.Waits.loop(
            "dispatcher (a loop per connection of each channel)", place: .task, period: config.pollInterval, wokenBy: wokenBy)
        return Part(
            "dispatcher", waits: [waits],
            start: { [self] in
                for loop in loops { loop.start() }
                var described = ["email": "off (SMTP_URL not set)"]
                for channel in channels { described[channel.id.rawValue] = channel.summary }
                described["connections"] = String(config.concurrency)
                logger.info("dispatcher started", described)
            },
            stop: { [self] in
                stopping.store(true, ordering: .releasing)
                if await Loop.stop(loops, within: limit / 2) {
                    // Nothing under way, but a connection may still be open to a
                    // server that stopped answering: closing it must not wait
                    // for a goodbye (SMTP's QUIT) that never comes.
                    for channel in channels { channel.cancelSends() }
                    return
                }
                logger.warning(
                    "messages under way did not finish; cancelling them (the next replica sends them again, with the same Message-ID)",
                    ["seconds": String(Int((limit / 2).seconds))])
                for channel in channels { channel.cancelSends() }
                _ = await Loop.stop(loops, within: limit / 2)
            })
    }

    // MARK: - The loop of one channel

    /// Holds new claims while `body`, a commit of digest runs, writes; then
    /// rings once.
    func holdingClaims<T>(_ body: () async throws -> T) async rethrows -> T {
        runs.add(1, ordering: .acquiringAndReleasing)
        defer {
            runs.subtract(1, ordering: .acquiringAndReleasing)
            doorbell.ring()
        }
        return try await body()
    }

    /// One turn of a connection's loop: claims what is due (unless digest
    /// runs are writing) and sends it over the connection; after a batch,
    /// rings for the next at once.
    private func turn(_ channel: any DeliveryChannel, over connection: Int) async {
        guard runs.load(ordering: .acquiring) == 0 else { return }
        await refreshBacklog()
        let now = clock()
        let leaseUntil = now + config.lease.seconds
        guard claiming.withLock({ $0.insert(channel.id).inserted }) else { return }
        let claims: [ClaimedDelivery]
        do {
            defer { claiming.withLock { _ = $0.remove(channel.id) } }
            claims = try await store.blocking { try self.claim(channel, now: now, leaseUntil: leaseUntil) }
        } catch {
            logger.warning("could not claim deliveries; trying again shortly", ["channel": channel.id.rawValue, "error": "\(error)"])
            return
        }
        metrics.increment(
            "notifier_delivery_claims_total",
            help: "Times the dispatcher looked for due deliveries, found or not, per channel: its loops turn while the outbox waits.",
            labels: [("channel", channel.id.rawValue)])
        guard !claims.isEmpty else { return }
        // More may be due (another school's, the rest of this one's): the
        // idle loops, and those that skipped their turn while this one
        // claimed, take the next batch while this one is sent.
        doorbell.ring()
        let schools = Set(claims.map(\.delivery.schoolId))
        defer {
            sending.withLock { sending in
                for school in schools { sending[channel.id]?[school, default: 1] -= 1 }
                sending[channel.id] = sending[channel.id]?.filter { $0.value > 0 }
            }
        }
        let lease = BatchLease(until: leaseUntil)
        // Renewed every third of its length while the sends run: a message
        // waiting for its answer (SMTP allows 10 minutes) keeps its claim,
        // and no other replica sends it meanwhile.
        let keeper = Loop("lease renewal", every: config.lease / 3, wokenBy: "the batch's end", clock: timer, waitsFirst: true) {
            [self] in await renew(lease, of: claims.map(\.delivery.deliveryId))
        }
        keeper.start()
        _ = try? await senders.run { self.send(claims, through: channel, over: connection, lease: lease) }
        await keeper.stop()
        // A batch went out: this loop's next turn comes at once, and so do the
        // others' (a claim that finds nothing rings nobody).
        doorbell.ring()
    }

    /// A connection's next batch: due deliveries of schools whose sends take
    /// fewer than half the channel's connections; when none is due, any
    /// school's (a school alone uses every connection). The schools claimed
    /// count one more connection each until the batch ends.
    private func claim(_ channel: any DeliveryChannel, now: Double, leaseUntil: Double) throws(StoreError) -> [ClaimedDelivery] {
        try sending.withLock { (sending: inout [Channel: [String: Int]]) throws(StoreError) -> [ClaimedDelivery] in
            let share = max(1, channel.connections / 2)
            let full = (sending[channel.id] ?? [:]).filter { $0.value >= share }.map(\.key).sorted()
            var claims = try store.claimDeliveries(
                channel: channel.id, limit: Dispatcher.batchPerConnection, owner: owner, now: now, leaseUntil: leaseUntil, excluding: full)
            if claims.isEmpty && !full.isEmpty {
                claims = try store.claimDeliveries(
                    channel: channel.id, limit: Dispatcher.batchPerConnection, owner: owner, now: now, leaseUntil: leaseUntil)
            }
            for school in Set(claims.map(\.delivery.schoolId)) { sending[channel.id, default: [:]][school, default: 0] += 1 }
            return claims
        }
    }

    private func renew(_ lease: BatchLease, of deliveryIds: [String]) async {
        let (store, owner) = (self.store, self.owner)
        let until = clock() + config.lease.seconds
        do {
            try await store.blocking { try store.extendLeases(deliveryIds: deliveryIds, owner: owner, until: until) }
            lease.extend(to: until)
        } catch {
            logger.warning("could not renew the lease of deliveries being sent; another replica may send them again", ["error": "\(error)"])
        }
    }

    /// Sends claimed deliveries one after another over one connection, as
    /// `DeliveryBatch` decides. Runs on a thread of `senders` (libcurl
    /// blocks), one for each connection in use.
    private func send(_ claims: [ClaimedDelivery], through channel: any DeliveryChannel, over connection: Int, lease: BatchLease) {
        let retry = RetryPolicy(base: config.retryBase.seconds, maxBackoff: config.maxBackoff.seconds, maxAge: config.maxAge.seconds)
        var batch = DeliveryBatch(claims: claims, retry: retry, longestSend: channel.timeout.seconds + 1, now: clock())
        while true {
            switch batch.next(now: clock(), leaseUntil: lease.until, stopping: stopping.load(ordering: .acquiring)) {
            case .send(let claim):
                if claim.takenOver {
                    metrics.increment(
                        "notifier_delivery_lease_takeovers_total",
                        help: "Deliveries sent again because their sender's lease expired (a killed or stuck replica).",
                        labels: [("channel", channel.id.rawValue)])
                    logger.warning(
                        "delivery's lease expired without an outcome; sending again (the receiver dedupes by its id)",
                        ["delivery": claim.delivery.deliveryId])
                }
                let attempt = channel.send(claim, roster: rosters.current, over: connection, now: clock())
                let now = clock()
                if let outcome = batch.sent(
                    attempt, now: now, stopping: stopping.load(ordering: .acquiring), random: Double.random(in: 0...1))
                {
                    report(outcome, of: claim, now: now)
                }
            case .record(let outcomes):
                do {
                    try store.record(outcomes, owner: owner, now: clock())
                } catch {
                    logger.error(
                        "could not record deliveries' outcomes; they are sent again after their lease",
                        ["deliveries": outcomes.map(\.deliveryId).joined(separator: ","), "error": "\(error)"])
                }
            case .giveBack(let deliveryIds):
                do { try store.release(deliveryIds: deliveryIds, owner: owner) } catch {
                    logger.warning("could not give back claimed deliveries; their lease expires instead", ["error": "\(error)"])
                }
            case .done:
                return
            }
        }
    }

    /// Metrics for every outcome; logs once per change of a channel's health.
    private func report(_ outcome: DeliveryOutcome, of claim: ClaimedDelivery, now: Double) {
        let channel = claim.delivery.channel
        let name: String
        switch outcome {
        case .sent:
            name = "sent"
            metrics.observe(
                "notifier_delivery_seconds", help: "Time from a digest's creation to its delivery.",
                labels: [("channel", channel.rawValue)], value: max(0, now - claim.delivery.createdAt), buckets: Dispatcher.ageBuckets)
            if failing.withLock({ $0.remove(channel) }) != nil {
                logger.info("\(channel.rawValue) delivery works again", ["channel": channel.rawValue])
            }
        case .retry(let error, let at):
            name = "retry"
            if failing.withLock({ $0.insert(channel).inserted }) {
                logger.warning(
                    "\(channel.rawValue) delivery is failing; retrying with backoff (logged again when it works)",
                    ["channel": channel.rawValue, "error": error, "nextAttemptIn": "\(Int(at - now)) s"])
            }
        case .failed(let error):
            name = "failed"
            logger.warning(
                "delivery failed for good; an admin can retry it (POST …/deliveries/{id}/retry)",
                ["delivery": claim.delivery.deliveryId, "channel": channel.rawValue, "error": error])
        }
        metrics.increment(
            "notifier_deliveries_total", help: "Delivery attempts by channel and outcome.",
            labels: [("channel", channel.rawValue), ("outcome", name)])
    }

    static let ageBuckets: [Double] = [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21_600, 86_400]

    // MARK: - Backlog gauges

    private func registerGauges() {
        let (clock, ids) = (self.clock, channels.map(\.id))
        // Weak: the registry outlives no one, but must not keep the dispatcher.
        metrics.gauge("notifier_deliveries_pending", help: "Deliveries waiting to be sent, per channel (read every few seconds).") {
            [weak self] in
            let items = self?.backlog.withLock { $0.items } ?? []
            return ids.map { channel in ([("channel", channel.rawValue)], Double(items.first { $0.channel == channel }?.pending ?? 0)) }
        }
        metrics.gauge("notifier_delivery_oldest_pending_seconds", help: "Age of the oldest pending delivery's digest, per channel.") {
            [weak self] in
            let items = self?.backlog.withLock { $0.items } ?? []
            let now = clock()
            return ids.map { channel in
                ([("channel", channel.rawValue)], items.first { $0.channel == channel }?.oldestCreatedAt.map { max(0, now - $0) } ?? 0)
            }
        }
    }

    /// Reads the backlog at most every 5 s, for the gauges.
    private func refreshBacklog() async {
        let now = clock()
        let due = backlog.withLock { backlog in
            guard now - backlog.readAt >= 5 else { return false }
            backlog.readAt = now
            return true
        }
        guard due else { return }
        let store = self.store
        let ids = channels.map(\.id)
        if let items = try? await store.blocking({ try store.deliveryBacklog(of: ids) }) {
            backlog.withLock { $0.items = items }
        }
    }
}

/// The lease of one claimed batch: when it ends, moved later while the
/// batch's sends run.
fileprivate final class BatchLease: Sendable {
    private let end: Mutex<Double>

    init(until: Double) {
        end = Mutex(until)
    }

    var until: Double { end.withLock { $0 } }

    func extend(to until: Double) {
        end.withLock { $0 = max($0, until) }
    }
}

/// When to try a failed delivery again: exponential backoff with jitter,
/// until a maximum age.
struct RetryPolicy {
    let base: Double
    let maxBackoff: Double
    let maxAge: Double

    /// The next attempt's time after `attempts` attempts, or nil when the
    /// delivery is too old to try again. A receiver's `Retry-After` wins
    /// over the backoff.
    func next(attempts: Int, now: Double, queuedAt: Double, retryAfter: Double?, random: Double) -> Double? {
        let backoff = min(base * pow(2, Double(min(max(attempts - 1, 0), 30))), maxBackoff)
        let delay = retryAfter.map { min(max($0, 1), maxAge) } ?? backoff * (0.5 + 0.5 * random)
        let at = now + delay
        return at > queuedAt + maxAge ? nil : at
    }

    /// `Retry-After` as seconds or an HTTP date.
    static func seconds(retryAfter text: String, now: Double) -> Double? {
        if let seconds = Int(text), seconds >= 0 { return Double(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text).map { max(0, $0.timeIntervalSince1970 - now) }
    }
}
