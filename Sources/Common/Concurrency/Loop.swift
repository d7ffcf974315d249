import Foundation
import Synchronization

/// The one shape of a long-lived part that repeats something: it says where
/// its turns run (`place`), what wakes it between them (`bell`, rung by
/// whatever changes what it looks at, and `period`, the longest wait), what
/// one turn does, and it stops one way (`stop`). Each service's `Parts`
/// lists its loops; `docs/design.md` ("How each part waits") is their table,
/// and a test checks it against them.
///
/// A loop takes turns until it is stopped: a turn, then a wait for a ring
/// after the turn began (at once if one came during it) or the period. The
/// period and its waits are measured on `clock`: the continuous clock in
/// service, a `ManualClock` that a test moves instead of sleeping.
package final class Loop: Sendable {
    /// Where the turns run.
    package enum Place: Sendable, Equatable {
        /// A task: a turn that awaits (the store through `blocking`, a doorbell).
        case task
        /// A thread of its own, named after the loop: a turn that blocks in a
        /// C library's call (librdkafka's poll), which must not hold a thread
        /// of the cooperative pool. Its waits are on the continuous clock.
        case thread
    }

    private enum Turn {
        case task(@Sendable () async -> Void)
        case thread(@Sendable () -> Void)
    }

    private struct State {
        var started = false
        var stopping = false
        var task: Task<Void, Never>?
    }

    package let name: String
    package let place: Place
    /// Rung by what changes what the loop looks at, and by `stop`.
    package let bell: Doorbell
    /// The longest wait between turns: nil when only the bell wakes a task's
    /// loop, and for a thread's loop whose turn waits in its own blocking
    /// call (its turns follow at once).
    package let period: Duration?
    /// Who rings the bell, and why the loop must still look on a period if
    /// it does: for the design table and the logs.
    package let wokenBy: String
    private let clock: any Clock<Duration>
    /// A wait shorter than the period when it says so (the schedule's next
    /// minute on the wall clock).
    private let sooner: (@Sendable () -> Duration)?
    /// The turn, unless the owner gives it at `start` (a part made before
    /// its owner is whole).
    private let turn: Turn?
    private let waitsFirst: Bool
    private let state = Mutex(State())
    /// Rung as the loop ends.
    private let ended = Doorbell()
    private let finished = Atomic<Bool>(false)

    /// A loop of turns in a task.
    /// - `sooner`: how long until a turn is wanted before the period ends.
    /// - `waitsFirst`: a wait comes before the first turn (a lease renewed a
    ///   third of its length after it was taken).
    package init(
        _ name: String, every period: Duration? = nil, orSooner sooner: (@Sendable () -> Duration)? = nil, bell: Doorbell = Doorbell(),
        wokenBy: String, clock: any Clock<Duration> = systemTimer,
        waitsFirst: Bool = false, turn: @escaping @Sendable () async -> Void
    ) {
        self.name = name
        place = .task
        self.period = period
        self.sooner = sooner
        self.bell = bell
        self.wokenBy = wokenBy
        self.clock = clock
        self.waitsFirst = waitsFirst
        self.turn = .task(turn)
    }

    /// A loop of turns on a thread of its own. Without a period the turns
    /// follow one another at once: each waits in its own blocking call,
    /// which returns within a bound (`rd_kafka_consumer_poll`'s timeout).
    /// Without `turn` here, `start(_:)` gives it.
    package init(
        _ name: String, onThreadEvery period: Duration?, bell: Doorbell = Doorbell(), wokenBy: String,
        turn: (@Sendable () -> Void)? = nil
    ) {
        self.name = name
        place = .thread
        sooner = nil
        self.period = period
        self.bell = bell
        self.wokenBy = wokenBy
        clock = systemTimer
        waitsFirst = false
        self.turn = turn.map(Turn.thread)
    }

    /// Whether `stop` was called: a long turn may end early.
    package var isStopping: Bool { state.withLock { $0.stopping } }

    /// Starts the turns. Once: a second call, or one after `stop`, does nothing.
    package func start() {
        guard let turn else { preconditionFailure("loop \(name) has no turn: start it with start(_:)") }
        start(turn)
    }

    /// Starts a thread's loop with the turn its owner gives now (`self`
    /// whole by then). Once, as `start()`.
    package func start(_ turn: @escaping @Sendable () -> Void) {
        precondition(place == .thread, "loop \(name) runs in a task")
        start(.thread(turn))
    }

    private func start(_ turn: Turn) {
        let starts = state.withLock { state in
            guard !state.started && !state.stopping else { return false }
            state.started = true
            return true
        }
        guard starts else { return }
        switch turn {
        case .task(let turn):
            let task = Task { [self] in
                if waitsFirst { await pause(after: bell.rings) }
                while !isStopping {
                    let seen = bell.rings
                    await turn()
                    if isStopping { break }
                    await pause(after: seen)
                }
                end()
            }
            state.withLock { $0.task = task }
        case .thread(let turn):
            let thread = Thread { [self] in
                // Named from inside: Foundation names a thread not yet
                // running only in its own records, and the kernel's name
                // (what `top -H` and a core dump show) stays the creator's.
                // The kernel takes 15 bytes; a longer name it refuses whole.
                Thread.current.name = String(decoding: name.utf8.prefix(15), as: UTF8.self)
                while !isStopping {
                    let seen = bell.rings
                    turn()
                    if isStopping { break }
                    if let period { bell.block(after: seen, atMost: period) }
                }
                end()
            }
            thread.start()
        }
    }

    /// Asks the loop to end after the turn in hand, wakes its wait, and
    /// returns once it ended (at once if it never started). A task's turn is
    /// cancelled too: what it awaits (a digest run's cutoff, a doorbell)
    /// ends early; a blocking call it made runs to its end.
    package func stop() async {
        _ = await stop(within: nil)
    }

    /// `stop`, waiting at most `limit` (on the continuous clock: shutdown is
    /// real time); whether it ended. Called again, it waits again: a part
    /// that cancels what its turn is stuck in waits for the rest.
    package func stop(within limit: Duration?) async -> Bool {
        let (started, task) = state.withLock { state in
            state.stopping = true
            return (state.started, state.task)
        }
        guard started else { return true }
        task?.cancel()
        bell.ring()
        return await ended.wait(until: { finished.load(ordering: .acquiring) }, atMost: limit ?? .seconds(86_400 * 365))
    }

    /// Ends the loop from inside its turn: no turn follows this one (the
    /// producer's last turn, which destroyed its handle).
    package func endAfterThisTurn() {
        state.withLock { $0.stopping = true }
    }

    /// Blocks the calling thread, never the cooperative pool, until the loop
    /// ended (at once if it never started): for a caller that waits for a
    /// loop ending by itself (`endAfterThisTurn`).
    package func blockUntilEnded() {
        guard state.withLock({ $0.started }) else { return }
        ended.block(until: { finished.load(ordering: .acquiring) })
    }

    /// This loop as a part of its service: `start` starts it, `stop` stops
    /// it and then runs `last` (what is left to send, a consumer to close).
    package func part(afterStopping last: @escaping @Sendable () async -> Void = {}) -> Part {
        Part(
            name, waits: [waits], start: { self.start() },
            stop: {
                await self.stop()
                await last()
            })
    }

    /// Its row of the design table.
    package var waits: Part.Waits { .loop(name, place: place, period: period, wokenBy: wokenBy) }

    /// Stops `loops` at once, waiting at most `limit` for all of them to
    /// end; whether they did.
    package static func stop(_ loops: [Loop], within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            for loop in loops { group.addTask { await loop.stop(within: limit) } }
            return await group.allSatisfy { $0 }
        }
    }

    private func pause(after seen: Int) async {
        let longest = period ?? .seconds(86_400)
        await bell.wait(after: seen, atMost: sooner.map { min($0(), longest) } ?? longest, clock: clock)
    }

    private func end() {
        finished.store(true, ordering: .releasing)
        ended.ring()
    }
}
