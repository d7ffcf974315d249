import Foundation
import Synchronization

/// A structured logger writing one JSON object per line to standard error.
///
/// Lines carry a UTC timestamp, the level, the component and any metadata, so
/// that a 7:50 Monday incident can be grepped by request id or partition.
package struct Logger: Sendable {
    package enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        package init?(name: String) {
            switch name.lowercased() {
            case "debug", "trace": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        package static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    package let component: String
    package let minimumLevel: Level
    private let metadata: [String: String]
    /// `metadata` sorted by key, without the keys every line has: sorted
    /// once here, not for every line.
    private let fields: [(key: String, value: String)]

    /// `level` comes from the service's configuration (`LOG_LEVEL`, validated
    /// there); the logger itself never reads the environment.
    package init(component: String, level: Level = .info, metadata: [String: String] = [:]) {
        self.component = component
        self.minimumLevel = level
        self.metadata = metadata
        fields = Logger.sortedFields(metadata)
    }

    /// One array, sorted in place: `Dictionary.filter` would hash every key
    /// into a new dictionary first, on every line that has fields.
    private static func sortedFields(_ values: [String: String]) -> [(key: String, value: String)] {
        var fields: [(key: String, value: String)] = []
        fields.reserveCapacity(values.count)
        for (key, value) in values where !isLeading(key) { fields.append((key, value)) }
        fields.sort { $0.key < $1.key }
        return fields
    }

    /// The keys every line starts with; a field of that name is dropped.
    private static func isLeading(_ key: String) -> Bool {
        switch key {
        case "ts", "level", "component", "msg": true
        default: false
        }
    }

    /// A logger whose lines all carry `extra` as well.
    package func with(_ extra: [String: String]) -> Logger {
        Logger(component: component, level: minimumLevel, metadata: metadata.merging(extra) { $1 })
    }

    package func isEnabled(_ level: Level) -> Bool { level >= minimumLevel }

    package func debug(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.debug, message(), extra)
    }
    package func info(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.info, message(), extra)
    }
    package func warning(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.warning, message(), extra)
    }
    package func error(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.error, message(), extra)
    }

    package func log(_ level: Level, _ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        guard isEnabled(level) else { return }
        var line: [UInt8] = []
        line.reserveCapacity(256)
        line.append(contentsOf: #"{"ts":""#.utf8)
        Logger.appendTimestamp(to: &line)
        line.append(contentsOf: #"","level":""#.utf8)
        line.append(contentsOf: level.name.utf8)
        line.append(contentsOf: #"","component":"#.utf8)
        JSONWriter.append(quoted: component, to: &line)
        line.append(contentsOf: #","msg":"#.utf8)
        JSONWriter.append(quoted: message(), to: &line)
        // The logger's fields and the line's, both sorted, merged in key
        // order; the line's value wins a key both have.
        let extra = extra.isEmpty ? [] : Logger.sortedFields(extra)
        var (own, given) = (fields[...], extra[...])
        while let next = Logger.next(&own, &given) {
            line.append(UInt8(ascii: ","))
            JSONWriter.append(quoted: next.key, to: &line)
            line.append(UInt8(ascii: ":"))
            JSONWriter.append(quoted: next.value, to: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        LogOutput.shared.write(line, now: level >= .warning)
    }

    /// Writes the lines still waiting for the output's next batch; lines
    /// are also written when the process exits.
    package static func flush() {
        LogOutput.shared.flush()
    }

    /// The field of the lower key of the two lists' heads, taken off its list.
    private static func next(
        _ own: inout ArraySlice<(key: String, value: String)>, _ given: inout ArraySlice<(key: String, value: String)>
    ) -> (key: String, value: String)? {
        switch (own.first, given.first) {
        case (nil, nil): return nil
        case (let mine?, nil): return own.popFirst().map { _ in mine }
        case (nil, let theirs?): return given.popFirst().map { _ in theirs }
        case (let mine?, let theirs?):
            if mine.key < theirs.key { return own.popFirst() }
            if mine.key == theirs.key { own = own.dropFirst() }
            return given.popFirst()
        }
    }

    /// `2026-11-30T07:52:10.123Z`, written digit by digit.
    private static func appendTimestamp(to line: inout [UInt8]) {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                line.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        line.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        line.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        line.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        line.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        line.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        line.append(UInt8(ascii: "."))
        digits(spec.tv_nsec / 1_000_000, 3)
        line.append(UInt8(ascii: "Z"))
    }
}

/// Standard error, written in batches. A line is added to a buffer that a
/// writer thread writes at most `delay` later, in one write(2) with the
/// lines that gathered meanwhile: a write per line cost a system call on
/// every registration, and threads logging at once waited for each other's
/// writes. A warning or an error is written at once, after the lines before
/// it, as is a batch past `limit` (so a stalled reader of standard error
/// holds the loggers back instead of the buffer growing); what waits is
/// written when the process exits. A crash loses at most `delay` of info
/// lines.
fileprivate final class LogOutput: Sendable {
    static let shared = LogOutput()

    private struct Pending {
        var lines: [UInt8] = []
        /// Whether the writer sleeps until the next line.
        var writerIdle = true
    }

    private static let delay: Duration = .milliseconds(2)
    private static let limit = 256 * 1024
    private let pending = Mutex(Pending())
    /// Held while a batch is taken and written, so batches go out in order.
    private let writing = Mutex(())
    private let firstLine = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in writeBatches() }
        thread.name = "log-writer"
        thread.start()
        atexit { LogOutput.shared.flush() }
    }

    func write(_ line: [UInt8], now: Bool) {
        let (wake, full) = pending.withLock { pending in
            pending.lines.append(contentsOf: line)
            let full = pending.lines.count > LogOutput.limit
            // Written here and now: the writer may sleep on.
            let wake = pending.writerIdle && !(now || full)
            if wake { pending.writerIdle = false }
            return (wake, full)
        }
        if now || full {
            flush()
        } else if wake {
            firstLine.signal()
        }
    }

    /// Writes the lines waiting, after the batch being written if one is;
    /// false when none waited (the writer then sleeps until the next line).
    @discardableResult
    func flush() -> Bool {
        writing.withLock { _ in
            var batch: [UInt8] = []
            pending.withLock { pending in
                swap(&batch, &pending.lines)
                pending.lines.reserveCapacity(batch.count)
                if batch.isEmpty { pending.writerIdle = true }
            }
            LogOutput.writeAll(batch)
            return !batch.isEmpty
        }
    }

    private func writeBatches() {
        while true {
            firstLine.wait()
            repeat {
                // A sleep, and meant: the batch gathers lines for 2 ms (a
                // warning does not wait, it flushes from its own thread).
                Thread.sleep(forTimeInterval: LogOutput.delay.seconds)
            } while flush()
        }
    }

    private static func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(2, base + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
        }
    }
}
