import CRdKafka
import Common

/// Connection settings shared by producers, consumers and the admin client:
/// the bootstrap servers plus any librdkafka property, as operators set them
/// through `KAFKA_<PROPERTY>` variables (as Kafka's container images do).
package struct KafkaConfig: Sendable {
    package var bootstrapServers: String
    /// librdkafka properties applied after the typed settings, e.g.
    /// `["security.protocol": "ssl"]`.
    package var properties: [String: String]

    package init(bootstrapServers: String = "127.0.0.1:9092", properties: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.properties = properties
    }

    /// Why a bootstrap list is unusable, or nil: each comma-separated entry
    /// must be `host:port` (optionally `protocol://host:port`) with a port
    /// from 1 to 65535. librdkafka itself reads `localhost:notaport` as port 0
    /// and only fails to connect.
    static func bootstrapProblem(_ list: String) -> String? {
        let entries = list.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
        guard !list.trimmingWhitespace().isEmpty else { return "must not be empty; e.g. kafka-1:9092,kafka-2:9092" }
        for entry in entries {
            let address = entry.range(of: "://").map { String(entry[$0.upperBound...]) } ?? entry
            guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
                let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port)
            else { return "'\(entry)' is not host:port with a port from 1 to 65535; e.g. kafka-1:9092,kafka-2:9092" }
        }
        return nil
    }

    /// Reads `KAFKA_BOOTSTRAP_SERVERS` and every other `KAFKA_<PROPERTY>`
    /// (`KAFKA_SECURITY_PROTOCOL` → `security.protocol`). Each property is
    /// checked by librdkafka now, so a typo stops the process at launch.
    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> KafkaConfig {
        var config = KafkaConfig()
        for (variable, value) in environment.values.sorted(by: { $0.key < $1.key })
        where variable.hasPrefix("KAFKA_") && variable.count > 6 {
            let property = variable.dropFirst(6).lowercased().replacingOccurrences(of: "_", with: ".")
            if property == "bootstrap.servers" {
                if let problem = KafkaConfig.bootstrapProblem(value) {
                    throw ConfigurationError(variable: variable, reason: problem)
                }
                config.bootstrapServers = value
                continue
            }
            if let reason = KafkaConfig.enforced[property] {
                throw ConfigurationError(variable: variable, reason: reason)
            }
            do {
                let conf = try makeConf([(property, value)])
                rd_kafka_conf_destroy(conf)
            } catch {
                throw ConfigurationError(variable: variable, reason: error.message)
            }
            config.properties[property] = value
        }
        return config
    }

    /// Properties the services' guarantees rest on; overriding them is refused.
    static let enforced: [String: String] = [
        "enable.idempotence": "the producer is always idempotent (delivery guarantee); remove the variable",
        "acks": "the producer always waits for all in-sync replicas (acks=all); remove the variable",
        "enable.auto.commit": "offsets are committed only after the store committed; remove the variable",
        "enable.auto.offset.store": "offsets are stored only after processing; remove the variable"
    ]

    /// The full property list for a client: typed defaults first, then the
    /// operator's properties, then the enforced ones.
    func resolved(defaults: [(String, String)], enforced: [(String, String)]) -> [(String, String)] {
        var list = [("bootstrap.servers", bootstrapServers)] + defaults
        list += properties.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }
        list += enforced
        return list
    }
}

/// Settings of the idempotent producer.
package struct ProducerConfig: Sendable {
    package var kafka: KafkaConfig
    /// How long a send may wait for the broker's acknowledgement
    /// (`message.timeout.ms`). Keep it below the HTTP client's timeout.
    package var deliveryTimeout: Duration
    /// How long librdkafka waits to batch messages (`linger.ms`). Each awaited
    /// send pays about this much; throughput comes from sends in flight at once.
    package var linger: Duration
    /// Messages queued or awaiting acknowledgement before sends fail fast with
    /// `queueFull` (`queue.buffering.max.messages`).
    package var maxQueuedMessages: Int
    package var clientID: String

    package init(
        kafka: KafkaConfig = KafkaConfig(),
        deliveryTimeout: Duration = .seconds(5),
        linger: Duration = .milliseconds(1),
        maxQueuedMessages: Int = 100_000,
        clientID: String = "guidance"
    ) {
        // An operator's KAFKA_MESSAGE_TIMEOUT_MS (or its alias) is the delivery
        // timeout, which the producer also enforces itself.
        var kafka = kafka
        var deliveryTimeout = deliveryTimeout
        for alias in ["message.timeout.ms", "delivery.timeout.ms"] {
            if let text = kafka.properties.removeValue(forKey: alias), let milliseconds = Int64(text) {
                deliveryTimeout = .milliseconds(milliseconds)
            }
        }
        self.kafka = kafka
        self.deliveryTimeout = deliveryTimeout
        self.linger = linger
        self.maxQueuedMessages = maxQueuedMessages
        self.clientID = clientID
    }

    var properties: [(String, String)] {
        kafka.resolved(
            defaults: [
                ("client.id", clientID),
                ("message.timeout.ms", String(deliveryTimeout.milliseconds)),
                ("linger.ms", String(linger.milliseconds)),
                ("queue.buffering.max.messages", String(maxQueuedMessages)),
                ("log_level", "6")
            ],
            enforced: [("enable.idempotence", "true"), ("acks", "all")])
    }
}

/// Settings of a consumer-group member.
package struct ConsumerConfig: Sendable {
    package var kafka: KafkaConfig
    package var groupID: String
    package var topics: [String]
    /// Static membership (`group.instance.id`): a restarted member with the same
    /// id gets its partitions back without a rebalance.
    package var instanceID: String?
    package var sessionTimeout: Duration
    package var clientID: String
    /// Read every partition of `topics` from its beginning without joining
    /// the group (no rebalances, nothing committed): for a log every
    /// process reads whole.
    package var readsWholeTopics = false
    /// With `readsWholeTopics`: the offset each partition is read from
    /// instead of its beginning (one message of a log looked up again).
    package var readsFrom: Int64?
    /// Messages fetched ahead and held in memory, at most (librdkafka's
    /// `queued.max.messages.kbytes`). A log read whole at start (photos)
    /// would otherwise hold 32 MiB of it at once.
    package var prefetchKilobytes = 32_768

    package init(
        kafka: KafkaConfig = KafkaConfig(),
        groupID: String,
        topics: [String],
        instanceID: String? = nil,
        sessionTimeout: Duration = .seconds(10),
        clientID: String = "guidance"
    ) {
        self.kafka = kafka
        self.groupID = groupID
        self.topics = topics
        self.instanceID = instanceID
        self.sessionTimeout = sessionTimeout
        self.clientID = clientID
    }

    var properties: [(String, String)] {
        var defaults = [
            ("client.id", clientID),
            ("group.id", groupID),
            // Eager rebalancing: librdkafka 2.0.2's cooperative-sticky loses
            // partitions when offsets are committed mid-rebalance (docs/pitfalls.md).
            ("partition.assignment.strategy", "range"),
            ("auto.offset.reset", "earliest"),
            ("session.timeout.ms", String(sessionTimeout.milliseconds)),
            ("heartbeat.interval.ms", String(max(100, sessionTimeout.milliseconds / 5))),
            // How long a broker may hold an empty fetch. librdkafka's 500 ms
            // default is the floor of end-to-end latency on the mock cluster,
            // which does not answer early when data arrives.
            ("fetch.wait.max.ms", "10"),
            // Prefetched messages held in memory. librdkafka's default is 64 MiB;
            // measured on a 100,000-event backlog: 8 MiB applied 21,700 events/s,
            // 32 MiB 38,000, 64 MiB 36,600. 32 MiB keeps the notifier in budget.
            ("queued.max.messages.kbytes", String(prefetchKilobytes)),
            ("log_level", "6")
        ]
        if let instanceID { defaults.append(("group.instance.id", instanceID)) }
        return kafka.resolved(
            defaults: defaults,
            enforced: [("enable.auto.commit", "false"), ("enable.auto.offset.store", "false")])
    }
}

/// Builds a librdkafka configuration; the caller owns the result until it is
/// passed to `rd_kafka_new`.
package func makeConf(_ properties: [(String, String)]) throws(KafkaError) -> OpaquePointer {
    // NULL only when out of memory, where librdkafka's allocator aborts first.
    let conf = rd_kafka_conf_new()!
    var errorText = [CChar](repeating: 0, count: 512)
    for (name, value) in properties where rd_kafka_conf_set(conf, name, value, &errorText, errorText.count) != RD_KAFKA_CONF_OK {
        rd_kafka_conf_destroy(conf)
        let reason = errorText.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        throw KafkaError(.invalidConfiguration, "\(name)=\(value): \(reason)")
    }
    return conf
}

/// Creates a client handle from a configuration that already carries its
/// callbacks and opaque. `rd_kafka_new` takes the configuration on success
/// only, so it is destroyed here on failure.
package func makeHandle(_ type: rd_kafka_type_t, _ conf: OpaquePointer) throws(KafkaError) -> OpaquePointer {
    var errorText = [CChar](repeating: 0, count: 512)
    guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
        rd_kafka_conf_destroy(conf)
        let reason = errorText.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        throw KafkaError(.invalidConfiguration, "cannot create Kafka client: \(reason)")
    }
    return handle
}
