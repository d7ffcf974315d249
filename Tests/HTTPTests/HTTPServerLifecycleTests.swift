import Common
import XCTest

@testable import HTTP

/// The server's lifecycle transitions, without a socket.
final class HTTPServerLifecycleTests: XCTestCase {
    private let daemon = HTTPServer.Lifecycle.Daemon(
        pointer: OpaquePointer(bitPattern: 0x1000)!, reaper: Loop("reaper", every: .seconds(1), wokenBy: "never started") {})

    func testShutdownDrainsTheDaemonOnceAndOnlyAfterItStarted() {
        var lifecycle = HTTPServer.Lifecycle()
        XCTAssertFalse(lifecycle.serving)
        XCTAssertNil(lifecycle.shutdown(), "nothing to drain before start")
        XCTAssertNil(lifecycle.abandonedDaemon)

        lifecycle.started(daemon)
        XCTAssertTrue(lifecycle.serving)
        XCTAssertEqual(lifecycle.abandonedDaemon?.pointer, daemon.pointer, "released while serving, the daemon is stopped in deinit")

        XCTAssertEqual(lifecycle.shutdown()?.pointer, daemon.pointer)
        XCTAssertFalse(lifecycle.serving, "draining: new requests are answered 503")
        XCTAssertNil(lifecycle.shutdown(), "a second shutdown does nothing")

        lifecycle.finished()
        XCTAssertFalse(lifecycle.serving)
        XCTAssertNil(lifecycle.abandonedDaemon, "stopped: nothing left to stop")
        XCTAssertNil(lifecycle.shutdown())
    }
}

/// An outage is two lines in the log, not one per 503.
final class UnavailabilityTests: XCTestCase {
    func testARouteAnswering503IsNotedWhenItBeginsAndWhenItEnds() {
        var routes = Unavailability()
        var changes: [Unavailability.Change?] = []
        // A readiness probe polled 40 times through start-up, then ready.
        for _ in 1...40 { changes.append(routes.answered(503, on: "/readyz")) }
        changes.append(routes.answered(200, on: "/readyz"))
        changes.append(routes.answered(200, on: "/readyz"))
        XCTAssertEqual(changes.compactMap { $0 }, [.began, .ended(count: 40)])
        // Two routes in one outage, each its own pair; a 404 meanwhile changes nothing.
        XCTAssertEqual(routes.answered(503, on: "/v1/a"), .began)
        XCTAssertEqual(routes.answered(503, on: "/v1/b"), .began)
        XCTAssertNil(routes.answered(404, on: "/v1/c"))
        XCTAssertNil(routes.answered(503, on: "/v1/a"))
        XCTAssertEqual(routes.answered(422, on: "/v1/a"), .ended(count: 2))
        XCTAssertEqual(routes.answered(200, on: "/v1/b"), .ended(count: 1))
    }
}
