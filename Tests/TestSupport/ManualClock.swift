import Common
import Synchronization

/// A clock that moves only when a test moves it (postgres-nio's `MockClock`
/// the model): a loop's period and its doorbell's limits pass at `advance`,
/// not in real time, so a test of "every 200 ms" neither sleeps nor measures.
package final class ManualClock: Clock, Sendable {
    package struct Instant: InstantProtocol {
        let offset: Duration

        package func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        package func duration(to other: Instant) -> Duration { other.offset - offset }
        package static func < (left: Instant, right: Instant) -> Bool { left.offset < right.offset }
    }

    private struct Sleeper {
        let until: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Int: Sleeper] = [:]
        var next = 0
        /// Sleeps begun so far.
        var began = 0
    }

    private let state = Mutex(State())
    /// Rung as a sleep begins: `sleeps(atLeast:)` waits on it.
    private let slept = Doorbell()

    package init() {}

    package var now: Instant { state.withLock { $0.now } }
    package var minimumResolution: Duration { .zero }

    /// Sleeps begun so far, by anything waiting on this clock.
    package var sleepsBegun: Int { state.withLock { $0.began } }

    /// Sleeps under way: begun, not yet ended or cancelled.
    package var sleeping: Int { state.withLock { $0.sleepers.count } }

    package func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            state.next += 1
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let due = state.withLock { state -> Bool in
                    state.began += 1
                    if Task.isCancelled || deadline <= state.now { return true }
                    state.sleepers[id] = Sleeper(until: deadline, continuation: continuation)
                    return false
                }
                slept.ring()
                if due { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on by `duration`, waking every sleep that ends by then.
    package func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.until <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Returns once `count` sleeps have begun on this clock (in all), so that
    /// a test moves the clock only when the loop it drives is waiting; false
    /// after 10 s of real time.
    @discardableResult
    package func sleeps(atLeast count: Int) async -> Bool {
        await slept.wait(until: { sleepsBegun >= count }, atMost: .seconds(10))
    }
}
