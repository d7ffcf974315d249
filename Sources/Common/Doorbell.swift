import Synchronization

/// Wakes tasks that wait for something to happen, without their polling for
/// it: `ring` resumes every `wait` under way. A waiter reads `rings` before it
/// looks at what it waits for and passes it to `wait`, so a ring in between is
/// not missed.
package final class Doorbell: Sendable {
    private struct State {
        var rings = 0
        var lastWaiter = 0
        /// Waiters still waiting; nil until their continuation is in place. A
        /// waiter woken before that is simply gone from here.
        var waiting: [Int: CheckedContinuation<Void, Never>?] = [:]
    }

    private let state = Mutex(State())

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
    }

    /// Returns once it rings after `seen` rings (at once if it rang since),
    /// or after `limit`, or when the task is cancelled.
    package func wait(after seen: Int, atMost limit: Duration) async {
        let id: Int? = state.withLock { state in
            guard state.rings == seen else { return nil }
            state.lastWaiter += 1
            state.waiting[state.lastWaiter] = .some(nil)
            return state.lastWaiter
        }
        guard let id else { return }
        let timer = Task { [self] in
            try? await Task.sleep(for: limit)
            wake(id)
        }
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
        timer.cancel()
    }

    private func wake(_ id: Int) {
        let continuation = state.withLock { $0.waiting.removeValue(forKey: id) }
        continuation??.resume()
    }
}
