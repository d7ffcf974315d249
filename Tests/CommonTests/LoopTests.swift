import Common
import Foundation
import Synchronization
import TestSupport
import XCTest

final class LoopTests: XCTestCase {
    /// A task's loop: a turn at start, then one per period on the clock it
    /// was given (moved here, not waited for), one at once for a ring, and
    /// none after `stop`.
    func testATaskLoopTurnsOnItsPeriodAndItsBell() async throws {
        let clock = ManualClock()
        let turns = Atomic<Int>(0)
        let turned = Doorbell()
        let loop = Loop("test", every: .milliseconds(200), wokenBy: "the test", clock: clock) {
            turns.add(1, ordering: .acquiringAndReleasing)
            turned.ring()
        }
        func reached(_ count: Int) async -> Bool {
            await turned.wait(until: { turns.load(ordering: .acquiring) == count }, atMost: .seconds(10))
        }
        loop.start()
        loop.start()
        let first = await reached(1)
        XCTAssertTrue(first, "no turn at start")

        await clock.sleeps(atLeast: 1)
        clock.advance(by: .milliseconds(199))
        XCTAssertEqual(clock.sleeping, 1, "turned before its period")
        clock.advance(by: .milliseconds(1))
        let second = await reached(2)
        XCTAssertTrue(second, "no turn after its period")

        await clock.sleeps(atLeast: 2)
        loop.bell.ring()
        let third = await reached(3)
        XCTAssertTrue(third, "a ring did not make a turn")

        await clock.sleeps(atLeast: 3)
        await loop.stop()
        clock.advance(by: .seconds(10))
        XCTAssertEqual(turns.load(ordering: .acquiring), 3, "a turn after stop")
        XCTAssertEqual(clock.sleeping, 0, "its wait outlived it")
        loop.start()
        XCTAssertEqual(turns.load(ordering: .acquiring), 3, "started again after stop")
    }

    /// `waitsFirst`: the first turn comes after a period, not at start.
    func testALoopThatWaitsFirst() async throws {
        let clock = ManualClock()
        let turns = Atomic<Int>(0)
        let turned = Doorbell()
        let loop = Loop("later", every: .seconds(5), wokenBy: "the test", clock: clock, waitsFirst: true) {
            turns.add(1, ordering: .acquiringAndReleasing)
            turned.ring()
        }
        loop.start()
        await clock.sleeps(atLeast: 1)
        XCTAssertEqual(turns.load(ordering: .acquiring), 0)
        clock.advance(by: .seconds(5))
        let turnedOnce = await turned.wait(until: { turns.load(ordering: .acquiring) == 1 }, atMost: .seconds(10))
        XCTAssertTrue(turnedOnce)
        await loop.stop()
    }

    /// `orSooner`: the wait ends when it says, if that comes before the
    /// period (the schedule's next minute), and never later than the period.
    func testALoopWakesSoonerWhenAskedAndNeverLaterThanItsPeriod() async throws {
        let clock = ManualClock()
        let turns = Atomic<Int>(0)
        let turned = Doorbell()
        let wanted = Mutex<Duration>(.seconds(2))
        let loop = Loop("minute", every: .seconds(15), orSooner: { wanted.withLock { $0 } }, wokenBy: "the test", clock: clock) {
            turns.add(1, ordering: .acquiringAndReleasing)
            turned.ring()
        }
        func reached(_ count: Int) async -> Bool {
            await turned.wait(until: { turns.load(ordering: .acquiring) == count }, atMost: .seconds(10))
        }
        loop.start()
        let first = await reached(1)
        XCTAssertTrue(first)
        await clock.sleeps(atLeast: 1)
        clock.advance(by: .milliseconds(1999))
        XCTAssertEqual(turns.load(ordering: .acquiring), 1, "turned before it was asked to")
        wanted.withLock { $0 = .seconds(40) }
        clock.advance(by: .milliseconds(1))
        let second = await reached(2)
        XCTAssertTrue(second, "did not wake when asked")
        await clock.sleeps(atLeast: 2)
        clock.advance(by: .seconds(15))
        let third = await reached(3)
        XCTAssertTrue(third, "waited past its period")
        await loop.stop()
    }

    /// A thread's loop: its turns run on a thread named after it, one after
    /// another; `stop(within:)` says whether the turn in hand ended in time,
    /// and waits again when called again.
    func testAThreadLoopStopsAfterTheTurnInHand() async throws {
        let release = DispatchSemaphore(value: 0)
        let entered = Doorbell()
        let names = Mutex<[String]>([])
        let loop = Loop("consumer (materializer)", onThreadEvery: nil, wokenBy: "its blocking call") {
            // The kernel's name of the thread running the turn.
            let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
            names.withLock { $0.append(name.trimmingCharacters(in: .newlines)) }
            entered.ring()
            release.wait()
        }
        loop.start()
        let inTurn = await entered.wait(until: { !names.withLock { $0.isEmpty } }, atMost: .seconds(10))
        XCTAssertTrue(inTurn)
        let early = await loop.stop(within: .milliseconds(100))
        XCTAssertFalse(early, "stopped while its turn was blocked")
        release.signal()
        let ended = await loop.stop(within: .seconds(10))
        XCTAssertTrue(ended)
        XCTAssertEqual(
            names.withLock { $0 }, ["consumer (mater"],
            "one turn, on its own thread (named in the 15 bytes the kernel keeps); none after stop")
    }

    /// Stopped before it started (a service that failed to start): the stop
    /// has nothing to wait for, and a start after it takes no turn.
    func testALoopNeverStartedStopsAtOnceAndDoesNotStartAfter() async {
        let turns = Atomic<Int>(0)
        let loop = Loop("idle", onThreadEvery: nil, wokenBy: "nothing") { turns.add(1, ordering: .relaxed) }
        let ended = await loop.stop(within: .zero)
        XCTAssertTrue(ended)
        loop.start()
        let again = await loop.stop(within: .seconds(10))
        XCTAssertTrue(again)
        XCTAssertEqual(turns.load(ordering: .relaxed), 0)
    }

    /// The row a loop gives the design table.
    func testItsRowOfTheDesignTable() {
        let task = Loop("access log", every: .milliseconds(200), wokenBy: "`stop`") {}
        XCTAssertEqual(task.waits, Part.Waits("access log", waitsIn: "a task: `Doorbell.wait`, 200 ms", wokenBy: "`stop`"))
        let thread = Loop("reader", onThreadEvery: nil, wokenBy: "librdkafka") {}
        XCTAssertEqual(thread.waits.waitsIn, "its own thread: the turn's blocking call")
        XCTAssertEqual(Duration.seconds(900).described, "15 min")
    }
}
