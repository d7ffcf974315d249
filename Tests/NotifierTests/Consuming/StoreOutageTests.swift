import Foundation
import Guidance
import Notifier
import TestSupport
import XCTest

/// A store that cannot write is the store's failure, never an event's:
/// every acknowledged event waits at its offset and is applied once the
/// store takes writes again, with no operator action; meanwhile readiness
/// and the API answer 503. On today's disk-full SQLite the events were
/// dead-lettered (`database or disk is full` was not retriable).
final class StoreOutageTests: XCTestCase {
    var harness: NotifierHarness?
    var mountPoint: URL?
    /// The server's own database and the test's, while one exists.
    var postgres: (base: String, database: String)?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
        if let mountPoint {
            _ = try? run(["umount", "--lazy", mountPoint.path])
            try? FileManager.default.removeItem(at: mountPoint)
        }
        if let postgres {
            readOnly(false, postgres)
            _ = try? run(["psql", postgres.base, "-qAtc", "DROP DATABASE IF EXISTS \(postgres.database) WITH (FORCE)"])
        }
    }

    /// The SQLite store on an 8 MiB tmpfs, filled while registrations stream.
    func testAFullDiskUnderSQLiteHoldsEveryEventUntilThereIsRoomAgain() async throws {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("store-tmpfs-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        guard try run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mountPoint.path]) == 0 else {
            try? FileManager.default.removeItem(at: mountPoint)
            throw XCTSkip("cannot mount a tmpfs here (scripts/test runs as root, where it can)")
        }
        self.mountPoint = mountPoint
        let harness = try await NotifierHarness(store: .sqlite(path: mountPoint.appendingPathComponent("notifier.db").path))
        self.harness = harness
        var acknowledged: Set<String> = [try await harness.register(grade: 1, classNumber: 1, number: 1)]
        try await assertEqualAsync(await harness.waitForList(equalTo: acknowledged), acknowledged)

        let filler = mountPoint.appendingPathComponent("filler")
        try fill(filler)
        let notifier = try XCTUnwrap(harness.notifier)
        let filled = ContinuousClock.now
        var failingSince: ContinuousClock.Instant?
        var notReadyAfter: Duration?
        // Registrations stream in until the store has refused writes for
        // a while (bounded: 400 of them, or 60 s).
        for index in 0..<400 where ContinuousClock.now - filled < .seconds(60) {
            let seat = [(1, 1, 2), (1, 2, 1), (1, 2, 2), (2, 1, 1)][index % 4]
            acknowledged.insert(try await harness.register(grade: seat.0, classNumber: seat.1, number: seat.2))
            if failingSince == nil && notifier.metrics.value("notifier_store_errors_total") > 0 { failingSince = .now }
            if let failingSince, notReadyAfter == nil, try await fetch("GET", harness.notifierBase + "/readyz").status == 503 {
                notReadyAfter = ContinuousClock.now - failingSince
            }
            if let failingSince, ContinuousClock.now - failingSince > .seconds(3) { break }
        }
        let failedAt = try XCTUnwrap(failingSince, "the store never refused a write: the disk was not full")
        let notReady = try XCTUnwrap(notReadyAfter, "/readyz never answered 503 while writes failed")
        print(
            "StoreOutageTests: SQLite writes failed \(failedAt - filled) after the disk filled; /readyz said 503 \(notReady) after the first failure"
        )
        XCTAssertLessThan(notReady, .seconds(2))

        let ready = try await fetch("GET", harness.notifierBase + "/readyz")
        XCTAssertEqual(ready.status, 503)
        XCTAssertTrue(ready.text.contains("full"), "readiness names the cause: \(ready.text)")
        let run = try await harness.runDigests()
        XCTAssertEqual(run.status, 503, run.text)
        XCTAssertNotNil(run.header("Retry-After"))
        let list = try await harness.list()
        XCTAssertEqual(list.status, 503, list.text)
        XCTAssertNotNil(list.header("Retry-After"))
        XCTAssertEqual(notifier.metrics.value("notifier_dead_letters_total"), 0, "an acknowledged event was dead-lettered")

        // Room again: everything acknowledged arrives, with no one's help.
        try FileManager.default.removeItem(at: filler)
        let recovered = ContinuousClock.now
        try await assertEqualAsync(await waitForListed(acknowledged, in: harness), acknowledged)
        print(
            "StoreOutageTests: \(acknowledged.count) acknowledged events all listed \(ContinuousClock.now - recovered) after space was freed"
        )
        let readyAgain = try await fetch("GET", harness.notifierBase + "/readyz")
        XCTAssertEqual(readyAgain.status, 200, readyAgain.text)
        XCTAssertEqual(notifier.metrics.value("notifier_dead_letters_total"), 0)
        let runAgain = try await harness.runDigests()
        XCTAssertEqual(runAgain.status, 200, runAgain.text)
    }

    /// PostgreSQL made read-only (`default_transaction_read_only`, sessions
    /// terminated so that new ones take it): `25006` holds the events.
    func testAReadOnlyPostgreSQLHoldsEveryEventUntilItTakesWritesAgain() async throws {
        guard let base = ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"] else {
            throw XCTSkip("TEST_POSTGRES_URL is not set (scripts/test sets it)")
        }
        let database = "outage_\(UUID().uuidString.prefix(8).lowercased())"
        psql(base, "CREATE DATABASE \(database)")
        let url = try XCTUnwrap(
            URLComponents(string: base).map { components in
                var copy = components
                copy.path = "/" + database
                return copy.string ?? base
            })
        postgres = (base, database)
        let harness = try await NotifierHarness(store: .postgres(url: url))
        self.harness = harness
        var acknowledged: Set<String> = [try await harness.register(grade: 1, classNumber: 1, number: 1)]
        try await assertEqualAsync(await harness.waitForList(equalTo: acknowledged), acknowledged)

        readOnly(true, (base, database))
        let notifier = try XCTUnwrap(harness.notifier)
        for seat in [(1, 1, 2), (1, 2, 1), (1, 2, 2), (2, 1, 1), (3, 1, 1)] {
            acknowledged.insert(try await harness.register(grade: seat.0, classNumber: seat.1, number: seat.2))
        }
        let ready = try await eventually(within: .seconds(10)) {
            try await fetch("GET", harness.notifierBase + "/readyz")
        } until: {
            $0.status == 503
        }
        XCTAssertEqual(ready.status, 503, ready.text)
        XCTAssertTrue(ready.text.contains("25006"), "readiness names the cause: \(ready.text)")
        let run = try await harness.runDigests()
        XCTAssertEqual(run.status, 503, run.text)
        XCTAssertEqual(notifier.metrics.value("notifier_dead_letters_total"), 0, "an acknowledged event was dead-lettered")

        readOnly(false, (base, database))
        try await assertEqualAsync(await waitForListed(acknowledged, in: harness), acknowledged)
        XCTAssertEqual(notifier.metrics.value("notifier_dead_letters_total"), 0)
        let readyAgain = try await waitForReady(harness)
        XCTAssertEqual(readyAgain.status, 200, readyAgain.text)
    }

    /// `/readyz` polled until it answers 200 (20 s): sessions the test
    /// terminated come back one by one (a reconnect that raced the
    /// termination is tried again 5 s later).
    private func waitForReady(_ harness: NotifierHarness) async throws -> Reply {
        try await eventually {
            try await fetch("GET", harness.notifierBase + "/readyz")
        } until: {
            $0.status == 200
        }
    }

    /// The list once it answers again, polled until it holds `expected` (60 s).
    private func waitForListed(_ expected: Set<String>, in harness: NotifierHarness) async throws -> Set<String> {
        try await eventually(within: .seconds(60)) {
            let reply = try await harness.list()
            guard reply.status == 200, case .array(let items) = reply.object["items"] else { return [] }
            return Set(items.compactMap { $0["guidanceId"]?.string })
        } until: {
            $0 == expected
        }
    }

    /// Writes 4 KiB blocks until the file system has no room left.
    private func fill(_ file: URL) throws {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        let block = Data(repeating: 0x5a, count: 4096)
        while (try? handle.write(contentsOf: block)) != nil {}
    }

    /// Run from the server's own database: a read-only one cannot alter itself back.
    private func readOnly(_ on: Bool, _ postgres: (base: String, database: String)) {
        psql(postgres.base, "ALTER DATABASE \(postgres.database) SET default_transaction_read_only = \(on ? "on" : "off")")
        psql(
            postgres.base,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(postgres.database)' AND pid <> pg_backend_pid()")
    }

    private func psql(_ url: String, _ sql: String) {
        XCTAssertEqual(try run(["psql", url, "-qAtc", sql]), 0, sql)
    }

    private func run(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
