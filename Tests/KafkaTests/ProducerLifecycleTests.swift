import XCTest

@testable import Kafka

/// The producer client's lifecycle and handle uses, without a broker.
final class ProducerLifecycleTests: XCTestCase {
    func testTheHandleIsDestroyedOnlyOnceNoUseIsInProgress() {
        var lifecycle = ProducerClient.Lifecycle()
        XCTAssertNil(lifecycle.deadline, "a running client does not drain")
        XCTAssertTrue(lifecycle.admit())
        XCTAssertTrue(lifecycle.admit(), "uses run side by side")
        XCTAssertEqual(lifecycle.uses, 2)

        let now = Duration.seconds(100)
        lifecycle.close(deadline: now + .seconds(10))
        XCTAssertEqual(lifecycle.deadline, now + .seconds(10))
        XCTAssertTrue(lifecycle.admit(), "a draining client still takes uses (a send racing the close fails in librdkafka, not here)")
        lifecycle.release()

        XCTAssertFalse(lifecycle.stopAdmitting(), "two uses are in progress")
        XCTAssertEqual(lifecycle.state, .destroying)
        XCTAssertFalse(lifecycle.admit(), "no new use once destroying")
        lifecycle.release()
        XCTAssertFalse(lifecycle.stopAdmitting())
        lifecycle.release()
        XCTAssertTrue(lifecycle.stopAdmitting(), "the last use ended")
        lifecycle.destroyed()
        XCTAssertEqual(lifecycle.state, .destroyed)
        XCTAssertFalse(lifecycle.admit(), "a destroyed handle is never used")
        lifecycle.close(deadline: now)
        XCTAssertEqual(lifecycle.state, .destroyed, "a close after the end changes nothing")
    }

    func testTheEarliestDeadlineWins() {
        let now = Duration.seconds(100)
        var closedThenFatal = ProducerClient.Lifecycle()
        closedThenFatal.close(deadline: now + .seconds(10))
        closedThenFatal.close(deadline: now)
        XCTAssertEqual(closedThenFatal.deadline, now, "a fatal handle stops draining at once")

        var closedTwice = ProducerClient.Lifecycle()
        closedTwice.close(deadline: now + .seconds(1))
        closedTwice.close(deadline: now + .seconds(10))
        XCTAssertEqual(closedTwice.deadline, now + .seconds(1), "a second, longer close does not extend the drain")
    }
}
