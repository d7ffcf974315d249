import Foundation
import Guidance
import XCTest

@testable import Store

/// Other processes open the SQLite store while the service runs: a backup,
/// the `sqlite3` shell, `guidance-admin purge`. Each opens the file and
/// closes it again, and none may take the service's commits with it: what
/// the store committed is in the file under its name, as a service killed
/// with SIGKILL would find it at its next start (docs/pitfalls.md, POSIX locks).
final class OutsideProcessTests: XCTestCase {
    /// Debian's Python, whose `sqlite3` is the system SQLite the store uses.
    static let python = "/usr/bin/python3"

    /// Opens the store in another process, does `action` there (a read, a
    /// backup into `argument`, a write of its own) and closes it; returns the
    /// registrations that process saw.
    func outside(_ path: String, _ action: String, _ argument: String = "") throws -> Int {
        let script = """
            import sqlite3, sys
            path, action, argument = sys.argv[1:4]
            c = sqlite3.connect(path, timeout=10)
            if action == "backup":
                copy = sqlite3.connect(argument)
                c.backup(copy)
                copy.close()
            elif action == "write":
                c.execute("PRAGMA user_version = 0")
                c.commit()
            print(c.execute("SELECT COUNT(*) FROM guidances WHERE registered = 1").fetchone()[0])
            c.close()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: OutsideProcessTests.python)
        process.arguments = ["-c", script, path, action, argument]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "python3 \(action)")
        return try XCTUnwrap(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), "python3 \(action) printed \(text)")
    }

    func testWhatTheStoreCommittedStaysInTheFileWhileOtherProcessesOpenAndCloseIt() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: OutsideProcessTests.python), "needs Debian's python3")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("outside-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("notifier.db").path
        let suite = StoreSuite(makeStore: { try SQLStore.sqlite(path: path, clock: Timestamp.now) })
        let store = try SQLStore.sqlite(path: path, clock: Timestamp.now)
        // A store opened again (a restart beside a running one, the purge's own
        // connections) must not undo the first one's hold on the file either.
        _ = try SQLStore.sqlite(path: path, clock: Timestamp.now)

        var committed = 0
        func register(_ count: Int) throws {
            _ = try store.apply((0..<count).map { .registered(suite.record("g\(committed + $0)", number: committed + $0)) })
            committed += count
        }
        try register(1)
        XCTAssertEqual(try outside(path, "read"), committed, "a reader sees the first commit")
        for (index, action) in ["read", "backup", "write", "read"].enumerated() {
            try register(10)
            let copy = folder.appendingPathComponent("backup-\(index).db").path
            XCTAssertEqual(try outside(path, action, copy), committed, "after a \(action) by another process, it sees every commit")
        }
        try register(5)
        XCTAssertEqual(try outside(path, "read"), committed, "the last commits are in the file too")
        XCTAssertEqual(try store.guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil).count, committed)
    }
}
