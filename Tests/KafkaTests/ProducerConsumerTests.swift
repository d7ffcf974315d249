import Common
import Foundation
import Kafka
import TestSupport
import XCTest

/// Each test gets a fresh mock cluster and its own topic and group names.
final class ProducerConsumerTests: MockClusterTestCase {
    func testRoundTripKeepsKeysHeadersAndOrderPerKey() async throws {
        let producer = try Producer(config: producerConfig(cluster), logger: quietLogger("producer"))
        defer { producer.close() }
        let keys = ["school-a/1", "school-a/2", "school-b/1"]
        var reports: [String: [DeliveryReport]] = [:]
        for index in 0..<60 {
            let key = keys[index % keys.count]
            let message = OutgoingMessage(
                topic: topic, key: key, value: Array("\(key)#\(index)".utf8),
                headers: [("event-type", "guidance.registered"), ("schema-version", "1")])
            reports[key, default: []].append(try await producer.send(message))
        }
        // One key, one partition, increasing offsets.
        for (key, list) in reports {
            XCTAssertEqual(Set(list.map(\.partition)).count, 1, "key \(key) spread over partitions")
            XCTAssertEqual(list.map(\.offset), list.map(\.offset).sorted())
        }

        let consumer = try Consumer(config: consumerConfig(cluster, group: "g-\(topic)", topics: [topic]), logger: quietLogger("consumer"))
        let messages = consumeAll(consumer, count: 60)
        consumer.close()
        XCTAssertEqual(messages.count, 60)
        for message in messages {
            XCTAssertEqual(message.header("event-type"), "guidance.registered")
            XCTAssertEqual(message.header("schema-version"), "1")
            let key = try XCTUnwrap(message.keyString)
            XCTAssertTrue(String(decoding: message.value, as: UTF8.self).hasPrefix(key + "#"))
        }
        for key in keys {
            let sequence = messages.filter { $0.keyString == key }.map { Int(String(decoding: $0.value, as: UTF8.self).split(separator: "#")[1])! }
            XCTAssertEqual(sequence, sequence.sorted(), "order lost for \(key)")
            XCTAssertEqual(sequence.count, 20)
        }
    }

    func testTwoMembersSplitPartitionsAndSurvivorResumesFromCommittedOffsets() async throws {
        let producer = try Producer(config: producerConfig(cluster), logger: quietLogger("producer"))
        defer { producer.close() }
        for index in 0..<200 {
            _ = try await producer.send(OutgoingMessage(topic: topic, key: "k\(index % 16)", value: Array("\(index)".utf8)))
        }
        let group = "g-\(topic)"
        let first = try Consumer(config: consumerConfig(cluster, group: group, topics: [topic]), logger: quietLogger("c1"))
        let second = try Consumer(config: consumerConfig(cluster, group: group, topics: [topic]), logger: quietLogger("c2"))

        // Poll both until both hold partitions, processing and committing as they go.
        var seen: [String] = []
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && (first.assignment().isEmpty || second.assignment().isEmpty || seen.count < 200) {
            for member in [first, second] {
                let batch = member.poll(maxMessages: 50, timeout: .milliseconds(100))
                seen += batch.map { String(decoding: $0.value, as: UTF8.self) }
                try member.store(batch)
                try? member.commit()
            }
        }
        let split = (first.assignment(), second.assignment())
        XCTAssertEqual(split.0.count + split.1.count, 4)
        XCTAssertFalse(split.0.isEmpty)
        XCTAssertFalse(split.1.isEmpty)
        XCTAssertTrue(Set(split.0).isDisjoint(with: split.1))

        // The second leaves; 100 more arrive; the first takes every partition
        // and continues from the committed offsets.
        second.close()
        for index in 200..<300 {
            _ = try await producer.send(OutgoingMessage(topic: topic, key: "k\(index % 16)", value: Array("\(index)".utf8)))
        }
        let tailDeadline = Date().addingTimeInterval(30)
        while Date() < tailDeadline && (Set(seen).count < 300 || first.assignment().count < 4) {
            let batch = first.poll(maxMessages: 100, timeout: .milliseconds(100))
            seen += batch.map { String(decoding: $0.value, as: UTF8.self) }
            try first.store(batch)
            try? first.commit()
        }
        first.close()
        XCTAssertEqual(first.assignment().count, 0)
        XCTAssertEqual(Set(seen), Set((0..<300).map(String.init)), "a message was lost")
        // Resuming from committed offsets redelivers at most what was in flight
        // during the rebalance, not the whole topic.
        XCTAssertLessThan(seen.count, 400, "survivor restarted from the beginning")
    }

    func testCommittedOffsetsAndWatermarksAreReadable() async throws {
        let producer = try Producer(config: producerConfig(cluster), logger: quietLogger("producer"))
        defer { producer.close() }
        let report = try await producer.send(OutgoingMessage(topic: topic, key: "one-key", value: [1, 2, 3]))
        let consumer = try Consumer(config: consumerConfig(cluster, group: "g-\(topic)", topics: [topic]), logger: quietLogger("consumer"))
        let partition = TopicPartition(topic: topic, partition: report.partition)
        XCTAssertEqual(try consumer.highWatermark(of: partition), report.offset + 1)
        XCTAssertEqual(try consumer.committedOffsets([partition])[partition], .some(nil))
        let messages = consumeAll(consumer, count: 1)
        try consumer.store(messages)
        try consumer.commit()
        XCTAssertEqual(try consumer.committedOffsets([partition])[partition], report.offset + 1)
        XCTAssertEqual(try consumer.partitionCounts(of: [topic, "missing-topic"]), [topic: 4])
        consumer.close()
    }

    func testAdminDescribesTopicsAndCreatesNone() throws {
        let admin = try Admin(config: KafkaConfig(bootstrapServers: cluster.bootstrapServers), logger: quietLogger("admin"))
        // Every topic exists already, so no CreateTopics request (which the
        // mock cannot answer) is sent.
        let counts = try admin.ensureTopics([TopicSpec(name: topic, partitions: 4)])
        XCTAssertEqual(counts, [topic: 4])
    }
}

