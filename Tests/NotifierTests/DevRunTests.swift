import Foundation
import TestSupport
import XCTest

/// `guidance-dev` as a newcomer runs it: the store (and `var/mail/`) starts
/// fresh with the in-memory cluster, and a second instance in the same folder refuses to
/// share (and reset) the first one's state.
final class DevRunTests: XCTestCase {
    let root = repositoryRoot

    private func start(in folder: URL, ports: (Int, Int), log: URL) throws -> Process {
        let binary = root.appendingPathComponent(".build/debug/guidance-dev")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw XCTSkip("build guidance-dev first (swift build)") }
        let process = Process()
        process.executableURL = binary
        process.currentDirectoryURL = folder
        process.environment = [
            "ROSTER_DIR": root.appendingPathComponent("examples/roster").path, "LOG_LEVEL": "warning",
            "INGEST_PORT": String(ports.0), "NOTIFIER_PORT": String(ports.1),
        ]
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    func testTheStoreStartsFreshAndASecondInstanceRefuses() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dev-\(UUID())")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("var"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // What a previous run with an old cluster left behind; not a database at all.
        try Data("left over from another run".utf8).write(to: folder.appendingPathComponent("var/guidance-dev.db"))
        // And an e-mail of that run, naming students of the store that goes.
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("var/mail"), withIntermediateDirectories: true)
        try Data("Subject: old".utf8).write(to: folder.appendingPathComponent("var/mail/old.eml"))

        let ports = (try freePort(), try freePort())
        let first = try start(in: folder, ports: ports, log: folder.appendingPathComponent("first.log"))
        defer { if first.isRunning { first.interrupt(); first.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(60)
        var ready = false
        while !ready && Date() < deadline && first.isRunning {
            ready = (try? await fetch("GET", "http://127.0.0.1:\(ports.1)/readyz").status) == 200
            if !ready { try await Task.sleep(for: .milliseconds(200)) }
        }
        let firstLog = (try? String(contentsOf: folder.appendingPathComponent("first.log"), encoding: .utf8)) ?? ""
        XCTAssertTrue(ready, "guidance-dev did not come up on the old folder:\n\(firstLog.suffix(1500))")
        XCTAssertTrue(firstLog.contains("starts empty on every run"), firstLog.suffix(1500).description)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent("var/mail/old.eml").path), "var/mail starts empty with the store")

        let second = try start(in: folder, ports: (try freePort(), try freePort()), log: folder.appendingPathComponent("second.log"))
        let refusal = Date().addingTimeInterval(30)
        while second.isRunning && Date() < refusal { try await Task.sleep(for: .milliseconds(100)) }
        if second.isRunning {
            second.interrupt()
            second.waitUntilExit()
            XCTFail("a second guidance-dev started in the same folder")
        }
        let secondLog = (try? String(contentsOf: folder.appendingPathComponent("second.log"), encoding: .utf8)) ?? ""
        XCTAssertNotEqual(second.terminationStatus, 0)
        XCTAssertTrue(secondLog.contains("another guidance-dev runs from this folder"), secondLog.suffix(1500).description)
        XCTAssertTrue(first.isRunning, "the second instance stopped the first")
    }
}
