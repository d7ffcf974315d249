import Foundation
import Synchronization

/// A structured logger writing one JSON object per line to standard error.
///
/// Lines carry a UTC timestamp, the level, the component and any metadata, so
/// that a 7:50 Monday incident can be grepped by request id or partition.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public init?(name: String) {
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

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public let component: String
    public let minimumLevel: Level
    private let metadata: [String: String]

    public init(component: String, level: Level = Logger.defaultLevel, metadata: [String: String] = [:]) {
        self.component = component
        self.minimumLevel = level
        self.metadata = metadata
    }

    /// The level from `LOG_LEVEL`, or `info`. Validation of the variable happens
    /// in each service's configuration; here an unknown value falls back to info.
    public static var defaultLevel: Level {
        ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Level.init(name:)) ?? .info
    }

    /// A logger whose lines all carry `extra` as well.
    public func with(_ extra: [String: String]) -> Logger {
        Logger(component: component, level: minimumLevel, metadata: metadata.merging(extra) { $1 })
    }

    public func isEnabled(_ level: Level) -> Bool { level >= minimumLevel }

    public func debug(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.debug, message(), extra)
    }
    public func info(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.info, message(), extra)
    }
    public func warning(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.warning, message(), extra)
    }
    public func error(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        log(.error, message(), extra)
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        guard isEnabled(level) else { return }
        var fields = metadata.merging(extra) { $1 }
        fields["ts"] = Logger.timestamp()
        fields["level"] = level.name
        fields["component"] = component
        fields["msg"] = message()
        var line: [UInt8] = [UInt8(ascii: "{")]
        for (index, key) in fields.keys.sorted(by: Logger.fieldOrder).enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            JSONWriter.append(quoted: key, to: &line)
            line.append(UInt8(ascii: ":"))
            JSONWriter.append(quoted: fields[key]!, to: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        Logger.output.withLock { _ in
            FileHandle.standardError.write(Data(line))
        }
    }

    private static let output = Mutex(())
    private static let leading = ["ts", "level", "component", "msg"]

    private static func fieldOrder(_ a: String, _ b: String) -> Bool {
        let ia = leading.firstIndex(of: a) ?? leading.count
        let ib = leading.firstIndex(of: b) ?? leading.count
        return ia != ib ? ia < ib : a < b
    }

    private static func timestamp() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(spec.tv_nsec / 1_000_000))
    }
}
