import Common
import Guidance
import Kafka
import Synchronization

/// A Kafka topic of one partition that every replica reads whole, from its
/// start, on a thread of its own, handing each poll's records to its owner
/// in the log's order: the roster log and the photo log. Its topic is made
/// when missing (`configs`: compacted, so that every key's newest record
/// stays). A replica knows when it has read the log up to where it ended at
/// start (`caughtUp`), and a publisher waits until its own record is read.
final class WholeLog: Sendable {
    let topic: String
    private let kafka: KafkaConfig
    private let configs: [String: String]
    private let logger: Logger
    private struct State {
        /// The offset after the last record read.
        var position: Int64 = 0
        /// The log's end when reading began; nil until known.
        var startEnd: Int64?
    }
    private let state = Mutex(State())
    /// Rung each time the reading thread went round its loop.
    private let wentRound = Doorbell()

    init(topic: String, kafka: KafkaConfig, configs: [String: String], logger: Logger) {
        self.topic = topic
        self.kafka = kafka
        self.configs = configs
        self.logger = logger
    }

    /// Read up to where the log ended when reading began.
    var caughtUp: Bool { state.withLock { state in state.startEnd.map { state.position >= $0 } ?? false } }

    /// The offset after the last record read.
    var position: Int64 { state.withLock { $0.position } }

    /// The part that reads the log, handing each poll's records to `read`
    /// on the reading thread (`everyPoll`: an empty poll's too, every 100
    /// ms); its stop returns within a poll, closes the consumer, then runs
    /// `stopped`.
    func part(
        _ name: String, everyPoll: Bool = false, stopped: @escaping @Sendable () -> Void = {},
        read: @escaping @Sendable ([ConsumedMessage]) -> Void
    ) -> Part {
        let reader = Mutex<Consumer?>(nil)
        let bell = Doorbell()
        let loop = Loop(
            name, onThreadEvery: .seconds(1), bell: bell,
            wokenBy:
                "its own turn while it reads (each waits in a poll of 100 ms, then rings `wentRound` for a publisher waiting to read its record back); a broker not reachable yet: the period"
        ) { [self] in turn(reader, bell: bell, everyPoll: everyPoll, read: read) }
        return loop.part {
            // Closed and let go: its handle (and librdkafka's threads) end with it.
            reader.withLock { consumer in
                consumer?.close()
                consumer = nil
            }
            stopped()
        }
    }

    /// Returns once the log is read up to where it ended at start, or after
    /// `limit`; whether it was.
    func readToEnd(atMost limit: Duration) async -> Bool {
        await until(atMost: limit) { caughtUp }
    }

    /// Returns once `holds` is true — looked at again after each turn of
    /// the reading thread, which is when it can change — or after `limit`;
    /// whether it held.
    func until(atMost limit: Duration, _ holds: () -> Bool) async -> Bool {
        await wentRound.wait(until: holds, atMost: limit)
    }

    /// Returns once the record at `offset` has been read and handed over, or
    /// after `limit`; whether it was.
    func read(past offset: Int64, atMost limit: Duration) async -> Bool {
        await until(atMost: limit) { position > offset }
    }

    /// The record at `offset`, read again by a consumer of its own (on the
    /// broker's threads); nil when the log no longer has it.
    func record(at offset: Int64) async throws(KafkaError) -> ConsumedMessage? {
        let (kafka, topic, logger) = (self.kafka, self.topic, self.logger)
        do {
            return try await BlockingExecutor.broker.run { () throws(KafkaError) -> ConsumedMessage? in
                let consumer = try Consumer(config: WholeLog.config(kafka, topic, from: offset), logger: logger)
                defer { consumer.close() }
                // Fifty polls of 200 ms: ten seconds for a broker that is slow to answer.
                for _ in 0..<50 {
                    if let found = consumer.poll(maxMessages: 10, timeout: .milliseconds(200)).first(where: { $0.offset >= offset }) {
                        return found.offset == offset ? found : nil
                    }
                }
                throw KafkaError(.deliveryTimedOut, "offset \(offset) of \(topic) could not be read back")
            }
        } catch let error as KafkaError {
            throw error
        } catch {
            throw KafkaError(.deliveryTimedOut, "\(error)")
        }
    }

    private static func config(_ kafka: KafkaConfig, _ topic: String, from offset: Int64? = nil) -> ConsumerConfig {
        var config = ConsumerConfig(kafka: kafka, groupID: "guidance-log-\(RandomID.uuid())", topics: [topic], clientID: "guidance-log")
        config.readsWholeTopics = true
        config.readsFrom = offset
        // A poll takes at most 200 records: 2 MiB ahead is plenty, and a replica's start does not hold the photo log's 32.
        config.prefetchKilobytes = 2_048
        return config
    }

    /// One turn of the reading thread: a poll handed over, or, before it
    /// can read, an attempt to connect (again after the loop's period).
    private func turn(_ reader: borrowing Mutex<Consumer?>, bell: Doorbell, everyPoll: Bool, read: ([ConsumedMessage]) -> Void) {
        guard let consumer = reader.withLock({ $0 }) else {
            if let consumer = connect() {
                reader.withLock { $0 = consumer }
                bell.ring()
            }
            return
        }
        defer {
            wentRound.ring()
            bell.ring()
        }
        let messages = consumer.poll(maxMessages: 200, timeout: .milliseconds(100))
        let wasCaughtUp = caughtUp
        if everyPoll || !messages.isEmpty { read(messages) }
        state.withLock { state in
            for message in messages { state.position = max(state.position, message.offset + 1) }
        }
        if caughtUp && !wasCaughtUp {
            logger.info("log read up to its end at start", ["topic": topic, "records": String(position)])
        }
    }

    /// A consumer reading the whole log, its topic made when missing; nil
    /// (logged) when the broker cannot be reached yet.
    private func connect() -> Consumer? {
        do {
            let (consumer, start, end) = try WholeLog.open(topic, kafka: kafka, configs: configs, logger: logger)
            state.withLock { state in
                state.position = max(state.position, start)
                state.startEnd = end
            }
            logger.info("reading the log", ["topic": topic, "records": String(end - start)])
            return consumer
        } catch {
            logger.warning("cannot read the log yet", ["topic": topic, "error": "\(error)"])
            return nil
        }
    }

    /// A consumer of the whole of `topic` (one partition) from its start,
    /// the topic made with `configs` when missing (a cluster that will not
    /// make topics, the mock, has it made beforehand), and where the log
    /// starts and ends: asked by the consumer itself, one client.
    static func open(_ topic: String, kafka: KafkaConfig, configs: [String: String], logger: Logger) throws(KafkaError) -> (
        consumer: Consumer, start: Int64, end: Int64
    ) {
        let consumer: Consumer
        do {
            consumer = try Consumer(config: WholeLog.config(kafka, topic), logger: logger)
        } catch {
            try Admin(config: kafka, logger: logger).ensureTopics(
                [TopicSpec(name: topic, partitions: 1, configs: configs)], timeout: .seconds(5))
            consumer = try Consumer(config: WholeLog.config(kafka, topic), logger: logger)
        }
        let (start, end) = try consumer.watermarks(of: TopicPartition(topic: topic, partition: 0))
        return (consumer, start, end)
    }
}
