import DeadLetters
import Foundation
import Guidance
import Kafka
import Notifier
import TestSupport
import XCTest

/// An operator replays chosen dead letters after fixing their cause.
final class DeadLetterReplayTests: XCTestCase {
    var harness: NotifierHarness!

    override func setUp() async throws {
        harness = try await NotifierHarness()
    }

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    private func letter(student: StudentRef, reason: String) -> (id: String, message: OutgoingMessage) {
        let event = GuidanceRegistered(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "sa", student: student,
            reason: ReasonRef(code: "noShoes", label: "실내화 없음", detail: nil), recordedBy: "t-gate",
            occurredAt: "2026-11-20T23:30:00Z", recordedAt: "2026-11-20T23:30:01Z")
        let headers = [
            ("event-type", "guidance.registered"), ("dlq-reason", reason), ("dlq-source-topic", harness.topics.registered),
            ("dlq-source-partition", "0"), ("dlq-source-offset", "7")
        ]
        return (event.guidanceId, OutgoingMessage(topic: harness.topics.deadLetters, key: "sa/1", value: event.json, headers: headers))
    }

    private func registeredCount() throws -> Int64 {
        let offsets = try OffsetsReader(
            kafka: KafkaConfig(bootstrapServers: harness.cluster.bootstrapServers), groupID: "count", logger: quietLogger("count"))
        return try offsets.endOffsets(of: [harness.topics.registered]).values.reduce(0, +)
    }

    func testChosenLettersGoBackToTheirTopicOnceADryRunShowedThem() async throws {
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("dlq"))
        defer { producer.close() }
        // Dead-lettered while the roster lacked the student; fixed since.
        let fixed = letter(
            student: StudentRef(studentId: "a111", grade: 1, classNumber: 1, number: 1, name: "가가"),
            reason: "student no student at grade 1, class 1, number 1")
        let other = letter(
            student: StudentRef(studentId: "a112", grade: 1, classNumber: 1, number: 2, name: "가나"), reason: "conflict: guidance x")
        _ = try await producer.send(fixed.message)
        _ = try await producer.send(other.message)

        let replay = DeadLetterReplay(
            kafka: KafkaConfig(bootstrapServers: harness.cluster.bootstrapServers), topics: harness.topics, logger: quietLogger("replay"))
        let selection = DeadLetterReplay.Selection(reasonContains: "no student")
        let shown = try await replay.run(selection, dryRun: true)
        XCTAssertEqual(shown.map(\.reason), ["student no student at grade 1, class 1, number 1"])
        XCTAssertEqual(shown.first?.sourceTopic, harness.topics.registered)
        XCTAssertEqual(try registeredCount(), 0, "the dry run sent something")

        let replayed = try await replay.run(selection, dryRun: false)
        XCTAssertEqual(replayed.count, 1)
        try await assertEqualAsync(await harness.waitForList(equalTo: [fixed.id]), [fixed.id])

        // Twice is harmless: one guidance, and the other letter stays put.
        let applied = harness.notifier?.metrics.value("notifier_events_applied_total") ?? 0
        _ = try await replay.run(selection, dryRun: false)
        XCTAssertEqual(try registeredCount(), 2)
        try await harness.waitUntilApplied(applied + 1)
        XCTAssertEqual(harness.notifier?.metrics.value("notifier_events_applied_total"), applied + 1, "the copy was not applied")
        try await assertEqualAsync(await harness.waitForList(equalTo: [fixed.id]), [fixed.id])
        let consumer = try Consumer(
            config: consumerConfig(harness.cluster, group: "check-\(UUID())", topics: [harness.topics.registered]),
            logger: quietLogger("check"))
        defer { consumer.close() }
        let republished = consumeAll(consumer, count: 2)
        XCTAssertTrue(
            republished.allSatisfy {
                $0.header("dlq-reason") == nil && $0.header("dlq-replayed-from") != nil && $0.header("event-type") == "guidance.registered"
            })
    }
}
