import Foundation
import XCTest

/// The repository's root, for scripts and binaries.
package let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A port nobody listens on now, for a counterpart that must keep its port
/// across restarts (prefer binding port 0 where a process can report its
/// port). Chosen outside the kernel's ephemeral range, which the kernel
/// hands to every outgoing connection: a port from bind(0) comes from that
/// range and is the likeliest to be taken by one before the bind.
package func freePort() throws -> Int {
    var range = (low: 32768, high: 60999)
    if let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) {
        let bounds = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        if bounds.count == 2 { range = (bounds[0], bounds[1]) }
    }
    let candidates = (20000..<32768).filter { $0 < range.low || $0 > range.high }
    for _ in 0..<200 {
        let port = candidates.randomElement() ?? Int.random(in: (range.high + 1)...65535)
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        if withIPv4("127.0.0.1", port: port, { Glibc.bind(socket, $0, $1) }) == 0 { return port }
    }
    throw CounterpartError("no free port found")
}

/// A real server a test talks to (the SMTP sink, the webhook receiver of
/// `scripts/testing`), run as a process on a fixed port so that it can be
/// stopped and started again. It appends one JSON line per thing it received.
package final class Counterpart: @unchecked Sendable {
    package let port: Int
    package let log: URL
    private let interpreter: String
    private let script: String
    private var process: Process?

    /// `interpreter` runs `scripts/testing/<script>` with `--port`, `--log` and `arguments`.
    package init(interpreter: String, script: String, port: Int? = nil) throws {
        self.interpreter = interpreter
        self.script = script
        self.port = try port ?? freePort()
        log = FileManager.default.temporaryDirectory.appendingPathComponent("\(script)-\(UUID()).jsonl")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else { throw CounterpartError("cannot create \(log.path)") }
    }

    /// Starts it and waits until its port accepts connections.
    package func start(_ arguments: [String] = []) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: interpreter)
        process.arguments =
            [repositoryRoot.appendingPathComponent("scripts/testing/\(script)").path, "--port", String(port), "--log", log.path] + arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if accepts() { return }
            guard process.isRunning else { throw CounterpartError("\(script) exited with \(process.terminationStatus)") }
            // A real process starting: nothing says when it listens.
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw CounterpartError("\(script) did not listen on \(port) within 15 s")
    }

    package func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: log)
    }

    /// Every line logged so far, as JSON objects.
    package var records: [[String: Any]] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Polls `records` until `done` holds, or `timeout` passes.
    package func waitFor(_ timeout: TimeInterval = 30, _ done: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        try await eventually(within: .seconds(timeout), every: .milliseconds(100)) {
            self.records
        } until: {
            done($0)
        }
    }

    private func accepts() -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        return withIPv4("127.0.0.1", port: port) { connect(socket, $0, $1) } == 0
    }
}

package struct CounterpartError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
