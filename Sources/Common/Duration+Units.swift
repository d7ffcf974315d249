/// A `Duration` in the units C libraries and logs take: written once.
extension Duration {
    /// Seconds as a floating-point number (timers, logs, metrics).
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole milliseconds, rounded down (librdkafka, libpq's poll, libcurl).
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

extension Duration {
    /// As people write it in docs and logs: "200 ms", "15 s", "10 min".
    package var described: String {
        let ms = milliseconds
        if ms % 60_000 == 0 && ms >= 60_000 { return "\(ms / 60_000) min" }
        if ms % 1000 == 0 && ms > 0 { return "\(ms / 1000) s" }
        return "\(ms) ms"
    }
}
