import Foundation
import Synchronization

/// A small Prometheus registry: counters, histograms, and gauges read at
/// scrape time. Rendered in the text exposition format for `GET /metrics`.
package final class Metrics: Sendable {
    package typealias Labels = [(String, String)]

    fileprivate enum Kind: String { case counter, histogram }

    fileprivate struct Family {
        let help: String
        let kind: Kind
        /// Histogram only: the upper bounds of its buckets.
        var bounds: [Double] = []
        var series: [String: Series] = [:]

        /// The series of `key`, made on first use.
        mutating func series(_ key: String) -> Series {
            if let found = series[key] { return found }
            let made = Series(State(buckets: Array(repeating: 0, count: bounds.count)), bounds: bounds)
            series[key] = made
            return made
        }
    }

    fileprivate struct State {
        var value: Double = 0
        /// Histogram only: cumulative counts per bucket, then sum and count.
        var buckets: [Double] = []
        var sum: Double = 0
        var count: Double = 0
    }

    /// One series: a counter or a histogram with its labels. What is counted
    /// on every request keeps its series and updates it under the series'
    /// own lock, without the registry's lock, a key or a look-up.
    package final class Series: Sendable {
        private let state: Mutex<State>
        private let bounds: [Double]

        fileprivate init(_ state: State, bounds: [Double]) {
            self.state = Mutex(state)
            self.bounds = bounds
        }

        package func increment(by amount: Double = 1) {
            state.withLock { $0.value += amount }
        }

        package func observe(_ value: Double) {
            observe(CollectionOfOne(value))
        }

        /// Several observations under one lock.
        package func observe(_ values: some Collection<Double>) {
            let bounds = self.bounds
            state.withLock { state in
                for value in values {
                    for (index, bound) in bounds.enumerated() where value <= bound {
                        state.buckets[index] += 1
                    }
                    state.sum += value
                    state.count += 1
                }
            }
        }

        fileprivate var snapshot: State { state.withLock { $0 } }
    }

    package static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10
    ]

    private let families = Mutex<[String: Family]>([:])
    private let gauges = Mutex<[(name: String, help: String, read: @Sendable () -> [(Labels, Double)])]>([])
    private let buckets: [Double]

    package init(buckets: [Double] = Metrics.latencyBuckets) {
        self.buckets = buckets
    }

    /// The counter `name` with `labels`, to keep and increment.
    package func counter(_ name: String, help: String, labels: Labels = []) -> Series {
        let key = Metrics.render(labels)
        return families.withLock { families in
            families[name, default: Family(help: help, kind: .counter)].series(key)
        }
    }

    /// The histogram `name` with `labels`, to keep and observe; `buckets`
    /// (the registry's latency buckets when nil) are fixed by the family's
    /// first series.
    package func histogram(_ name: String, help: String, labels: Labels = [], buckets: [Double]? = nil) -> Series {
        let key = Metrics.render(labels)
        let bounds = buckets ?? self.buckets
        return families.withLock { families in
            families[name, default: Family(help: help, kind: .histogram, bounds: bounds)].series(key)
        }
    }

    package func increment(_ name: String, help: String, labels: Labels = [], by amount: Double = 1) {
        counter(name, help: help, labels: labels).increment(by: amount)
    }

    /// One observation; `buckets` (the registry's latency buckets when nil)
    /// are fixed by a family's first observation.
    package func observe(_ name: String, help: String, labels: Labels = [], value: Double, buckets: [Double]? = nil) {
        histogram(name, help: help, labels: labels, buckets: buckets).observe(value)
    }

    /// Several observations of one series under one lock.
    package func observe(_ name: String, help: String, labels: Labels = [], values: some Collection<Double>, buckets: [Double]? = nil) {
        histogram(name, help: help, labels: labels, buckets: buckets).observe(values)
    }

    /// A gauge whose values are read when scraped.
    package func gauge(_ name: String, help: String, read: @escaping @Sendable () -> [(Labels, Double)]) {
        gauges.withLock { $0.append((name, help, read)) }
    }

    /// The current value of one counter series, for tests and logs.
    package func value(_ name: String, labels: Labels = []) -> Double {
        families.withLock { $0[name]?.series[Metrics.render(labels)] }?.snapshot.value ?? 0
    }

    package func render() -> String {
        var out = ""
        let snapshot = families.withLock { $0 }
        for (name, family) in snapshot.sorted(by: { $0.key < $1.key }) {
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            for (key, series) in family.series.sorted(by: { $0.key < $1.key }).map({ ($0.key, $0.value.snapshot) }) {
                switch family.kind {
                case .counter:
                    out += "\(name)\(Metrics.braces(key)) \(Metrics.number(series.value))\n"
                case .histogram:
                    for (index, bound) in family.bounds.enumerated() {
                        out +=
                            "\(name)_bucket\(Metrics.braces(Metrics.join(key, "le=\"\(Metrics.number(bound))\""))) \(Metrics.number(series.buckets[index]))\n"
                    }
                    out += "\(name)_bucket\(Metrics.braces(Metrics.join(key, "le=\"+Inf\""))) \(Metrics.number(series.count))\n"
                    out += "\(name)_sum\(Metrics.braces(key)) \(series.sum)\n"
                    out += "\(name)_count\(Metrics.braces(key)) \(Metrics.number(series.count))\n"
                }
            }
        }
        for gauge in gauges.withLock({ $0 }) {
            out += "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) gauge\n"
            for (labels, value) in gauge.read() {
                out += "\(gauge.name)\(Metrics.braces(Metrics.render(labels))) \(Metrics.number(value))\n"
            }
        }
        return out
    }

    /// `name="value",…`, the series' key: built in one string, since every
    /// request's metrics render theirs.
    private static func render(_ labels: Labels) -> String {
        var key = ""
        key.reserveCapacity(labels.count * 24)
        for (index, (name, value)) in labels.enumerated() {
            if index > 0 { key += "," }
            key += name
            key += "=\""
            key += escape(value)
            key += "\""
        }
        return key
    }

    private static func join(_ a: String, _ b: String) -> String { a.isEmpty ? b : a + "," + b }
    private static func braces(_ key: String) -> String { key.isEmpty ? "" : "{\(key)}" }

    /// Label values are escaped on every increment, so the common case (no
    /// backslash, quote or newline) returns the value untouched.
    private static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") }) else {
            return value
        }
        var escaped = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
