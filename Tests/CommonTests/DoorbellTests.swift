import Common
import Foundation
import Synchronization
import TestSupport
import XCTest

final class DoorbellTests: XCTestCase {
    func testARingWakesTheWaiterAndNoRingIsMissed() async throws {
        let doorbell = Doorbell()
        let clock = ManualClock()
        let seen = doorbell.rings
        let waiting = Task { await doorbell.wait(after: seen, atMost: .seconds(10), clock: clock) }
        await clock.sleeps(atLeast: 1)
        doorbell.ring()
        await waiting.value
        XCTAssertEqual(clock.sleeping, 0, "the ring ended the wait and its timer; the clock never moved")

        // Rung between reading `rings` and waiting: returns at once, without a timer.
        let before = doorbell.rings
        doorbell.ring()
        await doorbell.wait(after: before, atMost: .seconds(60), clock: clock)
        XCTAssertEqual(clock.sleepsBegun, 1)
    }

    func testAWaitEndsAtItsLimitOrWhenCancelled() async throws {
        let doorbell = Doorbell()
        let clock = ManualClock()
        let ended = Atomic<Bool>(false)
        let waiting = Task {
            await doorbell.wait(after: doorbell.rings, atMost: .milliseconds(200), clock: clock)
            ended.store(true, ordering: .releasing)
        }
        await clock.sleeps(atLeast: 1)
        clock.advance(by: .milliseconds(199))
        XCTAssertEqual(clock.sleeping, 1, "ended before its limit")
        clock.advance(by: .milliseconds(1))
        await waiting.value
        XCTAssertTrue(ended.load(ordering: .acquiring))

        let cancelled = Task { await doorbell.wait(after: doorbell.rings, atMost: .seconds(30), clock: clock) }
        await clock.sleeps(atLeast: 2)
        cancelled.cancel()
        await cancelled.value
        XCTAssertEqual(clock.sleeping, 0, "cancelling ended the wait and its timer")
    }

    /// A part's own thread blocks on it the same way, on the continuous
    /// clock: a ring wakes it, a ring before it blocked returns at once, and
    /// the limit ends the wait.
    func testAThreadBlocksUntilARingOrItsLimit() async throws {
        let doorbell = Doorbell()
        let seen = doorbell.rings
        let woke = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            doorbell.block(after: seen, atMost: .seconds(30))
            woke.signal()
            // It had rung since: at once.
            doorbell.block(after: seen, atMost: .seconds(30))
            woke.signal()
        }
        doorbell.ring()
        for wait in ["the ring did not wake the thread", "a ring before it blocked did not end the block at once"] {
            let woken = await Task.detached { woke.wait(timeout: .now() + 10) == .success }.value
            XCTAssertTrue(woken, wait)
        }

        // Never rung again: the limit ends it.
        let seenAgain = doorbell.rings
        Thread.detachNewThread {
            doorbell.block(after: seenAgain, atMost: .milliseconds(200))
            woke.signal()
        }
        let ended = await Task.detached { woke.wait(timeout: .now() + 10) == .success }.value
        XCTAssertTrue(ended, "the limit did not end the block")
        XCTAssertEqual(doorbell.rings, seenAgain)
    }

    /// A condition looked at again after each ring: true once it holds,
    /// false at the limit.
    func testAWaitUntilAConditionHoldsOrItsLimit() async throws {
        let doorbell = Doorbell()
        let clock = ManualClock()
        let flag = Atomic<Bool>(false)
        let held = Task { await doorbell.wait(until: { flag.load(ordering: .acquiring) }, atMost: .seconds(30), clock: clock) }
        await clock.sleeps(atLeast: 1)
        doorbell.ring()
        await clock.sleeps(atLeast: 2)
        XCTAssertEqual(clock.sleeping, 1, "a ring without the condition: waiting again")
        flag.store(true, ordering: .releasing)
        doorbell.ring()
        let heldValue = await held.value
        XCTAssertTrue(heldValue)

        let never = Task { await doorbell.wait(until: { false }, atMost: .milliseconds(200), clock: clock) }
        await clock.sleeps(atLeast: 3)
        clock.advance(by: .milliseconds(200))
        let neverValue = await never.value
        XCTAssertFalse(neverValue, "the limit")
    }
}
