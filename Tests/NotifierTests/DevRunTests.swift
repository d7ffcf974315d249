import Foundation
import TestSupport
import XCTest

/// `guidance-dev` as a newcomer runs it: the store (and `var/mail/`) starts
/// fresh with the in-memory cluster, and a second instance in the same folder refuses to
/// share (and reset) the first one's state.
final class DevRunTests: XCTestCase {
    let root = repositoryRoot

    /// Starts guidance-dev in `folder`; its services bind ports of their
    /// own choosing (0), which it prints (`port(of:in:)`), so no other
    /// process can take a port between a test choosing it and a bind.
    private func start(in folder: URL, log: URL) throws -> Process {
        let binary = root.appendingPathComponent(".build/debug/guidance-dev")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw XCTSkip("build guidance-dev first (swift build)") }
        let process = Process()
        process.executableURL = binary
        process.currentDirectoryURL = folder
        process.environment = [
            "ROSTER_DIR": root.appendingPathComponent("examples/roster").path, "LOG_LEVEL": "warning",
            "INGEST_PORT": "0", "NOTIFIER_PORT": "0"
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

        let first = try start(in: folder, log: folder.appendingPathComponent("first.log"))
        defer {
            if first.isRunning {
                first.interrupt()
                first.waitUntilExit()
            }
        }
        let ready =
            try await eventually(within: .seconds(60), every: .milliseconds(200)) {
                guard first.isRunning else { return true }
                let log = (try? String(contentsOf: folder.appendingPathComponent("first.log"), encoding: .utf8)) ?? ""
                guard let port = self.port(of: "guidance-notifier", in: log) else { return false }
                return (try? await fetch("GET", "http://127.0.0.1:\(port)/readyz").status) == 200
            } && first.isRunning
        let firstLog = (try? String(contentsOf: folder.appendingPathComponent("first.log"), encoding: .utf8)) ?? ""
        XCTAssertTrue(ready, "guidance-dev did not come up on the old folder:\n\(firstLog.suffix(1500))")
        XCTAssertTrue(firstLog.contains("starts empty on every run"), firstLog.suffix(1500).description)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: folder.appendingPathComponent("var/mail/old.eml").path),
            "var/mail starts empty with the store")
        // E-mails hold live sign-in links and the store students' names: the user's alone.
        for (path, mode) in [("var", 0o700), ("var/mail", 0o700), ("var/guidance-dev.db", 0o600), ("var/guidance-dev.lock", 0o600)] {
            let attributes = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(path).path)
            XCTAssertEqual((attributes[.posixPermissions] as? Int).map { String($0, radix: 8) }, String(mode, radix: 8), path)
        }

        let second = try start(in: folder, log: folder.appendingPathComponent("second.log"))
        _ = try await eventually(within: .seconds(30)) { !second.isRunning }
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

    /// The port `service` listens on, as guidance-dev printed it.
    private func port(of service: String, in log: String) -> Int? {
        guard let line = log.split(separator: "\n").first(where: { $0.hasPrefix("\(service) ") || $0.contains(" \(service) ") }),
            let range = line.range(of: #"127\.0\.0\.1:[0-9]+"#, options: .regularExpression)
        else { return nil }
        return Int(line[range].dropFirst("127.0.0.1:".count))
    }
}
