import Common
import Foundation
import Kafka
import KafkaMock
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
            XCTAssertTrue(String(decoding: message.value ?? [], as: UTF8.self).hasPrefix(key + "#"))
        }
        for key in keys {
            let sequence = messages.filter { $0.keyString == key }.map {
                Int(String(decoding: $0.value ?? [], as: UTF8.self).split(separator: "#")[1])!
            }
            XCTAssertEqual(sequence, sequence.sorted(), "order lost for \(key)")
            XCTAssertEqual(sequence.count, 20)
        }
    }

    func testTwoMembersSplitPartitionsAndSurvivorResumesFromCommittedOffsets() async throws {
        let producer = try Producer(config: producerConfig(cluster), logger: quietLogger("producer"))
        defer { producer.close() }
        let group = "g-\(topic)"
        let first = try Consumer(config: consumerConfig(cluster, group: group, topics: [topic]), logger: quietLogger("c1"))
        let second = try Consumer(config: consumerConfig(cluster, group: group, topics: [topic]), logger: quietLogger("c2"))
        let partitions = (0..<4).map { TopicPartition(topic: topic, partition: Int32($0)) }

        // Poll both until the group is stable with both members holding partitions.
        let joinDeadline = Date().addingTimeInterval(30)
        while Date() < joinDeadline && (first.assignment().isEmpty || second.assignment().isEmpty) {
            for member in [first, second] { XCTAssertTrue(member.poll(maxMessages: 10, timeout: .milliseconds(100)).isEmpty) }
        }
        let split = (first.assignment(), second.assignment())
        XCTAssertEqual(split.0.count + split.1.count, 4)
        XCTAssertFalse(split.0.isEmpty)
        XCTAssertFalse(split.1.isEmpty)
        XCTAssertTrue(Set(split.0).isDisjoint(with: split.1))

        // 200 messages, processed and committed by whichever member owns them.
        for index in 0..<200 {
            _ = try await producer.send(OutgoingMessage(topic: topic, key: "k\(index % 16)", value: Array("\(index)".utf8)))
        }
        var seen: [String] = []
        // What a full commit looks like: each partition's high watermark, or no
        // commit at all for a partition no key hashed to.
        let offsets = try OffsetsReader(
            kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers), groupID: first.config.groupID, logger: quietLogger("offsets"))
        var watermarks: [TopicPartition: Int64?] = [:]
        for partition in partitions {
            let high = try offsets.highWatermark(of: partition)
            watermarks[partition] = high == 0 ? .some(nil) : high
        }
        let consumeDeadline = Date().addingTimeInterval(30)
        while Date() < consumeDeadline, try Set(seen).count < 200 || offsets.committedOffsets(partitions) != watermarks {
            for member in [first, second] {
                let batch = member.poll(maxMessages: 50, timeout: .milliseconds(100))
                seen += batch.map { String(decoding: $0.value ?? [], as: UTF8.self) }
                try member.store(batch)
                try? member.commit()
            }
        }
        XCTAssertEqual(try offsets.committedOffsets(partitions), watermarks, "the first 200 were not all committed")
        XCTAssertEqual(seen.sorted(), (0..<200).map(String.init).sorted(), "a stable group delivered a message twice or lost one")

        // The second leaves; 100 more arrive; the first takes every partition
        // and continues from the committed offsets: nothing of the first 200
        // comes again.
        second.close()
        for index in 200..<300 {
            _ = try await producer.send(OutgoingMessage(topic: topic, key: "k\(index % 16)", value: Array("\(index)".utf8)))
        }
        var tail: [String] = []
        let tailDeadline = Date().addingTimeInterval(30)
        while Date() < tailDeadline && (Set(tail).count < 100 || first.assignment().count < 4) {
            let batch = first.poll(maxMessages: 100, timeout: .milliseconds(100))
            tail += batch.map { String(decoding: $0.value ?? [], as: UTF8.self) }
            try first.store(batch)
            try? first.commit()
        }
        first.close()
        XCTAssertEqual(first.assignment().count, 0)
        XCTAssertEqual(Set(tail), Set((200..<300).map(String.init)), "the survivor lost a message or replayed a committed one")
    }

    func testCommittedOffsetsAndWatermarksAreReadable() async throws {
        let producer = try Producer(config: producerConfig(cluster), logger: quietLogger("producer"))
        defer { producer.close() }
        let report = try await producer.send(OutgoingMessage(topic: topic, key: "one-key", value: [1, 2, 3]))
        let consumer = try Consumer(config: consumerConfig(cluster, group: "g-\(topic)", topics: [topic]), logger: quietLogger("consumer"))
        let offsets = try OffsetsReader(
            kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers), groupID: "g-\(topic)", logger: quietLogger("offsets"))
        let partition = TopicPartition(topic: topic, partition: report.partition)
        XCTAssertEqual(try offsets.highWatermark(of: partition), report.offset + 1)
        XCTAssertEqual(try offsets.endOffsets(of: [topic, "missing-topic"])[partition], report.offset + 1)
        XCTAssertEqual(try offsets.endOffsets(of: [topic]).count, 4)
        XCTAssertEqual(try offsets.committedOffsets([partition])[partition], .some(nil))
        let messages = consumeAll(consumer, count: 1)
        try consumer.store(messages)
        try consumer.commit()
        XCTAssertEqual(try offsets.committedOffsets([partition])[partition], report.offset + 1)
        XCTAssertEqual(try offsets.partitionCounts(of: [topic, "missing-topic"]), [topic: 4])
        consumer.close()
    }

    func testAdminDescribesTopicsAndCreatesNone() throws {
        let admin = try Admin(config: KafkaConfig(bootstrapServers: cluster.bootstrapServers), logger: quietLogger("admin"))
        // Every topic exists already, so no CreateTopics request (which the
        // mock cannot answer) is sent.
        let counts = try admin.ensureTopics([TopicSpec(name: topic, partitions: 4)])
        XCTAssertEqual(counts, [topic: 4])
    }

    /// A subscription librdkafka refuses (an invalid topic pattern) fails
    /// the initializer, and the handle is freed once: it used to be freed by
    /// the failing init and again by deinit.
    func testARefusedSubscriptionThrowsAndFreesTheClientOnce() throws {
        for _ in 0..<3 {
            XCTAssertThrowsError(
                try Consumer(config: ConsumerConfig(groupID: "refused-\(UUID())", topics: ["^(["]), logger: quietLogger("refused")))
        }
    }
}
