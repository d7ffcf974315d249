import CRdKafka
import Common
import Foundation
import Synchronization

/// An idempotent producer (`acks=all`) whose sends complete when the broker
/// acknowledged the message, or fail with a `KafkaError` saying whether a retry
/// may succeed.
///
/// librdkafka 2.0.2's idempotent producer can go fatal after a delivery timeout
/// or a dropped connection (docs/pitfalls.md). When it does, every waiting send
/// fails with the retriable `producerFailed`, and a fresh client replaces the
/// broken one without restarting the process.
package final class Producer: Sendable {
    private let config: ProducerConfig
    private let logger: Logger
    /// Deadlines of sends, on the service's timer.
    private let uptime: Uptime
    private let state: Mutex<State>

    private struct State {
        var client: ProducerClient
        var closed = false
        var replacements = 0
    }

    package init(
        config: ProducerConfig, logger: Logger = Logger(component: "kafka-producer"), timer: any Clock<Duration> = systemTimer
    ) throws(KafkaError) {
        self.config = config
        self.logger = logger
        uptime = Uptime(timer)
        let client = try ProducerClient(config: config, logger: logger, uptime: uptime)
        state = Mutex(State(client: client))
        client.startPolling(owner: self)
    }

    /// Its row of the design table: its client's polling.
    package var waits: Part.Waits { state.withLock { $0.client.polling.waits } }

    /// How many times a fatal client was replaced since start.
    package var replacements: Int { state.withLock { $0.replacements } }

    /// Sends handed to librdkafka whose report has not come (nor their
    /// deadline passed). Not `rd_kafka_outq_len`: that counts the error events
    /// waiting for a poll too, one each while the brokers are down.
    package var inFlight: Int {
        state.withLock { $0.client }.unfinished.load(ordering: .acquiring)
    }

    /// Whether a broker answers a metadata request within `timeout`. The
    /// request blocks, so it runs on the broker's threads, and sends go on
    /// meanwhile.
    package func brokersReachable(timeout: Duration = .seconds(1)) async -> Bool {
        let client: ProducerClient? = state.withLock { $0.closed ? nil : $0.client }
        guard let client else { return false }
        let reachable = try? await BlockingExecutor.broker.run {
            client.withLiveHandle { handle in (try? Metadata.brokerCount(handle: handle, timeout: timeout)) != nil }
        }
        return (reachable ?? nil) ?? false
    }

    /// The partitions of `topics` this producer knows no leader for (empty
    /// when every send can go straight to its broker), or nil when no broker
    /// answers within `timeout`. Blocking requests, on the broker's threads.
    package func partitionsWithoutLeader(of topics: [String], timeout: Duration = .seconds(1)) async -> [String]? {
        let client: ProducerClient? = state.withLock { $0.closed ? nil : $0.client }
        guard let client else { return nil }
        let missing = try? await BlockingExecutor.broker.run {
            client.withLiveHandle { handle in try? Metadata.partitionsWithoutLeader(handle: handle, topics: topics, timeout: timeout) }
        }
        return (missing ?? nil) ?? nil
    }

    /// Sends `message` and returns once the broker acknowledged it. A
    /// cancelled task stops waiting at once with `cancelled` (retriable: the
    /// message stays queued and may still be delivered, so a retry must carry
    /// the same id); a task cancelled before the call sends nothing.
    package func send(_ message: OutgoingMessage) async throws(KafkaError) -> DeliveryReport {
        let report = DeliveryWait()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<DeliveryReport, KafkaError>, Never>) in
                guard report.wait(continuation) else { return }
                send(message) { report.resume($0) }
            }
        } onCancel: {
            report.resume(.failure(KafkaError(.cancelled, "stopped waiting for the broker's acknowledgement: the request was cancelled")))
        }
        return try result.get()
    }

    /// Sends `message` and calls `completion` exactly once, on the producer's
    /// polling thread, with the broker's acknowledgement or the failure.
    package func send(_ message: OutgoingMessage, completion: @escaping @Sendable (Result<DeliveryReport, KafkaError>) -> Void) {
        let client: ProducerClient? = state.withLock { $0.closed ? nil : $0.client }
        guard let client else {
            completion(.failure(KafkaError(.shuttingDown, "producer is shut down")))
            return
        }
        client.produce(message, completion: completion)
    }

    /// Waits up to `timeout` for queued messages to be acknowledged, fails the
    /// rest with `shuttingDown`, and releases the client. Later sends fail.
    /// Blocks: from async code, call it through `blocking`.
    package func close(timeout: Duration = .seconds(10)) {
        let client: ProducerClient? = state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            return state.client
        }
        client?.close(drainFor: timeout)
    }

    /// Called by a client's polling thread once its handle went fatal.
    fileprivate func replace(_ broken: ProducerClient) {
        let replacement: ProducerClient
        do {
            replacement = try ProducerClient(config: config, logger: logger, uptime: uptime)
        } catch {
            // Keep the broken client: its sends fail retriably, and the next
            // fatal report (or restart) tries again.
            logger.error("could not create a replacement Kafka producer", ["error": error.message])
            return
        }
        let installed = state.withLock { state -> Bool in
            guard !state.closed, state.client === broken else { return false }
            state.client = replacement
            state.replacements += 1
            return true
        }
        // Polled either way: its polling is what destroys its handle.
        replacement.startPolling(owner: self)
        if installed {
            logger.warning("replaced the fatal Kafka producer; waiting sends failed with a retriable error")
        } else {
            replacement.close(drainFor: .zero)
        }
    }
}

/// One `rd_kafka_t` producer and the loop that polls it for delivery
/// reports. The polling's last turn destroys the handle, after a close or
/// after the handle went fatal and its messages were failed.
/// Unchecked: `handle` is a C pointer; librdkafka's produce, flush and
/// purge calls are thread-safe, and the handle is destroyed by the polling
/// thread only, after `lifecycle` says no call can reach it any more.
final class ProducerClient: @unchecked Sendable {
    private let handle: OpaquePointer
    /// The handle's life and its uses, one value behind one lock.
    private let lifecycle = Mutex(Lifecycle())
    /// Rung when the last use admitted before destroying began ends.
    private let usesEnded = Doorbell()
    /// Turns on a thread of its own, each waiting in `rd_kafka_poll`; it ends
    /// itself once closing drained and the handle is destroyed.
    let polling = Loop(
        "producer", onThreadEvery: nil,
        wokenBy: "librdkafka as a report comes (a poll of 50 ms); at close, `usesEnded` as the last use of the handle ends")
    /// Whether the polling replaced this client after it went fatal (once).
    private let replaced = Atomic<Bool>(false)
    private let context: ClientContext
    private let logger: Logger
    private let deliveryTimeout: Duration
    /// The sends' deadlines: the service's timer.
    private let uptime: Uptime
    /// A close's drain: the system's time, as the process's stop (an
    /// orchestrator's grace period) whatever timer the service runs on.
    private let drainClock = Uptime()
    /// Sends awaiting their report, oldest first. All sends share one timeout,
    /// so deadlines grow along the queue and expiry only looks at its head.
    private let awaiting = Mutex(AwaitingQueue())
    /// Sends made whose completion has not run.
    let unfinished = Atomic<Int>(0)

    init(config: ProducerConfig, logger: Logger, uptime: Uptime) throws(KafkaError) {
        self.logger = logger
        self.uptime = uptime
        deliveryTimeout = config.deliveryTimeout
        context = ClientContext(logger: logger)
        let conf = try makeConf(config.properties)
        context.install(on: conf)
        rd_kafka_conf_set_dr_msg_cb(conf, deliveryReportCallback)
        handle = try makeHandle(RD_KAFKA_PRODUCER, conf)
    }

    func startPolling(owner: Producer) {
        polling.start { [self] in poll(owner: owner) }
    }

    func produce(_ message: OutgoingMessage, completion: @escaping @Sendable (Result<DeliveryReport, KafkaError>) -> Void) {
        let fatal = context.fatal.load(ordering: .acquiring)
        guard !fatal else {
            completion(.failure(KafkaError(.producerFailed, "producer is being replaced after a fatal error")))
            return
        }
        let headers = rd_kafka_headers_new(message.headers.count)
        // withCString: a String passed as a C string is copied into a new array each time.
        for header in message.headers {
            header.value.withUnsafeBytes { bytes in
                header.name.withCString { name in _ = rd_kafka_header_add(headers, name, -1, bytes.baseAddress, bytes.count) }
            }
        }
        let delivery = DeliveryBox(completion: completion, client: self, topic: message.topic, deadline: uptime.now + deliveryTimeout)
        unfinished.add(1, ordering: .acquiringAndReleasing)
        awaiting.withLock { $0.append(delivery) }
        // Retained until the delivery report hands it back exactly once.
        let box = Unmanaged.passRetained(delivery).toOpaque()
        let result =
            withLiveHandle { handle in
                message.key.withUnsafeBytes { key in
                    Producer.withValue(message.value) { value, count in
                        message.topic.withCString { topic in
                            guidance_kafka_produce(handle, topic, key.baseAddress, key.count, value, count, headers, box)
                        }
                    }
                }
            } ?? RD_KAFKA_RESP_ERR__DESTROY
        if result != RD_KAFKA_RESP_ERR_NO_ERROR {
            rd_kafka_headers_destroy(headers)
            Unmanaged<DeliveryBox>.fromOpaque(box).release()
            delivery.finish(
                .failure(KafkaError(result, context: "produce to \(message.topic)", producerFatal: result == RD_KAFKA_RESP_ERR__FATAL)))
        }
    }

    /// Runs `body` with the handle unless it is being destroyed; the handle
    /// outlives `body`. Uses run side by side.
    func withLiveHandle<T>(_ body: (OpaquePointer) -> T) -> T? {
        guard lifecycle.withLock({ $0.admit() }) else { return nil }
        defer {
            if lifecycle.withLock({ $0.release() }) { usesEnded.ring() }
        }
        return body(handle)
    }

    /// Called from a delivery report on the polling thread.
    /// The report can come before the error callback that announces the
    /// fatal state, so the handle itself is asked too.
    fileprivate func failure(for error: rd_kafka_resp_err_t, topic: String) -> KafkaError {
        let fatal = context.fatal.load(ordering: .acquiring) || rd_kafka_fatal_error(handle, nil, 0) != RD_KAFKA_RESP_ERR_NO_ERROR
        return KafkaError(error, context: "delivery to \(topic)", producerFatal: fatal)
    }

    /// Drains for up to `timeout` and returns once the handle is destroyed.
    func close(drainFor timeout: Duration) {
        lifecycle.withLock { $0.close(deadline: drainClock.now + timeout) }
        polling.blockUntilEnded()
    }

    /// One turn of the polling: delivery reports for up to 50 ms, and sends
    /// past their deadline failed. A fatal handle is replaced, once, and
    /// closed at once. While closing, the turn that finds nothing queued,
    /// or the deadline passed (what is left purged), destroys the handle and
    /// is the last.
    private func poll(owner: Producer) {
        rd_kafka_poll(handle, 50)
        failOverdueSends()
        if context.fatal.load(ordering: .acquiring) && !replaced.exchange(true, ordering: .acquiringAndReleasing) {
            owner.replace(self)
            // Fail everything still queued on the broken handle now.
            let now = drainClock.now
            lifecycle.withLock { $0.close(deadline: now) }
        }
        guard let deadline = lifecycle.withLock({ $0.deadline }) else { return }
        if rd_kafka_outq_len(handle) > 0 {
            guard drainClock.now >= deadline else { return }
            let purgeResult = rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
            if purgeResult != RD_KAFKA_RESP_ERR_NO_ERROR {
                logger.warning("purging the producer queue failed", ["error": String(cString: rd_kafka_err2str(purgeResult))])
            }
            // Purged messages report on the next polls.
            for _ in 0..<20 where rd_kafka_outq_len(handle) > 0 { rd_kafka_poll(handle, 50) }
        }
        destroy()
        polling.endAfterThisTurn()
    }

    /// Waits for the uses of the handle admitted before (short: a produce
    /// call; or bounded: a metadata request's timeout), destroys it, and
    /// fails the sends still waiting.
    private func destroy() {
        let abandoned = rd_kafka_outq_len(handle)
        if abandoned > 0 {
            logger.error("producer closed with messages whose delivery reports never came", ["count": String(abandoned)])
        }
        usesEnded.block(until: { lifecycle.withLock { $0.stopAdmitting() } })
        rd_kafka_destroy(handle)
        lifecycle.withLock { $0.destroyed() }
        failOverdueSends(all: true)
    }

    /// librdkafka 2.0.2 may report a timed-out message seconds after
    /// `message.timeout.ms` (seen: 8 s for 2 s with every broker down), so the
    /// deadline is enforced here too. A report that comes later is dropped: the
    /// caller was told to retry, and retries carry the same `guidanceId`.
    private func failOverdueSends(all: Bool = false) {
        let now = uptime.now
        let overdue = awaiting.withLock { $0.removeOverdue(at: now, all: all) }
        for delivery in overdue {
            delivery.finish(
                .failure(
                    KafkaError(
                        all ? .shuttingDown : .deliveryTimedOut,
                        all ? "producer closed before the broker answered" : "no acknowledgement from the broker within \(deliveryTimeout)")
                ))
        }
    }
}

extension ProducerClient {
    /// running → closing (draining until a deadline) → destroying (no new
    /// use admitted, waiting for the ones in progress) → destroyed. Uses of
    /// the handle count themselves in and out here but run outside the lock,
    /// so a slow one (a metadata request for `/readyz`) never holds up a send,
    /// and the handle is destroyed only once none is left.
    struct Lifecycle: Sendable {
        enum State: Sendable, Equatable {
            case running
            case closing(deadline: Duration)
            case destroying
            case destroyed
        }

        private(set) var state = State.running
        private(set) var uses = 0

        /// Whether a use may start; counted until `release`.
        mutating func admit() -> Bool {
            switch state {
            case .running, .closing:
                uses += 1
                return true
            case .destroying, .destroyed:
                return false
            }
        }

        /// Ends a use; true when it was the last one and the handle waits to be destroyed.
        @discardableResult
        mutating func release() -> Bool {
            uses -= 1
            return uses == 0 && state == .destroying
        }

        /// Starts draining; the earliest deadline asked for wins (a fatal
        /// handle closes now even if a close with a longer drain came first).
        mutating func close(deadline: Duration) {
            switch state {
            case .running: state = .closing(deadline: deadline)
            case .closing(let current): state = .closing(deadline: min(current, deadline))
            case .destroying, .destroyed: break
            }
        }

        /// When draining ends; nil while running (and once it ended).
        var deadline: Duration? {
            if case .closing(let deadline) = state { deadline } else { nil }
        }

        /// Admits no more uses; true once none is in progress, so the
        /// handle may be destroyed.
        mutating func stopAdmitting() -> Bool {
            if state != .destroyed { state = .destroying }
            return uses == 0
        }

        mutating func destroyed() {
            state = .destroyed
        }
    }
}

/// A FIFO of sends awaiting their report, compacted as its head advances.
fileprivate struct AwaitingQueue {
    private var items: [DeliveryBox] = []
    private var head = 0

    mutating func append(_ delivery: DeliveryBox) {
        items.append(delivery)
    }

    /// Drops finished sends from the head and returns the unfinished overdue ones.
    mutating func removeOverdue(at now: Duration, all: Bool) -> [DeliveryBox] {
        var overdue: [DeliveryBox] = []
        while head < items.count {
            let delivery = items[head]
            if delivery.isFinished {
                head += 1
            } else if all || delivery.deadline <= now {
                overdue.append(delivery)
                head += 1
            } else {
                break
            }
        }
        if head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return overdue
    }
}

/// The completion of one send, carried through librdkafka as the message
/// opaque. It runs once: for the report or the deadline, whichever is first,
/// and is let go then: a finished box waits in `AwaitingQueue` until the
/// sends before it finish too, and what its completion held (an access
/// batch's records) stayed with it, 8 MiB at 40,000 look-ups/s.
fileprivate final class DeliveryBox: Sendable {
    /// Nil once the send finished: whoever takes it runs it.
    private let completion: Mutex<(@Sendable (Result<DeliveryReport, KafkaError>) -> Void)?>
    let client: ProducerClient
    /// The message's topic, kept for its report (not read back from librdkafka as new text).
    let topic: String
    let deadline: Duration

    init(
        completion: @escaping @Sendable (Result<DeliveryReport, KafkaError>) -> Void,
        client: ProducerClient, topic: String, deadline: Duration
    ) {
        self.completion = Mutex(completion)
        self.client = client
        self.topic = topic
        self.deadline = deadline
    }

    var isFinished: Bool { completion.withLock { $0 == nil } }

    func finish(_ result: Result<DeliveryReport, KafkaError>) {
        let completion = self.completion.withLock { completion in
            defer { completion = nil }
            return completion
        }
        guard let completion else { return }
        client.unfinished.subtract(1, ordering: .acquiringAndReleasing)
        completion(result)
    }
}

// Called from rd_kafka_poll on the polling thread, once per produced message.
fileprivate func deliveryReportCallback(
    _ handle: OpaquePointer?, _ message: UnsafePointer<rd_kafka_message_t>?, _ opaque: UnsafeMutableRawPointer?
) {
    guard let message, let boxPointer = message.pointee._private else { return }
    let box = Unmanaged<DeliveryBox>.fromOpaque(boxPointer).takeRetainedValue()
    if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
        box.finish(.success(DeliveryReport(topic: box.topic, partition: message.pointee.partition, offset: message.pointee.offset)))
    } else {
        box.finish(.failure(box.client.failure(for: message.pointee.err, topic: box.topic)))
    }
}

extension Producer {
    /// The value as librdkafka takes it: NULL for a null value, a non-NULL
    /// pointer with length 0 for an empty one.
    static func withValue<R>(_ value: [UInt8]?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
        guard let value else { return body(nil, 0) }
        guard !value.isEmpty else {
            var byte: UInt8 = 0
            return withUnsafeBytes(of: &byte) { body($0.baseAddress, 0) }
        }
        return value.withUnsafeBytes { body($0.baseAddress, $0.count) }
    }
}

/// One `send`'s wait for its delivery report, resumed once: by the report, or
/// by the task's cancellation, whichever comes first.
fileprivate final class DeliveryWait: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Result<DeliveryReport, KafkaError>, Never>)
        case done(Result<DeliveryReport, KafkaError>?)
    }

    private let state = Mutex(State.idle)

    /// Keeps `continuation`; false (having resumed it) when cancelled already.
    func wait(_ continuation: CheckedContinuation<Result<DeliveryReport, KafkaError>, Never>) -> Bool {
        let cancelled: Result<DeliveryReport, KafkaError>? = state.withLock { state in
            guard case .done(let result) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .done(nil)
            return result
        }
        guard let cancelled else { return true }
        continuation.resume(returning: cancelled)
        return false
    }

    func resume(_ result: Result<DeliveryReport, KafkaError>) {
        let waiting: CheckedContinuation<Result<DeliveryReport, KafkaError>, Never>? = state.withLock { state in
            switch state {
            case .idle:
                state = .done(result)
                return nil
            case .waiting(let continuation):
                state = .done(nil)
                return continuation
            case .done:
                return nil
            }
        }
        waiting?.resume(returning: result)
    }
}
