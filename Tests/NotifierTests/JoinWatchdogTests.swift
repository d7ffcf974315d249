@testable import Notifier
import XCTest

final class JoinWatchdogTests: XCTestCase {
    func testReplacesOnlyAConsumerThatStaysOutOfItsGroupOnTheMockCluster() {
        var watchdog = JoinWatchdog(limit: .seconds(20))
        let mock = { "mockCluster7f3a" as String? }
        let start = ContinuousClock.now
        XCTAssertEqual(watchdog.check(joined: false, now: start, clusterID: mock), .wait)
        XCTAssertEqual(watchdog.check(joined: false, now: start + .seconds(19), clusterID: mock), .wait)
        XCTAssertEqual(watchdog.check(joined: false, now: start + .seconds(20), clusterID: mock), .replace)
        // The replacement gets its own 20 s.
        XCTAssertEqual(watchdog.check(joined: false, now: start + .seconds(30), clusterID: mock), .wait)
        XCTAssertEqual(watchdog.check(joined: false, now: start + .seconds(40), clusterID: mock), .replace)
        // Joined (with or without partitions): never replaced.
        XCTAssertEqual(watchdog.check(joined: true, now: start + .seconds(41), clusterID: mock), .wait)
        XCTAssertEqual(watchdog.check(joined: true, now: start + .seconds(100), clusterID: mock), .wait)
        // Leaving the group later starts a fresh wait.
        XCTAssertEqual(watchdog.check(joined: false, now: start + .seconds(101), clusterID: mock), .wait)
        XCTAssertEqual(watchdog.check(joined: false, now: start + .seconds(121), clusterID: mock), .replace)
    }

    func testOnARealClusterALongJoinIsReportedNeverReplaced() {
        var watchdog = JoinWatchdog(limit: .seconds(20))
        let start = ContinuousClock.now
        var asked = 0
        // A Kafka cluster id is a base64 UUID; unknown (nil) counts as real too.
        for clusterID in ["MkU3OEVBNTcwNTJENDM2Qk", nil] as [String?] {
            XCTAssertEqual(
                watchdog.check(
                    joined: false, now: start,
                    clusterID: {
                        asked += 1; return clusterID
                    }), .wait)
            for minute in 1...10 {
                XCTAssertNotEqual(
                    watchdog.check(
                        joined: false, now: start + .seconds(60 * minute),
                        clusterID: {
                            asked += 1; return clusterID
                        }), .replace)
            }
            _ = watchdog.check(joined: true, now: start, clusterID: { clusterID })
        }
        XCTAssertEqual(asked, 20, "the cluster id is asked only when the wait is overdue")
    }
}
