import Common
import Foundation
import Guidance
import HTTP
import Store
import Synchronization

/// Sends the outbox. On every replica, one loop per channel claims due
/// deliveries under a lease, sends them over the channel's connections, and
/// records each outcome: sent, retried with backoff, or failed. A replica
/// killed mid-send loses its lease and another sends again: at-least-once,
/// with the same Message-ID / webhook-id for the receiver to drop a copy.
final class Dispatcher: Sendable {
    private let config: DeliveryConfig
    private let rosters: LiveRoster
    private let store: any GuidanceStore
    private let metrics: Metrics
    private let logger: Logger
    private let clock: @Sendable () -> Double
    /// This process's name on its leases.
    private let owner = "\(ProcessInfo.processInfo.hostName)-\(RandomID.uuid().prefix(8))"
    /// The channels on this replica, each sending its own deliveries.
    private let channels: [any DeliveryChannel]
    /// Rung to wake idle loops: a digest run on this replica wrote or ended,
    /// or the dispatcher stops.
    private let doorbell = Doorbell()
    /// Digest runs under way on this replica. They write the outbox that
    /// claims would write too, on the same database: new claims wait for
    /// the runs to end (sends already claimed go on).
    private let runs = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// Loops that have ended, and a ring as each ends.
    private let endedLoops = Atomic<Int>(0)
    private let ended = Doorbell()
    /// Channels whose last attempt failed, retriably: logged once per change.
    private let failing = Mutex<Set<Channel>>([])
    private let backlog = Mutex<(readAt: Double, items: [DeliveryBacklog])>((0, []))

    /// Deliveries claimed per connection at a time.
    static let batchPerConnection = 16

    init(
        config: DeliveryConfig, channels: [any DeliveryChannel], roster: LiveRoster, store: any GuidanceStore, metrics: Metrics,
        logger: Logger,
        clock: @escaping @Sendable () -> Double = Timestamp.now
    ) {
        self.config = config
        self.channels = channels
        rosters = roster
        self.store = store
        self.metrics = metrics
        self.logger = logger.with(["part": "dispatcher"])
        self.clock = clock
        registerGauges()
    }

    /// Where a digest revision must go: each channel's target for it.
    func targets(for digest: Digest, roster: Roster) -> [DeliveryTarget] {
        channels.compactMap { channel in channel.target(of: digest, in: roster).map { DeliveryTarget(channel: channel.id, target: $0) } }
    }

    /// Lets each channel count what it left out, and wakes the loops: the
    /// new deliveries go out now, not at the next poll.
    func written(_ digests: [Digest], roster: Roster) {
        for channel in channels { channel.written(digests, roster: roster) }
        doorbell.ring()
    }

    func start() {
        for channel in channels {
            Task { [self] in
                await run(channel)
                endedLoops.add(1, ordering: .acquiringAndReleasing)
                ended.ring()
            }
        }
        var described = ["email": "off (SMTP_URL not set)"]
        for channel in channels { described[channel.id.rawValue] = channel.summary }
        described["connections"] = String(config.concurrency)
        logger.info("dispatcher started", described)
    }

    /// Stops claiming and gives back what was not sent: another replica
    /// sends it. The messages under way have half of `limit` to finish (a
    /// reply that comes saves a copy sent twice); then they are cancelled,
    /// so that a server that does not answer cannot hold the replica. Waits
    /// at most `limit`.
    func stop(within limit: Duration) async {
        stopping.store(true, ordering: .releasing)
        doorbell.ring()
        if await loopsEnded(within: limit / 2) { return }
        logger.warning(
            "messages under way did not finish; cancelling them (the next replica sends them again, with the same Message-ID)",
            ["seconds": String(Int((limit / 2).seconds))])
        for channel in channels { channel.cancelSends() }
        _ = await loopsEnded(within: limit / 2)
    }

    /// Whether every channel's loop has ended, waiting up to `limit` (a
    /// loop stuck in a send is not waited for beyond it).
    private func loopsEnded(within limit: Duration) async -> Bool {
        await ended.wait(until: { endedLoops.load(ordering: .acquiring) == channels.count }, atMost: limit)
    }

    // MARK: - The loop of one channel

    /// Holds new claims while `body`, a batch of digest runs, writes; then
    /// rings once.
    func holdingClaims<T>(_ body: () async throws -> T) async rethrows -> T {
        runs.add(1, ordering: .acquiringAndReleasing)
        defer {
            runs.subtract(1, ordering: .acquiringAndReleasing)
            doorbell.ring()
        }
        return try await body()
    }

    private func run(_ channel: any DeliveryChannel) async {
        let connections = channel.connections
        while !stopping.load(ordering: .acquiring) {
            // Read before looking: a ring from here on wakes the wait below.
            let seen = doorbell.rings
            if runs.load(ordering: .acquiring) > 0 {
                await doorbell.wait(after: seen, atMost: config.pollInterval)
                continue
            }
            await refreshBacklog()
            let now = clock()
            let leaseUntil = now + config.lease.seconds
            let store = self.store
            let owner = self.owner
            let claims: [ClaimedDelivery]
            do {
                claims = try await blocking {
                    try store.claimDeliveries(
                        channel: channel.id, limit: connections * Dispatcher.batchPerConnection, owner: owner, now: now,
                        leaseUntil: leaseUntil)
                }
            } catch {
                logger.warning("could not claim deliveries; trying again shortly", ["channel": channel.id.rawValue, "error": "\(error)"])
                await doorbell.wait(after: seen, atMost: config.pollInterval)
                continue
            }
            guard !claims.isEmpty else {
                // Idle: the next poll, or sooner when a digest run here rings.
                await doorbell.wait(after: seen, atMost: config.pollInterval)
                continue
            }
            let lease = BatchLease(until: leaseUntil)
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [self] in await keep(lease, of: claims.map(\.delivery.deliveryId)) }
                await withTaskGroup(of: Void.self) { sends in
                    for connection in 0..<min(connections, claims.count) {
                        let share = stride(from: connection, to: claims.count, by: connections).map { claims[$0] }
                        sends.addTask { [self] in
                            _ = try? await blocking { self.send(share, through: channel, over: connection, lease: lease) }
                        }
                    }
                }
                lease.end()
            }
        }
    }

    /// Renews a batch's lease every third of its length while its sends run:
    /// a message waiting for its answer (SMTP allows 10 minutes) keeps its
    /// claim, and no other replica sends it meanwhile. Ends with the batch.
    private func keep(_ lease: BatchLease, of deliveryIds: [String]) async {
        let (store, owner, length) = (self.store, self.owner, config.lease)
        while true {
            let seen = lease.ended.rings
            guard lease.isRunning else { return }
            await lease.ended.wait(after: seen, atMost: length / 3)
            guard lease.isRunning else { return }
            let until = clock() + length.seconds
            do {
                try await blocking { try store.extendLeases(deliveryIds: deliveryIds, owner: owner, until: until) }
                lease.extend(to: until)
            } catch {
                logger.warning(
                    "could not renew the lease of deliveries being sent; another replica may send them again", ["error": "\(error)"])
            }
        }
    }

    /// Sends claimed deliveries one after another over one connection. Runs
    /// through `blocking`, on a thread of Dispatch's global queue (libcurl
    /// blocks), one for each connection in use.
    private func send(_ claims: [ClaimedDelivery], through channel: any DeliveryChannel, over connection: Int, lease: BatchLease) {
        // A send must end inside the lease, or another replica could send the
        // same delivery at the same time.
        let longest = channel.timeout.seconds + 1
        // Outcomes are written together every 50 ms rather than one
        // transaction (and fsync) a message; a replica killed in between
        // sends those again after their lease.
        var outcomes: [(deliveryId: String, outcome: DeliveryOutcome)] = []
        var recordedAt = clock()
        defer { record(&outcomes) }
        func giveBack(from index: Int) {
            record(&outcomes)
            let rest = claims[index...].map(\.delivery.deliveryId)
            do { try store.release(deliveryIds: rest, owner: owner) } catch {
                logger.warning("could not give back claimed deliveries; their lease expires instead", ["error": "\(error)"])
            }
        }
        for (index, claim) in claims.enumerated() {
            if stopping.load(ordering: .acquiring) || clock() + longest > lease.until {
                return giveBack(from: index)
            }
            if claim.takenOver {
                metrics.increment(
                    "notifier_delivery_lease_takeovers_total",
                    help: "Deliveries sent again because their sender's lease expired (a killed or stuck replica).",
                    labels: [("channel", channel.id.rawValue)])
                logger.warning(
                    "delivery's lease expired without an outcome; sending again (the receiver dedupes by its id)",
                    ["delivery": claim.delivery.deliveryId])
            }
            let outcome = channel.send(claim, roster: rosters.current, over: connection, now: clock())
            // Cancelled by a shutdown: not an attempt; the next replica sends it.
            if case .retriable = outcome, stopping.load(ordering: .acquiring) {
                return giveBack(from: index)
            }
            let now = clock()
            let recorded: DeliveryOutcome
            switch outcome {
            case .sent:
                recorded = .sent
            case .notRetriable(let error):
                recorded = .failed(error: error)
            case .retriable(let error, let retryAfter):
                let policy = RetryPolicy(
                    base: config.retryBase.seconds, maxBackoff: config.maxBackoff.seconds, maxAge: config.maxAge.seconds)
                if let at = policy.next(
                    attempts: claim.delivery.attempts + 1, now: now, queuedAt: claim.queuedAt, retryAfter: retryAfter,
                    random: Double.random(in: 0...1))
                {
                    recorded = .retry(error: error, at: at)
                } else {
                    recorded = .failed(
                        error: "gave up after \(claim.delivery.attempts + 1) attempts over \(Int(config.maxAge.seconds / 3600)) h: \(error)"
                    )
                }
            }
            report(recorded, of: claim, now: now)
            outcomes.append((claim.delivery.deliveryId, recorded))
            if now - recordedAt >= 0.05 {
                record(&outcomes)
                recordedAt = now
            }
        }
    }

    /// Writes the outcomes gathered so far and empties the list.
    private func record(_ outcomes: inout [(deliveryId: String, outcome: DeliveryOutcome)]) {
        guard !outcomes.isEmpty else { return }
        do {
            try store.record(outcomes, owner: owner, now: clock())
        } catch {
            logger.error(
                "could not record deliveries' outcomes; they are sent again after their lease",
                ["deliveries": outcomes.map(\.deliveryId).joined(separator: ","), "error": "\(error)"])
        }
        outcomes.removeAll()
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
        if let items = try? await blocking({ try store.deliveryBacklog(of: ids) }) {
            backlog.withLock { $0.items = items }
        }
    }
}

/// The lease of one claimed batch: when it ends, moved later while the
/// batch's sends run (`Dispatcher.keep`), and whether they still run.
private final class BatchLease: Sendable {
    private let state: Mutex<(until: Double, running: Bool)>
    /// Rung when the batch's sends are done.
    let ended = Doorbell()

    init(until: Double) {
        state = Mutex((until, true))
    }

    var until: Double { state.withLock { $0.until } }
    var isRunning: Bool { state.withLock { $0.running } }

    func extend(to until: Double) {
        state.withLock { $0.until = max($0.until, until) }
    }

    func end() {
        state.withLock { $0.running = false }
        ended.ring()
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
    static func seconds(retryAfter text: String, now: Double = Timestamp.now()) -> Double? {
        if let seconds = Int(text), seconds >= 0 { return Double(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text).map { max(0, $0.timeIntervalSince1970 - now) }
    }
}
