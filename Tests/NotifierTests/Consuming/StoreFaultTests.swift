import Foundation
import Guidance
import Kafka
import Notifier
import TestSupport
import XCTest

/// A PostgreSQL that stops answering (its processes stopped, as a frozen VM
/// or a black-holed network looks): readiness says so within a second, the
/// API answers 503 within its store deadline, shutdown does not wait for
/// the store, and everything works again once the server answers.
final class StoreFaultTests: XCTestCase {
    var harness: NotifierHarness?
    var dataDirectory = ""
    var frozen = false

    override func setUp() async throws {
        guard let base = ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"],
            let directory = ProcessInfo.processInfo.environment["TEST_POSTGRES_DIR"]
        else {
            throw XCTSkip("TEST_POSTGRES_URL and TEST_POSTGRES_DIR are not set (scripts/test sets them)")
        }
        dataDirectory = directory
        let schema = "fault_\(UUID().uuidString.prefix(8).lowercased())"
        try postgres(["psql", base, "-qc", "CREATE SCHEMA \(schema)"], direct: true)
        harness = try await NotifierHarness(
            store: .postgres(url: base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"))
    }

    override func tearDown() async throws {
        if frozen { try? freeze(false) }
        await harness?.shutdown()
        harness = nil
    }

    private func postgres(_ arguments: [String], direct: Bool = false) throws {
        let process = Process()
        let root = repositoryRoot
        process.executableURL = direct ? URL(fileURLWithPath: "/usr/bin/env") : root.appendingPathComponent("scripts/postgres")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(arguments)")
    }

    private func freeze(_ on: Bool) throws {
        try postgres([on ? "freeze" : "thaw", dataDirectory])
        frozen = on
    }

    func testAFrozenDatabaseIsReportedPromptlyAndShutdownDoesNotWaitForIt() async throws {
        let harness = try XCTUnwrap(harness)
        let id = try await harness.register(grade: 1, classNumber: 1, number: 1)
        try await assertEqualAsync(await harness.waitForList(equalTo: [id]), [id])

        try freeze(true)
        var started = ContinuousClock.now
        let ready = try await fetch("GET", harness.notifierBase + "/readyz")
        XCTAssertEqual(ready.status, 503, ready.text)
        print("StoreFaultTests: /readyz answered \(ready.status) in \(ContinuousClock.now - started) with the database frozen")
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(1_800), "readiness waited for the store")

        started = ContinuousClock.now
        let list = try await harness.list()
        XCTAssertEqual(list.status, 503, list.text)
        XCTAssertNotNil(list.header("Retry-After"))
        print("StoreFaultTests: the list answered \(list.status) in \(ContinuousClock.now - started)")
        // One read deadline (4 s), not one per read of the list (its records, then its counts on another connection).
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "the list waited past the store's read deadline")
        started = ContinuousClock.now
        let again = try await harness.list()
        XCTAssertEqual(again.status, 503, again.text)
        print("StoreFaultTests: the next list answered \(again.status) in \(ContinuousClock.now - started)")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(1), "a read right after one that found the store unavailable waited")

        // Back: the connections come back by themselves.
        try freeze(false)
        let status = try await eventually {
            try await harness.list().status
        } until: {
            $0 == 200
        }
        XCTAssertEqual(status, 200, "the notifier did not recover after the database answered again")
        try await assertEqualAsync(await harness.waitForList(equalTo: [id]), [id])

        // Frozen while it shuts down, with a read in flight.
        try freeze(true)
        let reader = Task { try? await harness.list() }
        // The read reaches the frozen database (a real server, stopped):
        // nothing in the notifier says so, so a moment.
        try await Task.sleep(for: .milliseconds(300))
        started = ContinuousClock.now
        await harness.stopNotifier()
        print("StoreFaultTests: shutdown took \(ContinuousClock.now - started) with the database frozen and a read in flight")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(20), "shutdown waited for the frozen database")
        _ = await reader.value
        try freeze(false)
    }

    /// PostgreSQL refuses a NUL in text, whatever the retries: such an event
    /// is found by halving its batch and dead-lettered, and the rest of the
    /// batch is applied. It used to wedge consumption for good.
    func testAnEventTheStoreRefusesIsDeadLetteredAndTheRestApplied() async throws {
        let harness = try XCTUnwrap(harness)
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("refused"))
        defer { producer.close() }
        // Stopped, so that the refused event and the good ones share a batch.
        await harness.stopNotifier()
        let good = try await harness.register(grade: 1, classNumber: 1, number: 1)
        let refused = GuidanceDeleted(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "sa", grade: 1,
            deletedBy: "t-gate\u{0}x", occurredAt: "2026-11-20T23:30:00Z")
        _ = try await producer.send(OutgoingMessage(topic: harness.topics.deleted, key: "sa/1", value: refused.json))
        let after = try await harness.register(grade: 1, classNumber: 2, number: 1)
        try await harness.startNotifier()
        try await assertEqualAsync(await harness.waitForList(equalTo: [good, after]), [good, after])

        let consumer = try Consumer(
            config: consumerConfig(harness.cluster, group: "dlq-\(UUID())", topics: [harness.topics.deadLetters]),
            logger: quietLogger("dlq"))
        defer { consumer.close() }
        let letters = consumeAll(consumer, count: 1)
        XCTAssertEqual(letters.count, 1)
        XCTAssertEqual(letters.first?.value, refused.json)
        XCTAssertTrue((letters.first?.header("dlq-reason") ?? "").hasPrefix("store: "), letters.first?.header("dlq-reason") ?? "none")
    }
}
