import XCTest

@testable import Notifier

final class SlowJoinTests: XCTestCase {
    /// Reported after 20 s without a member id and then every 20 s, never
    /// while joined (with or without partitions); leaving the group later
    /// starts a fresh wait.
    func testAWaitToJoinIsReportedEveryTwentySeconds() {
        var join = SlowJoin()
        let start = Duration.seconds(1000)
        XCTAssertFalse(join.isSlow(joined: false, now: start))
        XCTAssertFalse(join.isSlow(joined: false, now: start + .seconds(19)))
        XCTAssertTrue(join.isSlow(joined: false, now: start + .seconds(20)))
        XCTAssertFalse(join.isSlow(joined: false, now: start + .seconds(30)))
        XCTAssertTrue(join.isSlow(joined: false, now: start + .seconds(40)))
        XCTAssertFalse(join.isSlow(joined: true, now: start + .seconds(41)))
        XCTAssertFalse(join.isSlow(joined: true, now: start + .seconds(100)))
        XCTAssertFalse(join.isSlow(joined: false, now: start + .seconds(101)))
        XCTAssertFalse(join.isSlow(joined: false, now: start + .seconds(120)))
        XCTAssertTrue(join.isSlow(joined: false, now: start + .seconds(121)))
    }
}
