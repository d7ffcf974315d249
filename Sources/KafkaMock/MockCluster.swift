import CRdKafka
import Common
import Kafka

/// librdkafka's in-process mock Kafka cluster: real TCP listeners on loopback,
/// several brokers, consumer groups and fault injection. For tests and the
/// local run (`guidance-dev`), never the services: a module of its own beside
/// `Kafka`, whose client plumbing it borrows (`package` access). It keeps
/// only the newest few tens of thousands of messages per partition.
/// Unchecked: it holds the mock cluster's C handles (not Sendable types);
/// librdkafka's mock calls lock the cluster themselves.
package final class MockCluster: @unchecked Sendable {
    /// Kafka protocol request types, for injecting errors.
    package enum Request: Int16, Sendable {
        case produce = 0
        case fetch = 1
        case listOffsets = 2
        case metadata = 3
        case offsetCommit = 8
        case offsetFetch = 9
        case findCoordinator = 10
        case joinGroup = 11
        case heartbeat = 12
        case leaveGroup = 13
        case syncGroup = 14
        case initProducerID = 22
    }

    /// Errors a mock broker can answer with.
    package enum InjectedError: Sendable {
        /// Drops the client's connection.
        case transport
        case outOfOrderSequence

        var raw: rd_kafka_resp_err_t {
            switch self {
            case .transport: RD_KAFKA_RESP_ERR__TRANSPORT
            case .outOfOrderSequence: RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER
            }
        }
    }

    package let brokerCount: Int
    /// The client handle the mock cluster needs for its bookkeeping; destroyed
    /// after the cluster.
    private let owner: OpaquePointer
    private let cluster: OpaquePointer
    private let context: ClientContext

    package init(brokers: Int = 3, logger: Logger = Logger(component: "kafka-mock")) throws(KafkaError) {
        precondition(brokers >= 1, "a cluster needs a broker")
        brokerCount = brokers
        context = ClientContext(logger: logger)
        let conf = try makeConf([("client.id", "guidance-mock"), ("log_level", "3")])
        context.install(on: conf)
        owner = try makeHandle(RD_KAFKA_PRODUCER, conf)
        guard let cluster = rd_kafka_mock_cluster_new(owner, Int32(brokers)) else {
            rd_kafka_destroy(owner)
            throw KafkaError(.invalidConfiguration, "could not start a mock cluster")
        }
        self.cluster = cluster
    }

    deinit {
        rd_kafka_mock_cluster_destroy(cluster)
        rd_kafka_destroy(owner)
    }

    /// `host:port,…` of every broker, for `bootstrap.servers`.
    package var bootstrapServers: String { String(cString: rd_kafka_mock_cluster_bootstraps(cluster)) }

    /// Broker ids run from 1 to `brokerCount`.
    package var brokerIDs: ClosedRange<Int32> { 1...Int32(brokerCount) }

    package func createTopic(_ name: String, partitions: Int, replicationFactor: Int? = nil) throws(KafkaError) {
        let replicas = replicationFactor ?? min(brokerCount, 3)
        let result = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(replicas))
        guard result == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError(result, context: "create mock topic \(name)")
        }
    }

    package func setBrokerDown(_ broker: Int32) {
        rd_kafka_mock_broker_set_down(cluster, broker)
    }

    package func setBrokerUp(_ broker: Int32) {
        rd_kafka_mock_broker_set_up(cluster, broker)
    }

    package func setAllBrokers(up: Bool) {
        for broker in brokerIDs {
            if up { setBrokerUp(broker) } else { setBrokerDown(broker) }
        }
    }

    /// Delays every answer of `broker` by `delay`.
    package func setRoundTripTime(_ delay: Duration, broker: Int32) {
        rd_kafka_mock_broker_set_rtt(cluster, broker, Int32(clamping: delay.milliseconds))
    }

    package func setPartitionLeader(topic: String, partition: Int32, broker: Int32) {
        rd_kafka_mock_partition_set_leader(cluster, topic, partition, broker)
    }

    /// The next `errors.count` requests of kind `request`, on any broker,
    /// fail with these errors in order.
    package func pushRequestErrors(_ request: Request, _ errors: [InjectedError]) {
        let raw = errors.map(\.raw)
        raw.withUnsafeBufferPointer { buffer in
            guidance_kafka_mock_push_errors(cluster, request.rawValue, buffer.count, buffer.baseAddress)
        }
    }

    package func clearRequestErrors(_ request: Request) {
        rd_kafka_mock_clear_request_errors(cluster, request.rawValue)
    }
}
