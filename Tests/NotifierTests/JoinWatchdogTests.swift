@testable import Notifier
import XCTest

final class JoinWatchdogTests: XCTestCase {
    func testRestartsOnlyAConsumerThatStaysOutOfItsGroup() {
        var watchdog = JoinWatchdog(limit: .seconds(20))
        let start = ContinuousClock.now
        XCTAssertFalse(watchdog.shouldRestart(joined: false, now: start))
        XCTAssertFalse(watchdog.shouldRestart(joined: false, now: start + .seconds(19)))
        XCTAssertTrue(watchdog.shouldRestart(joined: false, now: start + .seconds(20)))
        // The replacement gets its own 20 s.
        XCTAssertFalse(watchdog.shouldRestart(joined: false, now: start + .seconds(30)))
        XCTAssertTrue(watchdog.shouldRestart(joined: false, now: start + .seconds(40)))
        // Joined (with or without partitions): never restarted.
        XCTAssertFalse(watchdog.shouldRestart(joined: true, now: start + .seconds(41)))
        XCTAssertFalse(watchdog.shouldRestart(joined: true, now: start + .seconds(100)))
        // Leaving the group later starts a fresh wait.
        XCTAssertFalse(watchdog.shouldRestart(joined: false, now: start + .seconds(101)))
        XCTAssertTrue(watchdog.shouldRestart(joined: false, now: start + .seconds(121)))
    }
}
