import Common
import Foundation
import Kafka
import KafkaMock
import XCTest

package func quietLogger(_ component: String) -> Logger {
    Logger(component: component, level: Logger.Level(name: ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"] ?? "") ?? .error)
}

package func producerConfig(_ cluster: MockCluster, deliveryTimeout: Duration = .seconds(5)) -> ProducerConfig {
    ProducerConfig(kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers), deliveryTimeout: deliveryTimeout)
}

package func consumerConfig(_ cluster: MockCluster, group: String, topics: [String]) -> ConsumerConfig {
    ConsumerConfig(
        kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers, properties: ["topic.metadata.refresh.interval.ms": "1000"]),
        groupID: group, topics: topics, sessionTimeout: .seconds(6))
}

/// Polls until `count` messages arrived or 30 s passed.
package func consumeAll(_ consumer: Consumer, count: Int) -> [ConsumedMessage] {
    var messages: [ConsumedMessage] = []
    let deadline = Date().addingTimeInterval(30)
    while messages.count < count && Date() < deadline {
        messages += consumer.poll(maxMessages: 500, timeout: .milliseconds(200))
    }
    return messages
}

/// A test case with a fresh three-broker mock cluster and a 4-partition topic
/// of its own for every test.
open class MockClusterTestCase: XCTestCase {
    package var cluster: MockCluster!
    package var topic = ""

    open override func setUpWithError() throws {
        cluster = try MockCluster(brokers: 3, logger: quietLogger("mock"))
        topic = "t-\(UUID().uuidString.prefix(8))"
        try cluster.createTopic(topic, partitions: 4)
    }

    open override func tearDown() {
        cluster = nil
    }
}
