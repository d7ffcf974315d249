import Foundation

/// A setting that could not be used; the message names the variable so that a
/// bad deployment fails at launch with something an operator can act on.
package struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    package let variable: String
    package let reason: String

    package init(variable: String, reason: String) {
        self.variable = variable
        self.reason = reason
    }

    package var description: String { "\(variable): \(reason)" }
}

/// Typed reads of environment variables, each failing with the variable's name.
package struct Environment: Sendable {
    package let values: [String: String]
    /// Variables whose value is not UTF-8, byte for byte: Foundation's
    /// strings replace such bytes, and a secret (a password) must reach its
    /// library as it was given.
    private let nonUTF8: [String: [UInt8]]

    /// The process's environment.
    package init() {
        var nonUTF8: [String: [UInt8]] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let bytes = Array(
                UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer)))
            if let equals = bytes.firstIndex(of: UInt8(ascii: "=")), String(validating: bytes[(equals + 1)...], as: UTF8.self) == nil {
                nonUTF8[String(decoding: bytes[..<equals], as: UTF8.self)] = Array(bytes[(equals + 1)...])
            }
            entry += 1
        }
        self.init(ProcessInfo.processInfo.environment, nonUTF8: nonUTF8)
    }

    package init(_ values: [String: String], nonUTF8: [String: [UInt8]] = [:]) {
        self.values = values
        self.nonUTF8 = nonUTF8
    }

    /// A variable's bytes as the process was given them; nil when unset or empty.
    package func bytes(_ name: String) -> [UInt8]? {
        if let raw = nonUTF8[name], !raw.isEmpty { return raw }
        return self[name].map { Array($0.utf8) }
    }

    package subscript(name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    package func string(_ name: String, default fallback: String) -> String {
        self[name] ?? fallback
    }

    package func int(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let text = self[name] else { return fallback }
        guard let value = Int(text.trimmingWhitespace()) else {
            throw ConfigurationError(variable: name, reason: "'\(text)' is not a whole number")
        }
        guard range.contains(value) else {
            throw ConfigurationError(
                variable: name, reason: "\(value) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// A service's public address (`https://gate.school.example`), without a
    /// trailing slash; nil when unset.
    package func publicURL(_ name: String) throws(ConfigurationError) -> String? {
        guard let text = self[name] else { return nil }
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            throw ConfigurationError(variable: name, reason: "'\(text)' is not an http:// or https:// URL")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    package func port(_ name: String, default fallback: Int) throws(ConfigurationError) -> Int {
        try int(name, default: fallback, range: 0...65535)
    }

    package func logLevel() throws(ConfigurationError) -> Logger.Level {
        guard let text = self["LOG_LEVEL"] else { return .info }
        guard let level = Logger.Level(name: text) else {
            throw ConfigurationError(variable: "LOG_LEVEL", reason: "'\(text)' is not one of debug, info, warning, error")
        }
        return level
    }
}
