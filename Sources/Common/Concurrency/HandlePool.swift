import Synchronization

/// A fixed number of one blocking resource's handles (the forwarder's libcurl
/// connections to the other service), each used by one call at a time. A call
/// waits for a free handle without holding a thread, then runs on a Dispatch
/// thread with it and gives it back: however many requests wait, at most
/// `count` threads are ever blocked on the resource, and a handle's
/// connection is kept for the next call. postgres-nio's pool is the model:
/// fixed, no growth.
package final class HandlePool<Handle>: Sendable {
    private let handles: [Locked<Handle>]
    /// One thread per handle: a call that runs always holds its handle.
    private let executor: BlockingExecutor
    private let free: Mutex<[Int]>
    /// Rung as a handle is given back: waiters look again.
    private let given = Doorbell()

    /// `count` handles, each made by `make` when the pool is made.
    package init(_ name: String, count: Int, make: () -> sending Handle) {
        handles = (0..<max(1, count)).map { _ in Locked(make()) }
        executor = BlockingExecutor(name, threads: handles.count)
        free = Mutex(Array(handles.indices))
    }

    package var count: Int { handles.count }

    /// Handles in use now.
    package var inUse: Int { handles.count - free.withLock { $0.count } }

    /// `body`'s value with a free handle, on the pool's own threads; nil when none
    /// came free within `limit` on `clock` (every handle busy: the resource
    /// is slow or hung, and the caller should say so rather than queue).
    package func run<T: Sendable>(
        waitingAtMost limit: Duration, clock: any Clock<Duration> = systemTimer, _ body: @escaping @Sendable (inout Handle) -> T
    ) async -> T? {
        var taken: Int?
        _ = await given.wait(
            until: {
                taken = take()
                return taken != nil
            }, atMost: limit, clock: clock)
        guard let index = taken else { return nil }
        let handle = handles[index]
        let value = try? await executor.run { handle.withLock { body(&$0) } }
        free.withLock { $0.append(index) }
        given.ring()
        return value
    }

    private func take() -> Int? {
        free.withLock { $0.popLast() }
    }
}
