import CRdKafka

/// Conversions between `rd_kafka_topic_partition_list_t` and Swift values.
/// Every list made here is destroyed by the caller with
/// `rd_kafka_topic_partition_list_destroy`.
enum PartitionList {
    static func make(_ entries: [(TopicPartition, Int64)]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        // NULL only when out of memory, where librdkafka's allocator aborts first.
        let list = rd_kafka_topic_partition_list_new(Int32(entries.count))!
        for (partition, offset) in entries {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition).pointee.offset = offset
        }
        return list
    }

    static func make(_ partitions: [TopicPartition]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        make(partitions.map { ($0, Int64(RD_KAFKA_OFFSET_INVALID)) })
    }

    static func entries(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [(
        partition: TopicPartition, offset: Int64, error: rd_kafka_resp_err_t
    )] {
        (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return (TopicPartition(topic: String(cString: element.topic), partition: element.partition), element.offset, element.err)
        }
    }

    static func partitions(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartition] {
        entries(list).map(\.partition)
    }
}
