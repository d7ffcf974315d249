import CRdKafka
import Common
import Foundation
import Synchronization

/// A consumer-group member with manual offset storage.
///
/// Every call that polls, stores or commits must come from one thread, the
/// caller's own consuming thread (never Swift's cooperative pool: they block);
/// two such calls at once are a programming error, caught in debug builds and
/// logged in release ones (`exclusive`).
/// The rebalance handler runs on that thread inside `poll`: on revocation it is
/// told first, then the stored offsets are committed, then the partitions go.
/// Offsets are committed only from that thread, never mid-rebalance from
/// another (docs/pitfalls.md). Watermarks and a group's committed offsets are read
/// by an `OffsetsReader`.
///
/// Unchecked: `handle` is a C pointer. The calls other threads may make
/// (`assignment`, `memberID`, `lag`, `watermarks`) are thread-safe in
/// librdkafka; the consuming calls check that they never overlap.
package final class Consumer: @unchecked Sendable {
    package let config: ConsumerConfig
    private let handle: OpaquePointer
    private let context: ClientContext
    private let logger: Logger
    private let closed = Atomic<Bool>(false)
    /// A consuming call (poll, store, commit, close) is under way.
    private let consuming = Atomic<Bool>(false)

    package init(
        config: ConsumerConfig,
        logger: Logger = Logger(component: "kafka-consumer"),
        onRebalance: @escaping @Sendable (RebalanceEvent) -> Void = { _ in }
    ) throws(KafkaError) {
        self.config = config
        self.logger = logger
        context = ClientContext(logger: logger) { handle, event, partitions in
            Consumer.rebalance(handle: handle, event: event, partitions: partitions, logger: logger, notify: onRebalance)
        }
        let conf = try makeConf(config.properties)
        context.install(on: conf)
        rd_kafka_conf_set_rebalance_cb(conf, rebalanceCallback)
        handle = try makeHandle(RD_KAFKA_CONSUMER, conf)
        // Serve errors, logs and rebalances from consumer polls.
        rd_kafka_poll_set_consumer(handle)
        // Every stored property is set from here on, so a throw runs deinit,
        // which frees the handle; freeing it here too was a double free.
        guard config.readsWholeTopics else {
            let topics = PartitionList.make(config.topics.map { TopicPartition(topic: $0, partition: Int32(RD_KAFKA_PARTITION_UA)) })
            defer { rd_kafka_topic_partition_list_destroy(topics) }
            let result = rd_kafka_subscribe(handle, topics)
            guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError(result, context: "subscribe to \(config.topics.joined(separator: ","))")
            }
            return
        }
        let counts = try Metadata.partitionCounts(handle: handle, topics: config.topics, timeout: .seconds(10))
        let partitions = config.topics.flatMap { topic in
            (0..<Int32(counts[topic] ?? 0)).map { TopicPartition(topic: topic, partition: $0) }
        }
        guard partitions.count > 0 else {
            throw KafkaError(.invalidConfiguration, "no partitions found for \(config.topics.joined(separator: ","))")
        }
        let list = PartitionList.make(partitions.map { ($0, config.readsFrom ?? Int64(RD_KAFKA_OFFSET_BEGINNING)) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let result = rd_kafka_assign(handle, list)
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(result, context: "assign \(config.topics.joined(separator: ","))")
        }
    }

    deinit {
        close()
        rd_kafka_destroy(handle)
    }

    /// Waits up to `timeout` for the first message, then takes whatever else is
    /// already fetched, up to `maxMessages`. Errors reported by the client are
    /// logged; they do not end consumption.
    package func poll(maxMessages: Int, timeout: Duration) -> [ConsumedMessage] {
        guard !closed.load(ordering: .acquiring) else { return [] }
        return exclusive("poll") { poll(upTo: maxMessages, timeout: timeout) }
    }

    private func poll(upTo maxMessages: Int, timeout: Duration) -> [ConsumedMessage] {
        var batch: [ConsumedMessage] = []
        var wait = Int32(clamping: timeout.milliseconds)
        while batch.count < maxMessages, let raw = rd_kafka_consumer_poll(handle, wait) {
            wait = 0
            defer { rd_kafka_message_destroy(raw) }
            let message = raw.pointee
            guard message.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                if message.err != RD_KAFKA_RESP_ERR__PARTITION_EOF {
                    logger.warning("consumer error", ["error": String(cString: rd_kafka_err2str(message.err))])
                }
                continue
            }
            batch.append(Consumer.convert(raw))
        }
        return batch
    }

    /// Stores, for each partition, the offset after the last of `messages`: the
    /// position the group resumes from once committed.
    package func store(_ messages: [ConsumedMessage]) throws(KafkaError) {
        var next: [TopicPartition: Int64] = [:]
        for message in messages {
            let key = TopicPartition(topic: message.topic, partition: message.partition)
            next[key] = max(next[key] ?? 0, message.offset + 1)
        }
        guard !next.isEmpty else { return }
        let list = PartitionList.make(next.map { ($0.key, $0.value) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let result = exclusive("store") { rd_kafka_offsets_store(handle, list) }
        // A partition revoked meanwhile refuses its offset; another member now
        // owns it and will see the messages again, which consumers absorb.
        if result != RD_KAFKA_RESP_ERR_NO_ERROR && result != RD_KAFKA_RESP_ERR__STATE {
            throw KafkaError(result, context: "store offsets")
        }
    }

    /// Commits the stored offsets. With `wait`, returns once the coordinator
    /// answered; without, a failed commit is covered by the next one.
    package func commit(wait: Bool = true) throws(KafkaError) {
        let result = exclusive("commit") { rd_kafka_commit(handle, nil, wait ? 0 : 1) }
        if result != RD_KAFKA_RESP_ERR_NO_ERROR && result != RD_KAFKA_RESP_ERR__NO_OFFSET {
            throw KafkaError(result, context: "commit offsets")
        }
    }

    /// The member id the group coordinator gave this client; nil before it
    /// joined.
    package var memberID: String? {
        guard let id = rd_kafka_memberid(handle) else { return nil }
        defer { rd_kafka_mem_free(handle, id) }
        let text = String(cString: id)
        return text.isEmpty ? nil : text
    }

    package func assignment() -> [TopicPartition] {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        guard rd_kafka_assignment(handle, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return PartitionList.partitions(list)
    }

    /// Messages behind the end of each assigned partition, from what the
    /// client already knows (no request is sent).
    package func lag() -> [TopicPartition: Int64] {
        let partitions = assignment()
        guard !partitions.isEmpty else { return [:] }
        let list = PartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        guard rd_kafka_position(handle, list) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
        var lag: [TopicPartition: Int64] = [:]
        for entry in PartitionList.entries(list) {
            var low: Int64 = 0
            var high: Int64 = 0
            guard
                rd_kafka_get_watermark_offsets(handle, entry.partition.topic, entry.partition.partition, &low, &high)
                    == RD_KAFKA_RESP_ERR_NO_ERROR,
                high >= 0
            else { continue }
            lag[entry.partition] = entry.offset >= 0 ? max(0, high - entry.offset) : max(0, high - low)
        }
        return lag
    }

    /// The partition's first kept offset (older ones were deleted by
    /// retention) and the offset its next message will get, asked of the broker.
    package func watermarks(of partition: TopicPartition, timeout: Duration = .seconds(5)) throws(KafkaError) -> (low: Int64, high: Int64) {
        try Metadata.watermarks(handle: handle, partition: partition, timeout: timeout)
    }

    /// Leaves the group: the revocation commits stored offsets. Call from the
    /// consuming thread after its last poll; later polls return nothing.
    package func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let result = exclusive("close") { rd_kafka_consumer_close(handle) }
        if result != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning("consumer close", ["error": String(cString: rd_kafka_err2str(result))])
        }
    }

    /// Runs a consuming call, which must not overlap another: a commit from
    /// another thread could land mid-rebalance, while `poll` runs the handler.
    private func exclusive<T>(_ call: StaticString, _ body: () -> T) -> T {
        let alone = consuming.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        defer { if alone { consuming.store(false, ordering: .releasing) } }
        if !alone {
            logger.error("Consumer.\(call) called while another consuming call runs; calls must come from one thread")
            assertionFailure("Consumer.\(call) overlapped another consuming call")
        }
        return body()
    }

    private static func convert(_ raw: UnsafeMutablePointer<rd_kafka_message_t>) -> ConsumedMessage {
        let message = raw.pointee
        let key = message.key.map { Array(UnsafeRawBufferPointer(start: $0, count: message.key_len)) }
        let value = message.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: message.len)) }
        var headers: [(name: String, value: [UInt8])] = []
        var headerList: OpaquePointer?
        if rd_kafka_message_headers(raw, &headerList) == RD_KAFKA_RESP_ERR_NO_ERROR, let headerList {
            var index = 0
            var name: UnsafePointer<CChar>?
            var bytes: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(headerList, index, &name, &bytes, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                let data = bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
                headers.append((name: name.map { String(cString: $0) } ?? "", value: data))
                index += 1
            }
        }
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(raw, &timestampType)
        return ConsumedMessage(
            topic: String(cString: rd_kafka_topic_name(message.rkt)), partition: message.partition,
            offset: message.offset, key: key, value: value, headers: headers,
            timestampMilliseconds: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp)
    }

    /// Runs inside `poll` (or `close`) on the consuming thread.
    private static func rebalance(
        handle: OpaquePointer, event: rd_kafka_resp_err_t,
        partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>,
        logger: Logger, notify: @Sendable (RebalanceEvent) -> Void
    ) {
        let list = PartitionList.partitions(partitions)
        if event == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS {
            rd_kafka_assign(handle, partitions)
            logger.info("partitions assigned", ["partitions": list.map(\.description).joined(separator: ",")])
            notify(.assigned(list))
        } else {
            notify(.revoked(list))
            let result = rd_kafka_commit(handle, nil, 0)
            if result != RD_KAFKA_RESP_ERR_NO_ERROR && result != RD_KAFKA_RESP_ERR__NO_OFFSET {
                // The mock cluster refuses commits while rebalancing; the next
                // owner replays from the last commit and consumption is idempotent.
                logger.warning("commit on revoke failed", ["error": String(cString: rd_kafka_err2str(result))])
            }
            rd_kafka_assign(handle, nil)
            logger.info("partitions revoked", ["partitions": list.map(\.description).joined(separator: ",")])
        }
    }
}

// Called by librdkafka inside rd_kafka_consumer_poll/close on the consuming thread.
fileprivate func rebalanceCallback(
    _ handle: OpaquePointer?, _ event: rd_kafka_resp_err_t,
    _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, _ opaque: UnsafeMutableRawPointer?
) {
    guard let handle, let partitions, let context = ClientContext.from(opaque), let rebalance = context.rebalance else { return }
    rebalance(handle, event, partitions)
}

/// A service that consumes as a member of a consumer group.
package protocol GroupMember: Sendable {
    func start() async throws
    func shutdown() async
    /// Whether it holds partitions within `limit`.
    func consumes(within limit: Duration) async -> Bool
}
