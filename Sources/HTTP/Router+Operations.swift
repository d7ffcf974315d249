import Common
import Synchronization

extension Router {
    /// `/healthz` (the process serves), `/readyz` (its dependencies answer) and
    /// `/metrics` (Prometheus text), as every service exposes them.
    package mutating func addOperationalRoutes(metrics: Metrics, ready: @escaping @Sendable () async -> (Bool, String)) {
        get("/healthz") { _ in .json(["status": "ok"]) }
        get("/readyz") { _ in
            let (isReady, detail) = await ready()
            return .json(["status": isReady ? "ready" : "not ready", "detail": detail], status: isReady ? 200 : 503)
        }
        get("/metrics") { _ in
            .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }
}

/// Counts requests by route, method and status and times them by route.
/// Each combination's series are found once and kept, so a request costs
/// one look-up of three values, not two label lists, keys and registry
/// look-ups under the registry's lock.
package final class HTTPMetrics: Sendable {
    private struct Key: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private static let methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
    private let metrics: Metrics
    private let series = Mutex<[Key: (count: Metrics.Series, duration: Metrics.Series)]>([:])

    package init(_ metrics: Metrics) {
        self.metrics = metrics
    }

    package func record(_ record: RequestRecord) {
        // A client may send any token as a method; each would be a series kept for ever.
        let method = HTTPMetrics.methods.contains(record.method) ? record.method : "other"
        let key = Key(route: record.route, method: method, status: record.status)
        let found = series.withLock { $0[key] } ?? made(key)
        found.count.increment()
        found.duration.observe(record.duration.seconds)
    }

    private func made(_ key: Key) -> (count: Metrics.Series, duration: Metrics.Series) {
        let made = (
            count: metrics.counter(
                "http_requests_total", help: "HTTP requests by route, method and status.",
                labels: [("route", key.route), ("method", key.method), ("status", String(key.status))]),
            duration: metrics.histogram(
                "http_request_duration_seconds", help: "Time from the request's first byte to its completion.",
                labels: [("route", key.route)])
        )
        series.withLock { $0[key] = made }
        return made
    }
}
