import CRdKafka

enum Metadata {
    /// Brokers in the cluster, from a metadata request for no topics; it
    /// throws when no broker answers within `timeout`.
    static func brokerCount(handle: OpaquePointer, timeout: Duration) throws(KafkaError) -> Int {
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let result = rd_kafka_metadata(handle, 0, nil, &metadata, Int32(clamping: timeout.milliseconds))
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            throw KafkaError(result, context: "read cluster metadata")
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        return Int(metadata.pointee.broker_cnt)
    }

    /// Partition counts of those of `topics` that exist. Asks for all topics so
    /// that the request itself never auto-creates one.
    /// The partition's first kept offset and the offset its next message
    /// will get, asked of its leader.
    static func watermarks(handle: OpaquePointer, partition: TopicPartition, timeout: Duration) throws(KafkaError) -> (
        low: Int64, high: Int64
    ) {
        var low: Int64 = 0
        var high: Int64 = 0
        let result = rd_kafka_query_watermark_offsets(
            handle, partition.topic, partition.partition, &low, &high, Int32(clamping: timeout.milliseconds))
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(result, context: "watermarks of \(partition)")
        }
        return (low, high)
    }

    static func partitionCounts(handle: OpaquePointer, topics: [String], timeout: Duration) throws(KafkaError) -> [String: Int] {
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let result = rd_kafka_metadata(handle, 1, nil, &metadata, Int32(clamping: timeout.milliseconds))
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            throw KafkaError(result, context: "read cluster metadata")
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        let wanted = Set(topics)
        var counts: [String: Int] = [:]
        for index in 0..<Int(metadata.pointee.topic_cnt) {
            let topic = metadata.pointee.topics[index]
            let name = String(cString: topic.topic)
            if wanted.contains(name) && topic.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                counts[name] = Int(topic.partition_cnt)
            }
        }
        return counts
    }

    /// Which partitions of `topics` have no known leader, as `topic[n]` (or
    /// the topic, when it is missing): empty once a send to any of them
    /// can go straight to its broker. Asked per topic through the client's
    /// own topic object, so the answer also fills the cache its sends use.
    static func partitionsWithoutLeader(handle: OpaquePointer, topics: [String], timeout: Duration) throws(KafkaError) -> [String] {
        var missing: [String] = []
        for name in topics {
            guard let topic = rd_kafka_topic_new(handle, name, nil) else {
                throw KafkaError(rd_kafka_last_error(), context: "open topic \(name)")
            }
            defer { rd_kafka_topic_destroy(topic) }
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let result = rd_kafka_metadata(handle, 0, topic, &metadata, Int32(clamping: timeout.milliseconds))
            guard result == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                throw KafkaError(result, context: "read metadata of \(name)")
            }
            defer { rd_kafka_metadata_destroy(metadata) }
            guard metadata.pointee.topic_cnt == 1, metadata.pointee.topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR,
                metadata.pointee.topics[0].partition_cnt > 0
            else {
                missing.append(name)
                continue
            }
            let described = metadata.pointee.topics[0]
            for index in 0..<Int(described.partition_cnt) where described.partitions[index].leader < 0 {
                missing.append("\(name)[\(described.partitions[index].id)]")
            }
        }
        return missing
    }
}
