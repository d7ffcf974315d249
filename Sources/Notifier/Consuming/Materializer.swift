import Common
import DeadLetters
import Foundation
import Guidance
import Kafka
import Store
import Synchronization

/// The consumer-group member that writes the events topics into the store. It runs
/// on a thread of its own: poll a batch, send undecodable messages to the
/// dead-letter topic, hand the rest to the writer queue for one store
/// transaction, and poll and decode the next batch meanwhile; only once the
/// store wrote a batch are its offsets stored and committed, on this thread.
/// A crash anywhere replays, and replays are harmless.
final class Materializer: Sendable {
    private let consumer: Consumer
    private let store: SQLStore
    private let producer: Producer
    private let roster: LiveRoster
    private let topics: Topics
    private let groupID: String
    private let maxBatch: Int
    private let metrics: Metrics
    private let logger: Logger
    /// The consuming thread: a turn polls a batch and hands it on.
    private let loop: Loop
    /// What the consuming thread keeps from one turn to the next. Only
    /// that thread takes the lock, and `stop` once the thread has ended.
    private let consuming: Mutex<Consuming>
    /// Where the store writes one batch while the consuming thread polls and
    /// decodes the next (apply 100,000 events: decoding was a third of the
    /// time, and waited for the store).
    private let writer = DispatchQueue(label: "notifier-materializer-writer")
    /// The loop's bell, rung by `stop`: the thread's pauses (the roster hold
    /// full, a dead letter or a store write to retry) end at once.
    private let wake = Doorbell()
    /// Rung each time a batch's offsets were committed: the digest run's
    /// cutoff looks again then.
    let committed = Doorbell()
    /// Since when, and why, the store refuses writes; nil while it takes them.
    private let outage = Mutex<StoreOutage?>(nil)
    private let rosterGrace: Double
    private let retention: Retention
    private let clock: @Sendable () -> Double
    /// Messages waiting for the roster (`RosterHold.count`), for metrics.
    private let held = Atomic<Int>(0)
    /// Partitions revoked inside `poll`, for the consuming thread to forget.
    private let revocations = Revocations()
    /// Rung as partitions are assigned or revoked.
    let rebalanced = Doorbell()

    init(config: NotifierConfig, roster: LiveRoster, store: SQLStore, producer: Producer, metrics: Metrics, logger: Logger)
        throws(KafkaError)
    {
        self.store = store
        self.producer = producer
        self.metrics = metrics
        self.logger = logger
        topics = config.topics
        groupID = config.groupID
        maxBatch = config.maxBatch
        rosterGrace = config.rosterGrace.seconds
        retention = config.retention
        clock = config.clock
        self.roster = roster
        consuming = Mutex(Consuming(hold: RosterHold(grace: config.rosterGrace.seconds)))
        loop = Loop(
            "consumer (materializer)", onThreadEvery: nil, bell: wake,
            wokenBy:
                "librdkafka (a poll of 200 ms; the store writes the batch before on a serial queue meanwhile); `stop`; "
                + "the roster hold full: 200 ms; a dead letter or a store write to retry: its backoff")
        let consumerConfig = ConsumerConfig(
            kafka: config.kafka, groupID: config.groupID, topics: config.topics.events + [config.topics.access],
            instanceID: config.instanceID, clientID: "guidance-notifier")
        let (revocations, rebalanced) = (revocations, rebalanced)
        consumer = try Consumer(config: consumerConfig, logger: logger.with(["part": "consumer"])) { event in
            if case .revoked(let partitions) = event { revocations.add(partitions) }
            rebalanced.ring()
        }
        metrics.gauge(
            "notifier_store_writes_failing", help: "1 while the store refuses event writes (events wait at their offsets), else 0."
        ) { [weak self] in
            [([], self?.storeOutage == nil ? 0 : 1)]
        }
        metrics.gauge(
            "notifier_events_held", help: "Events waiting for the roster to list an id they name, with the rest of their partition."
        ) { [weak self] in
            [([], Double(self?.held.load(ordering: .relaxed) ?? 0))]
        }
        metrics.gauge("notifier_consumer_lag", help: "Messages not yet applied, per assigned partition.") { [weak self] in
            (self?.consumer.lag() ?? [:]).sorted { ($0.key.topic, $0.key.partition) < ($1.key.topic, $1.key.partition) }.map {
                ([("topic", $0.key.topic), ("partition", String($0.key.partition))], Double($0.value))
            }
        }
    }

    /// Since when, and why, store writes fail; nil while they succeed.
    var storeOutage: StoreOutage? { outage.withLock { $0 } }

    /// Partitions this replica consumes now.
    var assignedPartitions: Int { consumer.assignment().count }

    /// The replica's member id in the group; nil until it joined.
    var memberID: String? { consumer.memberID }

    /// The consumer part: starting joins the group; stopping finishes the
    /// batch in hand, commits and leaves the group.
    var part: Part {
        Part("consumer", waits: [loop.waits], start: { self.start() }, stop: { await self.stop() })
    }

    func start() {
        loop.start { [self] in consuming.withLock { turn(&$0) } }
    }

    /// Finishes the batch in hand, commits, and leaves the group. Held
    /// messages are not committed: whoever consumes their partitions next
    /// reads them again.
    func stop() async {
        await loop.stop()
        _ = try? await blocking { [self] in
            let writing = consuming.withLock { consuming in
                defer { consuming.writing = nil }
                return consuming.writing
            }
            if let writing { _ = finish(writing) }
            consumer.close()
            held.store(0, ordering: .relaxed)
        }
    }

    private var running: Bool { !loop.isStopping }

    /// One turn of the consuming thread: poll what is fetched (while a batch
    /// is being written, only what is fetched already; while the roster
    /// holds its most, nothing new), release what the roster lists, and
    /// hand it to the writer queue once the batch before is written.
    private func turn(_ state: inout Consuming) {
        defer { held.store(state.hold.count, ordering: .relaxed) }
        let room = min(maxBatch, RosterHold.limit - state.hold.count)
        if room <= 0 {
            // Held messages are looked at again every 200 ms (a roster reload rings nothing).
            let seen = wake.rings
            if running { wake.block(after: seen, atMost: .milliseconds(200)) }
        }
        let batch = room > 0 ? consumer.poll(maxMessages: room, timeout: state.writing == nil ? .milliseconds(200) : .zero) : []
        state.hold.drop(revocations.take())
        if state.join.isSlow(joined: consumer.memberID != nil, now: .now) {
            logger.warning(
                "not yet a member of the consumer group; waiting for the rebalance (it waits for every member to rejoin)",
                ["group": groupID, "after": "\(SlowJoin.limit)"])
        }
        if batch.isEmpty, let previous = state.writing {
            state.writing = nil
            guard finish(previous) else { return }
        }
        // One roster for the whole batch, even if it is reloaded meanwhile.
        let current = roster.current
        let decoder = EventDecoder(roster: current, topics: topics, retention: retention, now: clock())
        let released = state.hold.take(batch, now: decoder.now, decode: decoder.decode) { message, failure in
            logger.warning(
                "event held until the roster lists the id it names; its partition waits behind it",
                [
                    "reason": failure.reason, "topic": message.topic, "partition": String(message.partition),
                    "offset": String(message.offset), "grace": "\(Int(rosterGrace)) s"
                ])
        }
        guard !released.isEmpty else { return }
        var events: [StoredEvent] = []
        var sources: [ConsumedMessage] = []
        events.reserveCapacity(released.count)
        sources.reserveCapacity(released.count)
        for item in released {
            switch item.outcome {
            case .event(let event):
                events.append(event)
                sources.append(item.message)
                if item.held > 0 {
                    logger.info(
                        "held event released: the roster lists it now",
                        [
                            "topic": item.message.topic, "partition": String(item.message.partition),
                            "offset": String(item.message.offset), "heldFor": "\(Int(item.held)) s"
                        ])
                }
            case .deadLetter(let reason):
                guard deadLetter(item.message, reason: reason) else { return }
            }
        }
        if let previous = state.writing {
            state.writing = nil
            guard finish(previous) else { return }
        }
        let writing = PendingWrite(settled: released.map(\.message), sources: sources)
        state.writing = writing
        writer.async { [self, events, rules = current.rules, schools = current.schools] in
            writing.end(with: apply(events, rules: rules, schools: schools))
        }
    }

    /// After the store wrote a batch: its rejections to the dead-letter
    /// topic, then its offsets stored and committed. False when stopping.
    private func finish(_ written: PendingWrite) -> Bool {
        guard let rejections = written.wait() else { return false }
        for rejection in rejections {
            metrics.increment(
                "notifier_events_rejected_total",
                help: "Events the store kept out: an id of another school, or registered with other content.",
                labels: [("reason", rejection.reason.prefix { $0 != ":" }.description)])
            guard deadLetter(written.sources[rejection.index], reason: rejection.reason) else { return false }
        }
        let appliedAt = Date().timeIntervalSince1970
        do {
            try consumer.store(written.settled)
            // Not waiting keeps the next batch flowing; the rebalance and
            // the close commit and wait.
            try consumer.commit(wait: false)
            committed.ring()
        } catch {
            // Applied but not committed: a replay will redo it harmlessly.
            logger.warning("offset commit failed", ["error": error.message])
        }
        metrics.increment("notifier_events_applied_total", help: "Events written to the store.", by: Double(written.sources.count))
        metrics.observe(
            "notifier_event_visibility_seconds",
            help: "From the event's creation by ingest to its commit in the store (readable by the list API).",
            values: written.sources.compactMap { $0.timestampMilliseconds.map { appliedAt - Double($0) / 1000 } })
        return true
    }

    /// Applies the batch. A failure of the store itself (disk full, I/O,
    /// read-only, a lost session: anything that does not name the data) is
    /// retried with backoff, for as long as it lasts, the offsets held. Only
    /// an error that names the data (a constraint, a value the store cannot
    /// hold) is narrowed down by halving the batch, and the event it comes
    /// from returned as a rejection, so one bad event cannot wedge the
    /// group. Nil means stopping, with nothing committed.
    private func apply(_ events: [StoredEvent], rules: [String: [SchoolRule]], schools: [String: School]) -> [Rejection]? {
        retrying { () throws -> [Rejection] in
            do throws(StoreError) {
                let rejections = try store.apply(events, rules: rules, schools: schools)
                storeWritesSucceed()
                return rejections
            } catch  where error.isDataError {
                metrics.increment("notifier_store_errors_total", help: "Failed store writes.")
                guard events.count > 1 else {
                    logger.error("the store refuses an event; dead-lettering it", ["error": error.message])
                    return [Rejection(index: 0, reason: "store: \(error.message)")]
                }
                let half = events.count / 2
                // Each half retries on its own; nil only once stopping, which ends this retry too.
                guard let first = apply(Array(events[..<half]), rules: rules, schools: schools),
                    let second = apply(Array(events[half...]), rules: rules, schools: schools)
                else {
                    throw CancellationError()
                }
                return first + second.map { Rejection(index: $0.index + half, reason: $0.reason) }
            } catch {
                metrics.increment("notifier_store_errors_total", help: "Failed store writes.")
                storeWritesFail(error, events: events.count)
                throw error
            }
        }
    }

    /// One log line when the store starts refusing writes; the cause kept
    /// for readiness and the API's 503s.
    private func storeWritesFail(_ error: StoreError, events: Int) {
        let started = outage.withLock { outage in
            defer { outage = StoreOutage(since: outage?.since ?? clock(), cause: error.message) }
            return outage == nil
        }
        if started {
            logger.error(
                "STORE WRITES FAILING: events wait at their offsets and are retried until the store takes them; nothing is dead-lettered meanwhile",
                [
                    "error": error.message, "events": String(events)
                ])
        }
    }

    /// One log line when writes succeed again after failing.
    private func storeWritesSucceed() {
        guard
            let ended = outage.withLock({ outage in
                defer { outage = nil }
                return outage
            })
        else { return }
        logger.info("store writes succeed again; the held events are written", ["failedFor": "\(Int(clock() - ended.since)) s"])
    }

    /// Sends a message that is not a valid event, or that the store kept out,
    /// to the dead-letter topic and waits for the acknowledgement, so its
    /// offset is never committed before it is kept.
    private func deadLetter(_ message: ConsumedMessage, reason: String) -> Bool {
        let letter = DeadLetters.deadLetter(message, reason: reason, group: groupID, topic: topics.deadLetters)
        let sent: Void? = retrying { () throws(KafkaError) in
            let done = DispatchSemaphore(value: 0)
            let outcome = Mutex<Result<DeliveryReport, KafkaError>?>(nil)
            producer.send(letter) { result in
                outcome.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            // The completion set it before it signalled.
            switch outcome.withLock({ $0 }) ?? .failure(KafkaError(.producerFailed, "no delivery report")) {
            case .success:
                logger.warning(
                    "message sent to the dead-letter topic",
                    [
                        "reason": reason, "topic": message.topic, "partition": String(message.partition), "offset": String(message.offset)
                    ])
                metrics.increment("notifier_dead_letters_total", help: "Messages sent to the dead-letter topic.")
            case .failure(let error):
                logger.error("could not send to the dead-letter topic; retrying", ["error": error.message])
                throw error
            }
        }
        return sent != nil
    }

    /// Runs `attempt` until it does not throw, pausing between tries with a
    /// backoff (0.1 s, doubling up to 5 s) that `stop` ends; nil once stopping.
    private func retrying<T, Failure>(_ attempt: () throws(Failure) -> T) -> T? {
        var delay = 0.1
        while true {
            if let value = try? attempt() { return value }
            guard sleepWhileRunning(delay) else { return nil }
            delay = min(delay * 2, 5)
        }
    }

    /// Pauses `seconds`, or until `stop`; whether still running.
    private func sleepWhileRunning(_ seconds: Double) -> Bool {
        let seen = wake.rings
        guard running else { return false }
        wake.block(after: seen, atMost: .milliseconds(Int64(seconds * 1000)))
        return running
    }
}

extension Materializer {
    /// What the consuming thread keeps from one turn to the next: the
    /// messages the roster holds, the batch the writer queue is writing
    /// (its offsets stored once it is written, by the consuming thread, or
    /// by `stop` once that thread has ended: never beside a poll), and how
    /// long it has waited to join its group.
    struct Consuming {
        var hold: RosterHold
        var writing: PendingWrite?
        var join = SlowJoin()
    }
}

extension Materializer {
    /// A batch handed to the writer queue, and what the store made of it.
    final class PendingWrite: Sendable {
        /// Every message this batch settles (written or dead-lettered): the
        /// offsets stored once it is written.
        let settled: [ConsumedMessage]
        /// The decoded messages, in the order of the events written.
        let sources: [ConsumedMessage]
        private let outcome = Mutex<[Rejection]??>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(settled: [ConsumedMessage], sources: [ConsumedMessage]) {
            self.settled = settled
            self.sources = sources
        }

        /// The store's rejections, or nil when it stopped before writing.
        func end(with rejections: [Rejection]?) {
            outcome.withLock { $0 = .some(rejections) }
            done.signal()
        }

        /// Waits for `end`; any number of times.
        @discardableResult
        func wait() -> [Rejection]? {
            done.wait()
            done.signal()
            return outcome.withLock { $0 } ?? nil
        }
    }
}

/// Why store writes fail, since when.
struct StoreOutage: Sendable {
    let since: Double
    let cause: String
}

/// Partitions revoked during a poll, told by the consumer's rebalance
/// callback (on the consuming thread) and taken after the poll.
final class Revocations: Sendable {
    private let partitions = Mutex<[TopicPartition]>([])

    func add(_ revoked: [TopicPartition]) {
        partitions.withLock { $0 += revoked }
    }

    func take() -> [TopicPartition] {
        partitions.withLock { taken in
            defer { taken = [] }
            return taken
        }
    }
}
