import Common
import HTTP
import XCTest

final class MetricsTests: XCTestCase {
    func testCountersAndHistogramsRenderInPrometheusTextWithEscapedLabels() {
        let metrics = Metrics(buckets: [0.01, 0.1])
        metrics.increment("requests_total", help: "Requests.", labels: [("route", "/a")])
        metrics.increment("requests_total", help: "Requests.", labels: [("route", "/a")], by: 2)
        metrics.increment("requests_total", help: "Requests.", labels: [("route", "say \"hi\"\\\nbye")])
        for value in [0.005, 0.05, 0.5] {
            metrics.observe("latency_seconds", help: "Latency.", labels: [("route", "/a")], value: value)
        }
        metrics.observe("latency_seconds", help: "Latency.", labels: [("route", "/b")], values: [0.001, 0.002])

        XCTAssertEqual(metrics.value("requests_total", labels: [("route", "/a")]), 3)
        let text = metrics.render()
        for line in [
            "# TYPE requests_total counter",
            "requests_total{route=\"/a\"} 3",
            "requests_total{route=\"say \\\"hi\\\"\\\\\\nbye\"} 1",
            "# TYPE latency_seconds histogram",
            "latency_seconds_bucket{route=\"/a\",le=\"0.01\"} 1",
            "latency_seconds_bucket{route=\"/a\",le=\"0.1\"} 2",
            "latency_seconds_bucket{route=\"/a\",le=\"+Inf\"} 3",
            "latency_seconds_sum{route=\"/a\"} 0.555",
            "latency_seconds_count{route=\"/a\"} 3",
            "latency_seconds_bucket{route=\"/b\",le=\"0.01\"} 2",
            "latency_seconds_count{route=\"/b\"} 2"
        ] {
            XCTAssertTrue(text.split(separator: "\n").contains(Substring(line)), "missing line: \(line)\n\(text)")
        }
    }

    func testRequestsAreCountedByRouteMethodAndStatusAndTimedByRoute() {
        let metrics = Metrics(buckets: [0.01, 0.1])
        let http = HTTPMetrics(metrics)
        for _ in 0..<3 { http.record(RequestRecord(method: "POST", route: "/v1/a", status: 202, duration: .milliseconds(5))) }
        http.record(RequestRecord(method: "POST", route: "/v1/a", status: 400, duration: .milliseconds(50)))
        http.record(RequestRecord(method: "BREW", route: "unmatched", status: 405, duration: .milliseconds(1)))
        http.record(RequestRecord(method: "COFFEE", route: "unmatched", status: 405, duration: .milliseconds(1)))
        let lines = metrics.render().split(separator: "\n")
        for line in [
            #"http_requests_total{route="/v1/a",method="POST",status="202"} 3"#,
            #"http_requests_total{route="/v1/a",method="POST",status="400"} 1"#,
            #"http_requests_total{route="unmatched",method="other",status="405"} 2"#,
            #"http_request_duration_seconds_bucket{route="/v1/a",le="0.01"} 3"#,
            #"http_request_duration_seconds_count{route="/v1/a"} 4"#
        ] {
            XCTAssertTrue(lines.contains(Substring(line)), "missing line: \(line)\n\(lines.joined(separator: "\n"))")
        }
        XCTAssertFalse(lines.contains { $0.contains("BREW") || $0.contains("COFFEE") }, "a client's made-up method is not a series")
    }
}
