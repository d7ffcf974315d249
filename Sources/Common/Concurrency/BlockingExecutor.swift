import Dispatch
import Foundation
import Synchronization

/// Threads of its own for one blocking resource (the store's connections,
/// the delivery senders, the broker's queries): at most `threads` calls run
/// at once, the rest wait in its queue, and a caller awaits its call
/// without holding any thread meanwhile. Threads start as calls come and
/// end after a while without any, so an executor no one uses costs none.
/// A resource that stops answering holds its own threads, never another
/// resource's or Swift's cooperative pool.
package final class BlockingExecutor: Sendable {
    package let name: String
    package let threads: Int
    private let state = Mutex(State())
    /// One signal a queued call: an idle thread takes the next.
    private let queued = DispatchSemaphore(value: 0)
    /// How long a thread with nothing to do stays for the next call.
    private let idleFor: DispatchTimeInterval

    private struct State {
        var calls: [@Sendable () -> Void] = []
        /// Index of the next call in `calls` (taken from the front without moving the rest).
        var head = 0
        /// Threads that exist.
        var running = 0
        /// Threads waiting for a call.
        var idle = 0
    }

    package init(_ name: String, threads: Int, idleFor: Duration = .seconds(30)) {
        self.name = name
        self.threads = max(1, threads)
        self.idleFor = .milliseconds(Int(idleFor.components.seconds * 1000 + idleFor.components.attoseconds / 1_000_000_000_000_000))
    }

    /// Calls queued and not yet started.
    package var waiting: Int { state.withLock { $0.calls.count - $0.head } }

    /// Threads that exist now, busy or idle.
    package var started: Int { state.withLock { $0.running } }

    /// Runs `body` on one of the executor's threads and awaits its value.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            execute { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` like `run`, but stops waiting after `limit` on `clock`:
    /// nil when it failed or had not finished by then. The call itself runs
    /// on to its end (a blocking C call cannot be interrupted); only the
    /// caller is freed, e.g. a readiness probe that must answer within a
    /// second while the store hangs.
    package func run<T: Sendable>(
        within limit: Duration, clock: any Clock<Duration> = systemTimer, _ body: @escaping @Sendable () throws -> T
    ) async -> T? {
        let answer = FirstAnswer<T?>()
        let timer = Task {
            try? await clock.sleep(for: limit)
            answer.give(nil)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            answer.wait(continuation)
            execute { answer.give(try? body()) }
        }
    }

    /// Queues `job` for one of the threads, starting one when the calls
    /// waiting outnumber the idle threads and fewer than `threads` exist.
    package func execute(_ job: @escaping @Sendable () -> Void) {
        let start = state.withLock { state in
            state.calls.append(job)
            guard state.calls.count - state.head > state.idle && state.running < threads else { return false }
            state.running += 1
            return true
        }
        queued.signal()
        if start { startThread() }
    }

    private func startThread() {
        let thread = Thread { [self] in
            while let job = next() { job() }
        }
        thread.name = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        thread.start()
    }

    /// The next queued call, waiting for one up to `idleFor`; nil when
    /// none came and this thread ends. Each queued call signals once and is
    /// taken by the one thread that wait answered.
    private func next() -> (@Sendable () -> Void)? {
        while true {
            state.withLock { $0.idle += 1 }
            let signalled = queued.wait(timeout: .now() + idleFor) == .success
            let ends = state.withLock { state in
                state.idle -= 1
                guard !signalled && state.head == state.calls.count else { return false }
                state.running -= 1
                return true
            }
            if ends { return nil }
            if signalled, let job = take() { return job }
        }
    }

    private func take() -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard state.head < state.calls.count else { return nil }
            let job = state.calls[state.head]
            state.head += 1
            if state.head == state.calls.count || state.head >= 1_024 {
                state.calls.removeFirst(state.head)
                state.head = 0
            }
            return job
        }
    }
}

/// A continuation resumed by whichever answer comes first (the call or
/// the timer); the later one is dropped.
fileprivate final class FirstAnswer<T: Sendable>: Sendable {
    private enum Slot {
        case empty
        case waiting(CheckedContinuation<T, Never>)
        case given(T)
        case over
    }

    private let slot = Mutex(Slot.empty)

    func wait(_ continuation: CheckedContinuation<T, Never>) {
        let given = slot.withLock { slot -> T? in
            guard case .given(let value) = slot else {
                slot = .waiting(continuation)
                return nil
            }
            slot = .over
            return value
        }
        if let given { continuation.resume(returning: given) }
    }

    func give(_ value: T) {
        let waiting = slot.withLock { slot -> CheckedContinuation<T, Never>? in
            switch slot {
            case .empty:
                slot = .given(value)
                return nil
            case .waiting(let continuation):
                slot = .over
                return continuation
            case .given, .over:
                return nil
            }
        }
        waiting?.resume(returning: value)
    }
}

extension BlockingExecutor {
    /// CPU-bound work beside the caller's own (a school's digests rendered
    /// ahead, photos decoded and made smaller): one thread per core.
    package static let processors = BlockingExecutor("processors", threads: ProcessInfo.processInfo.activeProcessorCount)
}
