/// A message to produce. The key decides the partition, so every message with
/// one key stays in order.
public struct OutgoingMessage: Sendable {
    public var topic: String
    public var key: [UInt8]
    /// nil produces a null value (a tombstone in Kafka's terms), distinct
    /// from an empty one.
    public var value: [UInt8]?
    public var headers: [(name: String, value: [UInt8])]

    public init(topic: String, key: [UInt8], value: [UInt8]?, headers: [(name: String, value: [UInt8])] = []) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }

    public init(topic: String, key: String, value: [UInt8], headers: [(String, String)] = []) {
        self.init(
            topic: topic, key: Array(key.utf8), value: value,
            headers: headers.map { (name: $0.0, value: Array($0.1.utf8)) })
    }
}

/// Where the broker stored an acknowledged message.
public struct DeliveryReport: Sendable, Equatable {
    public let topic: String
    public let partition: Int32
    public let offset: Int64
}

/// A message read by a consumer.
public struct ConsumedMessage: Sendable {
    public let topic: String
    public let partition: Int32
    public let offset: Int64
    public let key: [UInt8]?
    /// nil for a null value, which is not the same as an empty one.
    public let value: [UInt8]?
    public let headers: [(name: String, value: [UInt8])]
    /// Milliseconds since the epoch, as the producer or broker stamped it.
    public let timestampMilliseconds: Int64?

    public init(
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

    public var keyString: String? { key.map { String(decoding: $0, as: UTF8.self) } }

    /// The last header of that name, decoded as UTF-8.
    public func header(_ name: String) -> String? {
        headers.last(where: { $0.name == name }).map { String(decoding: $0.value, as: UTF8.self) }
    }
}

public struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    public let topic: String
    public let partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// A change of this member's assignment, reported on the polling thread
/// inside the rebalance.
public enum RebalanceEvent: Sendable, Equatable {
    case assigned([TopicPartition])
    /// Reported before the stored offsets are committed and the partitions
    /// released: store the offsets of everything processed now.
    case revoked([TopicPartition])
}
