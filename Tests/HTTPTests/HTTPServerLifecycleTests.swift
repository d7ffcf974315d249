@testable import HTTP
import XCTest

/// The server's lifecycle transitions, without a socket.
final class HTTPServerLifecycleTests: XCTestCase {
    private let daemon = HTTPServer.Lifecycle.Daemon(pointer: OpaquePointer(bitPattern: 0x1000)!)

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
