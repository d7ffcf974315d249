import Common
import Foundation
import Kafka
import KafkaMock
import TestSupport
import XCTest

final class ProducerFaultTests: MockClusterTestCase {
    func testSendFailsRetriablyWithinDeliveryTimeoutWhileBrokersAreDownThenRecovers() async throws {
        let producer = try Producer(config: producerConfig(cluster, deliveryTimeout: .seconds(2)), logger: quietLogger("producer"))
        defer { producer.close() }
        _ = try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [0]))

        cluster.setAllBrokers(up: false)
        let started = ContinuousClock.now
        do {
            let report = try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [1]))
            XCTFail("acknowledged with every broker down: \(report)")
        } catch {
            XCTAssertTrue(error.isRetriable, "\(error)")
        }
        let waited = ContinuousClock.now - started
        XCTAssertLessThan(waited, .milliseconds(3500), "took \(waited), delivery timeout is 2 s")

        cluster.setAllBrokers(up: true)
        let deadline = ContinuousClock.now + .seconds(20)
        var recovered: DeliveryReport?
        while recovered == nil && ContinuousClock.now < deadline {
            recovered = try? await producer.send(OutgoingMessage(topic: topic, key: "k", value: [2]))
        }
        XCTAssertNotNil(recovered, "sends did not succeed after the brokers came back")
    }

    /// The producer's own delivery deadline runs on the service's timer:
    /// librdkafka's 30 s are far off in real time, and the send fails as
    /// timed out once the timer passes them.
    func testASendFailsAsTimedOutWhenTheServicesTimerPassesItsDeliveryTimeout() async throws {
        let clock = ManualClock()
        let producer = try Producer(
            config: producerConfig(cluster, deliveryTimeout: .seconds(30)), logger: quietLogger("producer"), timer: clock)
        defer { producer.close(timeout: .zero) }
        cluster.setAllBrokers(up: false)
        let topic = self.topic
        let waiting = Task { try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [1])) }
        _ = try await eventually { producer.inFlight == 1 }
        clock.advance(by: .seconds(31))
        // Within a few of the producer's 50 ms polls, not librdkafka's 30 s.
        let failed = try await eventually(within: .seconds(5)) { producer.inFlight == 0 }
        XCTAssertTrue(failed, "the send outlived its delivery timeout on the service's timer")
        do {
            let report = try await waiting.value
            XCTFail("acknowledged with every broker down: \(report)")
        } catch let error as KafkaError {
            XCTAssertEqual(error.code, .deliveryTimedOut)
            XCTAssertTrue(error.isRetriable)
        }
    }

    func testACancelledSendStopsWaitingAndACancelledTaskSendsNothing() async throws {
        let producer = try Producer(config: producerConfig(cluster, deliveryTimeout: .seconds(30)), logger: quietLogger("producer"))
        defer { producer.close() }
        _ = try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [0]))
        cluster.setAllBrokers(up: false)
        let topic = self.topic
        let waiting = Task { try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [1])) }
        // Handed to librdkafka: cancelled before that, the task would send nothing.
        _ = try await eventually { producer.inFlight == 1 }
        waiting.cancel()
        do {
            let report = try await waiting.value
            XCTFail("acknowledged with every broker down: \(report)")
        } catch let error as KafkaError {
            // Not `deliveryTimedOut`: it did not wait out the 30 s.
            XCTAssertEqual(error.code, .cancelled)
            XCTAssertTrue(error.isRetriable)
        }
        XCTAssertEqual(producer.inFlight, 1, "the message stays queued: it may still be delivered")

        let never = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [2]))
        }
        do {
            _ = try await never.value
            XCTFail("a cancelled task's send was acknowledged")
        } catch let error as KafkaError {
            XCTAssertEqual(error.code, .cancelled)
        }
        // What the topic holds once the brokers are back says it: the
        // queued message may arrive, the one never sent does not.
        cluster.setAllBrokers(up: true)
        _ = try await eventually(within: .seconds(20)) {
            try? await producer.send(OutgoingMessage(topic: topic, key: "k", value: [3]))
        } until: {
            $0 != nil
        }
        let consumer = try Consumer(config: consumerConfig(cluster, group: "g-\(topic)", topics: [topic]), logger: quietLogger("consumer"))
        defer { consumer.close() }
        let values = Set(consumeAll(consumer, count: 3).compactMap { $0.value?.first })
        XCTAssertTrue(values.isSuperset(of: [0, 3]), "\(values)")
        XCTAssertFalse(values.contains(2), "a task cancelled before sending queued a message: \(values)")
    }

    func testFatalIdempotentProducerIsReplacedAndLaterSendsSucceed() async throws {
        let producer = try Producer(config: producerConfig(cluster, deliveryTimeout: .seconds(3)), logger: quietLogger("producer"))
        defer { producer.close() }
        _ = try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [0]))

        // Out-of-order sequence answers while sends are in flight drive
        // librdkafka 2.0.2's idempotent producer into its fatal state.
        cluster.pushRequestErrors(.produce, Array(repeating: .outOfOrderSequence, count: 5))
        let topic = self.topic
        let outcomes = await withTaskGroup(of: Result<DeliveryReport, KafkaError>.self) { group in
            for index in 0..<200 {
                group.addTask {
                    do { return .success(try await producer.send(OutgoingMessage(topic: topic, key: "k\(index % 8)", value: [1]))) } catch {
                        return .failure(error as! KafkaError)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let failures = outcomes.compactMap { if case .failure(let error) = $0 { error } else { nil } }
        XCTAssertFalse(failures.isEmpty, "no send failed: the fault was not injected")
        for failure in failures {
            XCTAssertTrue(failure.isRetriable, "\(failure)")
        }
        // The replacement follows the failed reports on the polling thread.
        _ = try await eventually(within: .seconds(5)) { producer.replacements > 0 }
        XCTAssertGreaterThanOrEqual(producer.replacements, 1, "the fatal producer was not replaced")

        cluster.clearRequestErrors(.produce)
        let deadline = ContinuousClock.now + .seconds(15)
        var recovered: DeliveryReport?
        while recovered == nil && ContinuousClock.now < deadline {
            recovered = try? await producer.send(OutgoingMessage(topic: topic, key: "k", value: [2]))
        }
        XCTAssertNotNil(recovered, "sends did not succeed after the replacement")
    }

    func testMessageTooLargeIsNotRetriable() async throws {
        let producer = try Producer(config: producerConfig(cluster), logger: quietLogger("producer"))
        defer { producer.close() }
        do {
            _ = try await producer.send(OutgoingMessage(topic: topic, key: "k", value: Array(repeating: 7, count: 2_000_000)))
            XCTFail("a 2 MB message was accepted")
        } catch {
            XCTAssertEqual(error.code, .messageTooLarge)
            XCTAssertFalse(error.isRetriable)
        }
    }

    func testCloseFailsQueuedSendsInsteadOfLosingThem() async throws {
        let producer = try Producer(config: producerConfig(cluster, deliveryTimeout: .seconds(30)), logger: quietLogger("producer"))
        cluster.setAllBrokers(up: false)
        let message = OutgoingMessage(topic: topic, key: "k", value: [1])
        async let pending = producer.send(message)
        _ = try await eventually { producer.inFlight == 1 }
        producer.close(timeout: .milliseconds(500))
        do {
            _ = try await pending
            XCTFail("acknowledged with every broker down")
        } catch {
            // Not `deliveryTimedOut`: the close drained for its 500 ms, not the send's 30 s.
            XCTAssertEqual((error as? KafkaError)?.code, .shuttingDown)
        }
        do {
            _ = try await producer.send(OutgoingMessage(topic: topic, key: "k", value: [1]))
            XCTFail("send after close succeeded")
        } catch {
            XCTAssertEqual(error.code, .shuttingDown)
        }
    }
}
