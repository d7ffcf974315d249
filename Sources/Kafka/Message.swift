/// A message to produce. The key decides the partition, so every message with
/// one key stays in order.
package struct OutgoingMessage: Sendable {
    package var topic: String
    package var key: [UInt8]
    /// nil produces a null value (a tombstone in Kafka's terms), distinct
    /// from an empty one.
    package var value: [UInt8]?
    package var headers: [(name: String, value: [UInt8])]

    package init(topic: String, key: [UInt8], value: [UInt8]?, headers: [(name: String, value: [UInt8])] = []) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }

    package init(topic: String, key: String, value: [UInt8], headers: [(String, String)] = []) {
        self.init(
            topic: topic, key: Array(key.utf8), value: value,
            headers: headers.map { (name: $0.0, value: Array($0.1.utf8)) })
    }
}

/// Where the broker stored an acknowledged message.
package struct DeliveryReport: Sendable, Equatable {
    package let topic: String
    package let partition: Int32
    package let offset: Int64
}

/// A message read by a consumer.
package struct ConsumedMessage: Sendable {
    package let topic: String
    package let partition: Int32
    package let offset: Int64
    package let key: [UInt8]?
    /// nil for a null value, which is not the same as an empty one.
    package let value: [UInt8]?
    package let headers: [(name: String, value: [UInt8])]
    /// Milliseconds since the epoch, as the producer or broker stamped it.
    package let timestampMilliseconds: Int64?

    package init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8]?,
        headers: [(name: String, value: [UInt8])], timestampMilliseconds: Int64?
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMilliseconds = timestampMilliseconds
    }

    package var keyString: String? { key.map { String(decoding: $0, as: UTF8.self) } }

    /// The last header of that name, decoded as UTF-8.
    package func header(_ name: String) -> String? {
        headers.last(where: { $0.name == name }).map { String(decoding: $0.value, as: UTF8.self) }
    }
}

package struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    package let topic: String
    package let partition: Int32

    package init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    package var description: String { "\(topic)[\(partition)]" }
}

/// A change of this member's assignment, reported on the polling thread
/// inside the rebalance.
package enum RebalanceEvent: Sendable, Equatable {
    case assigned([TopicPartition])
    /// Reported before the stored offsets are committed and the partitions
    /// released: store the offsets of everything processed now.
    case revoked([TopicPartition])
}
