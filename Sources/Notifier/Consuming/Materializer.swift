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
    /// How long a join has waited, on the service's timer.
    private let uptime: Uptime
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
        uptime = Uptime(config.timer)
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
        _ = try? await BlockingExecutor.broker.run { [self] in
            let writing = consuming.withLock { consuming in
                defer { consuming.writing = nil }
                return consuming.writing
            }
            if let writing { perform([.finish(writing)]) }
            consumer.close()
            held.store(0, ordering: .relaxed)
        }
    }

    private var running: Bool { !loop.isStopping }

    /// One turn of the consuming thread: poll what is fetched (while a batch
    /// is being written, only what is fetched already; while the roster
    /// holds its most, nothing new), release what the roster lists, and
    /// hand it on as `Consuming` decides.
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
        if state.join.isSlow(joined: consumer.memberID != nil, now: uptime.now) {
            logger.warning(
                "not yet a member of the consumer group; waiting for the rebalance (it waits for every member to rejoin)",
                ["group": groupID, "after": "\(SlowJoin.limit)"])
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
        for item in released where item.held > 0 {
            logger.info(
                "held event released: the roster lists it now",
                [
                    "topic": item.message.topic, "partition": String(item.message.partition), "offset": String(item.message.offset),
                    "heldFor": "\(Int(item.held)) s"
                ])
        }
        perform(state.polled(released, pollWasEmpty: batch.isEmpty), rules: current.rules, schools: current.schools)
    }

    /// Does `actions` in their order, and what finishing a batch adds after
    /// it. A dead letter or a write that ends because the materializer stops
    /// ends the rest: nothing after it is committed, and a batch not handed
    /// to the writer ends unwritten (so that `stop` does not wait for it).
    private func perform(_ actions: [Consuming.Action], rules: [String: [SchoolRule]] = [:], schools: [String: School] = [:]) {
        var actions = actions[...]
        while let action = actions.popFirst() {
            switch action {
            case .deadLetter(let message, let reason):
                guard deadLetter(message, reason: reason) else {
                    for case .write(let batch, _) in actions { batch.end(with: nil) }
                    return
                }
            case .write(let batch, let events):
                writer.async { [self] in batch.end(with: apply(events, rules: rules, schools: schools)) }
            case .finish(let batch):
                guard let rejections = batch.wait() else {
                    for case .write(let next, _) in actions { next.end(with: nil) }
                    return
                }
                for rejection in rejections {
                    metrics.increment(
                        "notifier_events_rejected_total",
                        help: "Events the store kept out: an id of another school, or registered with other content.",
                        labels: [("reason", rejection.reason.prefix { $0 != ":" }.description)])
                }
                actions = Consuming.written(batch, rejections: rejections) + actions
            case .commit(let batch):
                commit(batch)
            }
        }
    }

    /// Stores and commits the offsets of a batch the store wrote, its dead
    /// letters sent.
    private func commit(_ written: PendingWrite) {
        let appliedAt = clock()
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
    }

    /// Applies the batch, narrowed as `Consuming.narrowing` says: a failure
    /// of the store itself is retried with backoff for as long as it lasts,
    /// the offsets held. Nil means stopping, with nothing committed.
    private func apply(_ events: [StoredEvent], rules: [String: [SchoolRule]], schools: [String: School]) -> [Rejection]? {
        Consuming.narrowing(events) { chunk in
            retrying { () throws(StoreError) -> Result<[Rejection], StoreError> in
                do throws(StoreError) {
                    let rejections = try store.apply(chunk, rules: rules, schools: schools)
                    storeWritesSucceed()
                    return .success(rejections)
                } catch  where error.isDataError {
                    metrics.increment("notifier_store_errors_total", help: "Failed store writes.")
                    if chunk.count == 1 { logger.error("the store refuses an event; dead-lettering it", ["error": error.message]) }
                    return .failure(error)
                } catch {
                    metrics.increment("notifier_store_errors_total", help: "Failed store writes.")
                    storeWritesFail(error, events: chunk.count)
                    throw error
                }
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
        let letter = DeadLetters.deadLetter(message, reason: reason, group: groupID, topic: topics.deadLetters, at: clock())
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

    /// Runs `attempt` until it does not throw, pausing between tries as
    /// `Consuming.Backoff` says, until `stop`; nil once stopping.
    private func retrying<T, Failure>(_ attempt: () throws(Failure) -> T) -> T? {
        var backoff = Consuming.Backoff()
        while true {
            if let value = try? attempt() { return value }
            guard sleepWhileRunning(backoff.next()) else { return nil }
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
    /// What the consuming thread keeps from one turn to the next, and its
    /// decisions, made without I/O: the messages the roster holds, the batch
    /// the writer queue is writing, and how long it has waited to join its
    /// group. It answers with actions that the thread does in their order,
    /// and that keep the one rule of the materializer: a batch's offsets are
    /// committed only after the store wrote it and every message of it that
    /// is not written (undecodable, or kept out by the store) is in the
    /// dead-letter topic; and batches commit in the order they were polled.
    struct Consuming {
        enum Action {
            /// Send to the dead-letter topic and wait for its acknowledgement.
            case deadLetter(ConsumedMessage, reason: String)
            /// Hand these events to the writer queue, as the batch `PendingWrite` stands for.
            case write(PendingWrite, [StoredEvent])
            /// Wait until the store wrote this batch; then do `written`'s actions.
            case finish(PendingWrite)
            /// Store and commit the offsets of every message this batch settles.
            case commit(PendingWrite)
        }

        var hold: RosterHold
        /// The batch the writer queue is writing: its offsets stored once
        /// it is written, by the consuming thread, or by `stop` once that
        /// thread has ended (never beside a poll).
        var writing: PendingWrite?
        var join = SlowJoin()

        /// What to do with a poll's messages, once the hold released them:
        /// each dead letter first, then the batch before finished, then the
        /// rest written. A poll that found nothing finishes the batch before
        /// at once, rather than leaving its commit until the next message.
        mutating func polled(_ released: [RosterHold.Released], pollWasEmpty: Bool) -> [Action] {
            var actions: [Action] = []
            if pollWasEmpty, let previous = writing.take() { actions.append(.finish(previous)) }
            guard !released.isEmpty else { return actions }
            var events: [StoredEvent] = []
            var sources: [ConsumedMessage] = []
            events.reserveCapacity(released.count)
            sources.reserveCapacity(released.count)
            for item in released {
                switch item.outcome {
                case .event(let event):
                    events.append(event)
                    sources.append(item.message)
                case .deadLetter(let reason):
                    actions.append(.deadLetter(item.message, reason: reason))
                }
            }
            if let previous = writing.take() { actions.append(.finish(previous)) }
            let next = PendingWrite(settled: released.map(\.message), sources: sources)
            writing = next
            actions.append(.write(next, events))
            return actions
        }

        /// The rejections of writing `items` with `write`, which retries what
        /// is not the data's fault (disk full, a lost session: for as long
        /// as it lasts) and fails only for an error that names the data (a
        /// constraint, a value the store cannot hold). Such an error halves
        /// the batch, each half written on its own, until the one item it
        /// comes from is alone and rejected: one bad event cannot wedge the
        /// group, and the others are written. Nil: `write` gave up (stopping).
        static func narrowing<Item>(_ items: [Item], write: ([Item]) -> Result<[Rejection], StoreError>?) -> [Rejection]? {
            switch write(items) {
            case nil:
                return nil
            case .success(let rejections):
                return rejections
            case .failure(let error):
                guard items.count > 1 else { return [Rejection(index: 0, reason: "store: \(error.message)")] }
                let half = items.count / 2
                guard let first = narrowing(Array(items[..<half]), write: write),
                    let second = narrowing(Array(items[half...]), write: write)
                else { return nil }
                return first + second.map { Rejection(index: $0.index + half, reason: $0.reason) }
            }
        }

        /// The pauses between tries of a store write or a dead letter: 0.1 s,
        /// doubling up to 5 s.
        struct Backoff {
            private var delay = 0.1

            mutating func next() -> Double {
                defer { delay = min(delay * 2, 5) }
                return delay
            }
        }

        /// After the store wrote `batch`: what it kept out to the dead-letter
        /// topic, then its offsets committed.
        static func written(_ batch: PendingWrite, rejections: [Rejection]) -> [Action] {
            rejections.map { .deadLetter(batch.sources[$0.index], reason: $0.reason) } + [.commit(batch)]
        }
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
