import Common
import Dispatch
import Synchronization

/// The store's connections for reads (lists, inboxes, the 봉사 명단, the
/// access log), each used by one thread at a time. A read takes any free
/// one and waits only when all are busy, so a session that stalls (a slow
/// query, a lock wait, a server that stopped answering) holds one reader,
/// not every read behind it. postgres-nio's pool is the model, kept small:
/// a fixed set opened at start, no growth.
final class ReadPool: Sendable {
    /// The connections, each behind its own lock.
    private let slots: [Locked<any SQLDatabase>]
    /// One permit per connection: a reader holding one always finds a free slot.
    private let permits: DispatchSemaphore
    /// After a read found the store unavailable (a server that stopped
    /// answering, a lost session), the reads of the next `pause` fail at
    /// once rather than each waiting out its deadline on another
    /// connection: a list and its counts answer 503 within one deadline,
    /// and reads arriving meanwhile are not held. Monotonic nanoseconds; 0: none.
    /// Milliseconds of `uptime`; reads fail at once before it.
    private let failingUntil = Atomic<Int64>(.min)
    /// The system's time, as the connections' own deadlines.
    private let uptime = Uptime()
    let pause: Duration

    /// `count` connections from `open`.
    init(count: Int, pause: Duration, open: () throws(StoreError) -> any SQLDatabase) throws(StoreError) {
        var slots: [Locked<any SQLDatabase>] = []
        for _ in 0..<max(1, count) { slots.append(Locked(try open())) }
        self.slots = slots
        self.pause = pause
        permits = DispatchSemaphore(value: slots.count)
    }

    var count: Int { slots.count }

    /// Runs `body` on a free connection; blocks while every one is in use.
    func withConnection<T>(_ body: (inout any SQLDatabase) throws(StoreError) -> sending T) throws(StoreError) -> sending T {
        let now = uptime.now.milliseconds
        if now < failingUntil.load(ordering: .relaxed) {
            throw StoreError(.unavailable, "the store did not answer a read a moment ago; reads wait for it again shortly")
        }
        do {
            return try read(body)
        } catch {
            if error.code == .unavailable {
                failingUntil.store(uptime.now.milliseconds + pause.milliseconds, ordering: .relaxed)
            }
            throw error
        }
    }

    private func read<T>(_ body: (inout any SQLDatabase) throws(StoreError) -> sending T) throws(StoreError) -> sending T {
        permits.wait()
        defer { permits.signal() }
        // Another holder of a permit may take the slot tried first; with a
        // permit, some slot is free, so the search ends within a pass or two.
        while true {
            for slot in slots {
                if let result = try slot.withLockIfAvailable(body) { return result }
            }
        }
    }
}
