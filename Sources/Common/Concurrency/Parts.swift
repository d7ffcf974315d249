import Synchronization

/// One long-lived part of a service (the HTTP server, the consumer, a
/// background loop): `start` returns once it runs, or throws when it cannot;
/// `stop` returns once it stopped, having finished or given back what it had
/// in hand, within its own bound. Each part keeps its own way of running (a
/// thread for a blocking C library, a task for a loop); what all share is this
/// shape and one place, `Parts`, that says in which order they start and stop.
package struct Part: Sendable {
    package let name: String
    /// How it waits, a row of `docs/design.md`'s table each (a part made of
    /// several loops has several).
    package let waits: [Waits]
    let start: @Sendable () async throws -> Void
    let stop: @Sendable () async -> Void

    /// A row of the design table: what a part waits in, and what wakes it.
    package struct Waits: Sendable, Equatable {
        package let name: String
        package let waitsIn: String
        package let wokenBy: String

        package init(_ name: String, waitsIn: String, wokenBy: String) {
            self.name = name
            self.waitsIn = waitsIn
            self.wokenBy = wokenBy
        }

        /// The row of a `Loop` (or of loops of one shape).
        package static func loop(_ name: String, place: Loop.Place, period: Duration?, wokenBy: String) -> Waits {
            let every = period.map { ", \($0.described)" } ?? ""
            let waitsIn =
                switch (place, period) {
                case (.task, _): "a task: `Doorbell.wait`\(every)"
                case (.thread, nil): "its own thread: the turn's blocking call"
                case (.thread, _): "its own thread: the turn's blocking call, then `Doorbell.block`\(every)"
                }
            return Waits(name, waitsIn: waitsIn, wokenBy: wokenBy)
        }
    }

    package init(
        _ name: String, waits: [Waits] = [], start: @escaping @Sendable () async throws -> Void = {},
        stop: @escaping @Sendable () async -> Void = {}
    ) {
        self.name = name
        self.waits = waits
        self.start = start
        self.stop = stop
    }
}

/// A service's parts in stages, each stage needing the ones before it: they
/// start stage by stage, in the order listed, and stop in the reverse order of
/// stages. The parts of one stage stop at once, so that a dependency that hangs
/// (a store that does not answer) delays shutdown by one bounded wait, not by
/// one wait per part. A part that fails to start stops those already started.
/// Each part's end is logged with the milliseconds since shutdown began: a
/// shutdown that hangs names what it waits for.
package final class Parts: Sendable {
    private let stages: [[Part]]
    private let logger: Logger
    private let state = Mutex<(started: Int, stopping: Bool)>((0, false))

    /// Every part's rows of the design table, in the order they start.
    package var waits: [Part.Waits] { stages.flatMap { $0.flatMap(\.waits) } }

    package init(_ stages: [[Part]], logger: Logger) {
        self.stages = stages
        self.logger = logger
    }

    package func start() async throws {
        for (index, stage) in stages.enumerated() {
            for (position, part) in stage.enumerated() {
                do {
                    try await part.start()
                } catch {
                    logger.error("\(part.name) could not start; stopping what had started", ["error": "\(error)"])
                    state.withLock { $0.started = index }
                    await stop(stage.prefix(position), since: Uptime())
                    await stop()
                    throw error
                }
            }
            state.withLock { $0.started = index + 1 }
        }
    }

    /// Stops every stage that started, the last first. Once.
    package func stop() async {
        let started = state.withLock { state in
            defer { state = (0, true) }
            return state.stopping ? 0 : state.started
        }
        let stopping = Uptime()
        for stage in stages.prefix(started).reversed() { await stop(stage[...], since: stopping) }
    }

    private func stop(_ parts: ArraySlice<Part>, since stopping: Uptime) async {
        let logger = self.logger
        await withTaskGroup(of: Void.self) { group in
            for part in parts {
                group.addTask {
                    await part.stop()
                    logger.info("shutdown: \(part.name) done", ["ms": String(stopping.now.milliseconds)])
                }
            }
        }
    }
}
