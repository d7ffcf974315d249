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
}
