import Common
import Dispatch
import Synchronization
import TestSupport
import XCTest

/// A pool of one resource's handles: each used by one call at a time, a
/// call waits for a free one without a thread, and gives up at its limit.
final class HandlePoolTests: XCTestCase {
    func testACallWaitsForAFreeHandleAndGivesUpAtItsLimit() async throws {
        let pool = HandlePool("test", count: 1) { 0 }
        let clock = ManualClock()
        let release = DispatchSemaphore(value: 0)
        let holding = Task {
            await pool.run(waitingAtMost: .seconds(1)) { (uses: inout Int) -> Int in
                uses += 1
                release.wait()
                return uses
            }
        }
        let held = try await eventually { pool.inUse == 1 }
        XCTAssertTrue(held)
        // Every handle busy: a second call waits, on the clock, then gives up.
        let waiting = Task { await pool.run(waitingAtMost: .seconds(1), clock: clock) { (uses: inout Int) -> Int in uses } }
        await clock.sleeps(atLeast: 1)
        clock.advance(by: .seconds(1))
        let gaveUp = await waiting.value
        XCTAssertNil(gaveUp)
        release.signal()
        let first = await holding.value
        XCTAssertEqual(first, 1)
        // The handle came back, with what the first call left in it.
        let next = await pool.run(waitingAtMost: .seconds(1)) { (uses: inout Int) -> Int in
            uses += 1
            return uses
        }
        XCTAssertEqual(next, 2)
        XCTAssertEqual(pool.inUse, 0)
    }
}
