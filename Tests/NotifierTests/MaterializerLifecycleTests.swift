@testable import Notifier
import XCTest

/// The materializer's lifecycle transitions, without a broker.
final class MaterializerLifecycleTests: XCTestCase {
    func testStopWaitsOnlyForAThreadThatRuns() {
        var neverStarted = Materializer.Lifecycle()
        XCTAssertFalse(neverStarted.stop(), "stop before start has no thread to wait for")
        XCTAssertEqual(neverStarted.state, .stopped)
        XCTAssertFalse(neverStarted.start(), "a stopped materializer does not start")

        var lifecycle = Materializer.Lifecycle()
        XCTAssertTrue(lifecycle.start())
        XCTAssertFalse(lifecycle.start(), "one consuming thread")
        XCTAssertEqual(lifecycle.state, .running)
        XCTAssertTrue(lifecycle.stop(), "the first stop waits for the thread")
        XCTAssertEqual(lifecycle.state, .stopping)
        XCTAssertFalse(lifecycle.stop(), "a second stop does not")
        lifecycle.threadFinished()
        XCTAssertEqual(lifecycle.state, .stopped)
        XCTAssertFalse(lifecycle.stop())
    }
}
