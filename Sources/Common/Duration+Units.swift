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
