import Common
import Foundation
import Synchronization
import XCTest

final class DoorbellTests: XCTestCase {
    func testARingWakesTheWaiterAndNoRingIsMissed() async throws {
        let doorbell = Doorbell()
        let seen = doorbell.rings
        let started = ContinuousClock.now
        async let woken: Duration = {
            await doorbell.wait(after: seen, atMost: .seconds(10))
            return ContinuousClock.now - started
        }()
        try await Task.sleep(for: .milliseconds(100))
        doorbell.ring()
        let took = await woken
        XCTAssertLessThan(took, .seconds(2), "the ring did not wake the waiter")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(100))

        // Rung between reading `rings` and waiting: returns at once.
        let before = doorbell.rings
        doorbell.ring()
        let again = ContinuousClock.now
        await doorbell.wait(after: before, atMost: .seconds(60))
        XCTAssertLessThan(ContinuousClock.now - again, .seconds(30), "waited for the limit though it had rung")
    }

    func testAWaitEndsAtItsLimitOrWhenCancelled() async throws {
        let doorbell = Doorbell()
        var started = ContinuousClock.now
        await doorbell.wait(after: doorbell.rings, atMost: .milliseconds(200))
        let took = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(took, .milliseconds(200))
        XCTAssertLessThan(took, .seconds(2))

        started = .now
        let waiting = Task { await doorbell.wait(after: doorbell.rings, atMost: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        await waiting.value
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2), "cancelling did not end the wait")
    }

    /// A part's own thread blocks on it the same way: a ring wakes it, a ring
    /// before it blocked returns at once, and the limit ends the wait.
    func testAThreadBlocksUntilARingOrItsLimit() async throws {
        let doorbell = Doorbell()
        let seen = doorbell.rings
        let woke = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        Thread.detachNewThread {
            doorbell.block(after: seen, atMost: .seconds(30))
            woke.signal()
        }
        try await Task.sleep(for: .milliseconds(100))
        doorbell.ring()
        let woken = await Task.detached { woke.wait(timeout: .now() + 10) == .success }.value
        XCTAssertTrue(woken, "the ring did not wake the thread")
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(10), "woken by the ring, not the 30 s limit")

        let again = ContinuousClock.now
        doorbell.block(after: seen, atMost: .seconds(30))
        XCTAssertLessThan(ContinuousClock.now - again, .seconds(10), "it had rung since: at once")
        doorbell.block(after: doorbell.rings, atMost: .milliseconds(200))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - again, .milliseconds(200), "the limit")
    }

    /// A condition looked at again after each ring: true once it holds,
    /// false at the limit.
    func testAWaitUntilAConditionHoldsOrItsLimit() async throws {
        let doorbell = Doorbell()
        let flag = Atomic<Bool>(false)
        async let held = doorbell.wait(until: { flag.load(ordering: .acquiring) }, atMost: .seconds(30))
        try await Task.sleep(for: .milliseconds(100))
        doorbell.ring()
        flag.store(true, ordering: .releasing)
        doorbell.ring()
        let heldValue = await held
        XCTAssertTrue(heldValue)
        let started = ContinuousClock.now
        let never = await doorbell.wait(until: { false }, atMost: .milliseconds(200))
        XCTAssertFalse(never)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(200), "waited for the limit")
    }
}
