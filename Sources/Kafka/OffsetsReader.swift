import CRdKafka
import Common

/// Where topics end and where one consumer group stands, read without
/// joining the group or consuming: the digest cutoff, the dead-letter
/// replay's end marks and the tests use it. Every call sends a request and
/// blocks up to its timeout, so async code calls it through `blocking`.
///
/// Unchecked: `handle` is a C pointer; the metadata and offset queries used
/// here are thread-safe in librdkafka.
package final class OffsetsReader: @unchecked Sendable {
    package let groupID: String
    private let handle: OpaquePointer
    private let context: ClientContext

    package init(
        kafka: KafkaConfig, groupID: String, clientID: String = "guidance-offsets", logger: Logger = Logger(component: "kafka-offsets")
    ) throws(KafkaError) {
        self.groupID = groupID
        context = ClientContext(logger: logger)
        // Only a consumer handle with the group's id may ask for its
        // committed offsets; it never subscribes, so it never joins.
        let conf = try makeConf(
            kafka.resolved(
                defaults: [("client.id", clientID), ("log_level", "6")],
                enforced: [("group.id", groupID), ("enable.auto.commit", "false")]))
        context.install(on: conf)
        handle = try makeHandle(RD_KAFKA_CONSUMER, conf)
    }

    deinit { rd_kafka_destroy(handle) }

    /// The partition counts of those of `topics` that exist.
    package func partitionCounts(of topics: [String], timeout: Duration = .seconds(5)) throws(KafkaError) -> [String: Int] {
        try Metadata.partitionCounts(handle: handle, topics: topics, timeout: timeout)
    }

    /// The offset the next produced message of `partition` will get.
    package func highWatermark(of partition: TopicPartition, timeout: Duration = .seconds(5)) throws(KafkaError) -> Int64 {
        try Metadata.watermarks(handle: handle, partition: partition, timeout: timeout).high
    }

    /// The high watermark of every partition of those of `topics` that exist.
    package func endOffsets(of topics: [String], timeout: Duration = .seconds(5)) throws(KafkaError) -> [TopicPartition: Int64] {
        var ends: [TopicPartition: Int64] = [:]
        for (topic, count) in try partitionCounts(of: topics, timeout: timeout) {
            for partition in 0..<Int32(count) {
                let key = TopicPartition(topic: topic, partition: partition)
                ends[key] = try highWatermark(of: key, timeout: timeout)
            }
        }
        return ends
    }

    /// The group's committed offsets; a partition without a commit maps to nil.
    package func committedOffsets(_ partitions: [TopicPartition], timeout: Duration = .seconds(5)) throws(KafkaError) -> [TopicPartition:
        Int64?]
    {
        let list = PartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let result = rd_kafka_committed(handle, list, Int32(clamping: timeout.milliseconds))
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(result, context: "committed offsets of group \(groupID)")
        }
        var offsets: [TopicPartition: Int64?] = [:]
        for entry in PartitionList.entries(list) {
            offsets[entry.partition] = entry.offset >= 0 ? entry.offset : nil
        }
        return offsets
    }
}
