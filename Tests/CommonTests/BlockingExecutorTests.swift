import Common
import Dispatch
import Synchronization
import TestSupport
import XCTest

/// An executor of one blocking resource: at most its threads run at once,
/// the rest wait in its queue without a thread, its threads end when idle,
/// and a caller with a limit is freed at it while the call hangs.
final class BlockingExecutorTests: XCTestCase {
    func testAtMostItsThreadsRunAtOnceAndTheRestWaitInItsQueue() async throws {
        let executor = BlockingExecutor("test", threads: 2)
        let gate = DispatchSemaphore(value: 0)
        let tally = Tally()
        let calls = (0..<6).map { index in
            Task {
                try await executor.run { () -> Int in
                    let now = tally.running.add(1, ordering: .sequentiallyConsistent).newValue
                    tally.most.max(now, ordering: .sequentiallyConsistent)
                    gate.wait()
                    tally.running.subtract(1, ordering: .sequentiallyConsistent)
                    return index
                }
            }
        }
        let queued = try await eventually { tally.running.load(ordering: .sequentiallyConsistent) == 2 && executor.waiting == 4 }
        XCTAssertTrue(queued, "two calls run and four wait: \(executor.waiting) waiting")
        XCTAssertEqual(executor.started, 2)
        for _ in 0..<6 { gate.signal() }
        var answers: [Int] = []
        for call in calls { answers.append(try await call.value) }
        XCTAssertEqual(answers, Array(0..<6))
        XCTAssertEqual(tally.most.load(ordering: .sequentiallyConsistent), 2)
        XCTAssertEqual(executor.waiting, 0)
    }

    func testItsThreadsEndWhenNoCallCame() async throws {
        let executor = BlockingExecutor("test", threads: 3, idleFor: .milliseconds(20))
        async let first = executor.run { 1 }
        async let second = executor.run { 2 }
        let sum = try await first + second
        XCTAssertEqual(sum, 3)
        let ended = try await eventually { executor.started == 0 }
        XCTAssertTrue(ended, "\(executor.started) threads left")
        // And start again for the next call.
        let again = try await executor.run { "again" }
        XCTAssertEqual(again, "again")
    }

    func testAnErrorReachesTheCaller() async {
        struct Refused: Error {}
        let executor = BlockingExecutor("test", threads: 1)
        do {
            _ = try await executor.run { () throws -> Int in throw Refused() }
            XCTFail("the error was lost")
        } catch {
            XCTAssertTrue(error is Refused)
        }
    }

    func testACallerWithALimitIsFreedAtItWhileTheCallHangs() async throws {
        let executor = BlockingExecutor("test", threads: 1)
        let clock = ManualClock()
        let gate = DispatchSemaphore(value: 0)
        let waiting = Task {
            await executor.run(within: .seconds(1), clock: clock) { () -> Int in
                gate.wait()
                return 1
            }
        }
        await clock.sleeps(atLeast: 1)
        clock.advance(by: .seconds(1))
        let answer = await waiting.value
        XCTAssertNil(answer, "the caller is freed at the limit")
        // The call itself ran on; its late answer is dropped, and the thread serves the next call.
        gate.signal()
        let quick = await executor.run(within: .seconds(1), clock: clock) { 2 }
        XCTAssertEqual(quick, 2)
    }
}

/// Calls running now, and the most that ran at once.
fileprivate final class Tally: Sendable {
    let running = Atomic(0)
    let most = Atomic(0)
}
