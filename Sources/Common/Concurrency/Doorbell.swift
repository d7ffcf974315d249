import Foundation
import Synchronization

/// Wakes tasks and threads that wait for something to happen, without their
/// polling for it: `ring` resumes every `wait` (a task) and `block` (a part's
/// own thread) under way. A waiter reads `rings` before it looks at what it
/// waits for and passes it, so a ring in between is not missed. Every wait
/// has a limit, measured on the clock it is given (a task's wait: the
/// continuous clock in service, a `ManualClock` a test moves): the one timer
/// of the services' waiting (`docs/design.md`, "How each part waits").
package final class Doorbell: Sendable {
    private struct State {
        var rings = 0
        var lastWaiter = 0
        /// Waiters still waiting; nil until their continuation is in place. A
        /// waiter woken before that is simply gone from here.
        var waiting: [Int: CheckedContinuation<Void, Never>?] = [:]
    }

    private let state = Mutex(State())
    /// Threads blocked in `block`, woken by `ring`'s broadcast.
    private let threads = NSCondition()

    package init() {}

    /// How many times it rang so far.
    package var rings: Int { state.withLock { $0.rings } }

    package func ring() {
        let waiting = state.withLock { state in
            state.rings += 1
            defer { state.waiting = [:] }
            return state.waiting.values.compactMap { $0 }
        }
        for continuation in waiting { continuation.resume() }
        // A blocked thread checks `rings` holding this lock, then waits
        // (releasing it): the broadcast cannot fall between the two.
        threads.lock()
        threads.broadcast()
        threads.unlock()
    }

    /// Blocks the calling thread — a part's own, never the cooperative pool —
    /// until it rings after `seen` rings (at once if it rang since) or
    /// `limit` passed.
    package func block(after seen: Int, atMost limit: Duration) {
        // The limit on the system's monotonic timer (a thread's wait knows no
        // other clock): the condition's own wait takes a wall-clock date,
        // which an adjusted clock can end early (it did, by 0.7 ms of 200)
        // or late; an early end waits again for what is left.
        let uptime = Uptime()
        threads.lock()
        defer { threads.unlock() }
        while rings == seen {
            let left = limit - uptime.now
            if left <= .zero { return }
            _ = threads.wait(until: Date(timeIntervalSinceNow: left.seconds))
        }
    }

    /// Blocks the calling thread (as `block(after:atMost:)`) until `holds`
    /// is true: looked at first, then again after each ring. For what is
    /// bound to come (a use of a handle ends, a loop ends).
    package func block(until holds: () -> Bool) {
        while true {
            let seen = rings
            if holds() { return }
            block(after: seen, atMost: .seconds(86_400))
        }
    }

    /// Returns once it rings after `seen` rings (at once if it rang since),
    /// or after `limit` on `clock`, or when the task is cancelled.
    package func wait(after seen: Int, atMost limit: Duration, clock: any Clock<Duration> = systemTimer) async {
        let id: Int? = state.withLock { state in
            guard state.rings == seen else { return nil }
            state.lastWaiter += 1
            state.waiting[state.lastWaiter] = .some(nil)
            return state.lastWaiter
        }
        guard let id else { return }
        // The limit: the services' one timed sleep in a task.
        let timer = Task { [self] in
            try? await clock.sleep(for: limit)
            wake(id)
        }
        // Woken on Swift's pool, whatever the task preferred: a ringer (the
        // materializer's thread, the session log's reader) never carries a
        // waiter, an inline request handler included.
        await withTaskExecutorPreference(globalConcurrentExecutor) {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let woken = state.withLock { state in
                        guard state.waiting[id] != nil else { return true }
                        state.waiting[id] = continuation
                        return false
                    }
                    if woken { continuation.resume() }
                }
            } onCancel: {
                wake(id)
            }
        }
        timer.cancel()
    }

    /// Returns once `holds` is true — looked at first, then again after each
    /// ring — or after `limit` on `clock`, or when the task is cancelled;
    /// whether it held.
    package func wait(until holds: () -> Bool, atMost limit: Duration, clock: any Clock<Duration> = systemTimer) async -> Bool {
        let elapsed = Elapsed(clock)
        while true {
            let seen = rings
            if holds() { return true }
            let left = limit - elapsed()
            guard left > .zero, !Task.isCancelled else { return false }
            await wait(after: seen, atMost: left, clock: clock)
        }
    }

    private func wake(_ id: Int) {
        let continuation = state.withLock { $0.waiting.removeValue(forKey: id) }
        continuation??.resume()
    }
}

/// The time since it was made, on a clock known only as `any Clock<Duration>`.
package struct Elapsed: Sendable {
    private let read: @Sendable () -> Duration

    package init(_ clock: any Clock<Duration>) {
        read = Elapsed.reader(clock)
    }

    package func callAsFunction() -> Duration { read() }

    private static func reader<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }
}
