import Common

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

extension Metrics {
    /// Counts requests by route, method and status and times them by route.
    package func recordHTTP(_ record: RequestRecord) {
        increment(
            "http_requests_total", help: "HTTP requests by route, method and status.",
            labels: [("route", record.route), ("method", record.method), ("status", String(record.status))])
        observe(
            "http_request_duration_seconds", help: "Time from the request's first byte to its completion.",
            labels: [("route", record.route)], value: record.duration.seconds)
    }
}
