import CRdKafka
import Common

/// A topic to create when missing.
package struct TopicSpec: Sendable, Equatable {
    package let name: String
    package let partitions: Int
    /// nil: as many replicas as brokers, at most 3.
    package let replicationFactor: Int?
    /// Topic settings such as `retention.ms`; the broker's defaults otherwise.
    package let configs: [String: String]

    package init(name: String, partitions: Int, replicationFactor: Int? = nil, configs: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.configs = configs
    }
}

/// Topic administration: describe topics and create the missing ones.
/// Unchecked: `handle` is a C pointer; librdkafka's admin calls are
/// thread-safe (each waits on a queue of its own).
package final class Admin: @unchecked Sendable {
    private let handle: OpaquePointer
    private let context: ClientContext

    package init(config: KafkaConfig, logger: Logger = Logger(component: "kafka-admin")) throws(KafkaError) {
        context = ClientContext(logger: logger)
        let conf = try makeConf(config.resolved(defaults: [("client.id", "guidance-admin"), ("log_level", "6")], enforced: []))
        context.install(on: conf)
        handle = try makeHandle(RD_KAFKA_PRODUCER, conf)
    }

    deinit { rd_kafka_destroy(handle) }

    /// Partition counts of the existing topics among `topics`.
    package func partitionCounts(of topics: [String], timeout: Duration = .seconds(10)) throws(KafkaError) -> [String: Int] {
        try Metadata.partitionCounts(handle: handle, topics: topics, timeout: timeout)
    }

    /// Brokers in the cluster.
    package func brokerCount(timeout: Duration = .seconds(10)) throws(KafkaError) -> Int {
        try Metadata.brokerCount(handle: handle, timeout: timeout)
    }

    /// Creates the topics that do not exist yet and returns every topic's
    /// partition count. An existing topic is left as it is, even with fewer
    /// partitions than asked: the caller decides whether to warn.
    @discardableResult
    package func ensureTopics(_ specs: [TopicSpec], timeout: Duration = .seconds(10)) throws(KafkaError) -> [String: Int] {
        let existing = try partitionCounts(of: specs.map(\.name), timeout: timeout)
        let missing = specs.filter { existing[$0.name] == nil }
        if !missing.isEmpty {
            try create(missing, timeout: timeout)
        }
        return try partitionCounts(of: specs.map(\.name), timeout: timeout)
    }

    private func create(_ specs: [TopicSpec], timeout: Duration) throws(KafkaError) {
        var errorText = [CChar](repeating: 0, count: 512)
        var topics: [OpaquePointer?] = []
        defer { for topic in topics { rd_kafka_NewTopic_destroy(topic) } }
        let brokers = try brokerCount(timeout: timeout)
        for spec in specs {
            let replicas = spec.replicationFactor ?? min(3, max(1, brokers))
            guard
                let topic = rd_kafka_NewTopic_new(
                    spec.name, Int32(spec.partitions), Int32(replicas), &errorText, errorText.count)
            else {
                let reason = errorText.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                throw KafkaError(.invalidConfiguration, "topic \(spec.name): \(reason)")
            }
            topics.append(topic)
            for (name, value) in spec.configs.sorted(by: { $0.key < $1.key }) {
                let result = rd_kafka_NewTopic_set_config(topic, name, value)
                guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    throw KafkaError(result, context: "topic \(spec.name): \(name)=\(value)")
                }
            }
        }
        let queue = rd_kafka_queue_new(handle)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        rd_kafka_AdminOptions_set_operation_timeout(options, Int32(clamping: timeout.milliseconds), nil, 0)
        rd_kafka_AdminOptions_set_request_timeout(options, Int32(clamping: timeout.milliseconds), nil, 0)
        topics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(handle, buffer.baseAddress, buffer.count, options, queue)
        }
        guard let event = rd_kafka_queue_poll(queue, Int32(clamping: timeout.milliseconds + 1000)) else {
            throw KafkaError(.deliveryTimedOut, "creating topics timed out")
        }
        defer { rd_kafka_event_destroy(event) }
        let eventError = rd_kafka_event_error(event)
        guard eventError == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(eventError, context: "create topics")
        }
        var count = 0
        guard let result = rd_kafka_event_CreateTopics_result(event),
            let results = rd_kafka_CreateTopics_result_topics(result, &count)
        else { return }
        for index in 0..<count {
            let topicError = rd_kafka_topic_result_error(results[index])
            if topicError != RD_KAFKA_RESP_ERR_NO_ERROR && topicError != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
                let name = String(cString: rd_kafka_topic_result_name(results[index]))
                throw KafkaError(topicError, context: "create topic \(name)")
            }
        }
    }
}
