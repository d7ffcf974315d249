import Common
import Foundation
import Synchronization

/// The roster a service serves from. Read from its folder at start, it is
/// replaced whole when the folder's files change (checked every few seconds)
/// or on SIGHUP, by a new roster that parses and validates completely. A
/// broken change keeps the old roster in service, logged as an error and
/// counted in `roster_reloads_total{outcome="failed"}`, until the files are
/// fixed. Requests read `current` once and keep that roster to the end.
package final class LiveRoster: Sendable {
    private struct Loaded {
        var roster: Roster
        /// The files' state the roster was read from.
        var signature: [String]
        var loadedAt: Double
    }

    /// Where the folder is read and parsed: one thread, for every roster
    /// of the process (reloads are rare and one at a time).
    static let reading = BlockingExecutor("roster reading", threads: 1)

    /// The folder, or nil for a roster given whole (tests, benchmarks).
    package let directory: String?
    /// A change without `tokens.csv` is refused (`AUTHENTICATION=required`).
    let requireTokens: Bool
    private let loaded: Mutex<Loaded>
    /// The files' state at the previous check: a change is read once it has
    /// held still for one interval, not while an editor is still writing.
    private let lastSeen = Mutex<[String]>([])
    private let logger: Logger
    private let metrics: Metrics?
    /// The service's clock: when a roster was read.
    private let clock: @Sendable () -> Double
    /// `Signals.count(SIGHUP)` when last read: the hangups already answered.
    private let hangupsSeen = Atomic<Int>(0)

    static let files = [
        "schools.csv", "students.csv", "teachers.csv", "tokens.csv", "reasons.csv", "webhooks.csv", "rules.csv", "calendar.csv",
        "service_slots.csv"
    ]

    /// A roster that never changes.
    package init(_ roster: Roster) {
        directory = nil
        requireTokens = false
        loaded = Mutex(Loaded(roster: roster, signature: [], loadedAt: 0))
        logger = Logger(component: "roster")
        metrics = nil
        clock = { 0 }
    }

    /// The roster of `directory`, already read as `roster`.
    package init(
        directory: String, roster: Roster, requireTokens: Bool = false, clock: @escaping @Sendable () -> Double, logger: Logger,
        metrics: Metrics
    ) {
        self.directory = directory
        self.clock = clock
        self.requireTokens = requireTokens
        self.logger = logger
        self.metrics = metrics
        let signature = LiveRoster.signature(of: directory)
        loaded = Mutex(Loaded(roster: roster, signature: signature, loadedAt: clock()))
        lastSeen.withLock { $0 = signature }
        metrics.gauge("roster_loaded_timestamp_seconds", help: "When the roster in service was read (Unix seconds).") { [weak self] in
            [([], self?.loaded.withLock { $0.loadedAt } ?? 0)]
        }
    }

    package var current: Roster { loaded.withLock { $0.roster } }

    /// Reads the folder again and, when all of it is valid, serves it.
    /// Returns whether the roster was replaced.
    @discardableResult
    package func reload(because reason: String) -> Bool {
        guard let directory else { return false }
        let signature = LiveRoster.signature(of: directory)
        let started = clock()
        do {
            let roster = try Roster.load(from: directory)
            if requireTokens && !roster.authenticationEnabled {
                throw ConfigurationError(
                    variable: "ROSTER_DIR", reason: "tokens.csv is gone: authentication would turn off (AUTHENTICATION=required)")
            }
            loaded.withLock { $0 = Loaded(roster: roster, signature: signature, loadedAt: clock()) }
            metrics?.increment("roster_reloads_total", help: "Roster reloads by outcome.", labels: [("outcome", "ok")])
            logger.info(
                "roster reloaded",
                [
                    "reason": reason, "schools": String(roster.schools.count), "students": String(roster.studentCount),
                    "teachers": String(roster.teachers.count), "authentication": roster.authenticationEnabled ? "on" : "off",
                    "seconds": String(format: "%.2f", clock() - started)
                ])
            return true
        } catch {
            // Not retried until the files change again.
            loaded.withLock { $0.signature = signature }
            metrics?.increment("roster_reloads_total", help: "Roster reloads by outcome.", labels: [("outcome", "failed")])
            logger.error(
                "ROSTER NOT RELOADED: the changed roster is invalid; still serving the previous one until it is fixed",
                [
                    "reason": reason, "directory": directory, "error": "\(error)"
                ])
            return false
        }
    }

    /// The part that checks the folder every `interval` and reloads on
    /// SIGHUP: its loop waits on `Signals.bell`, so a hangup is answered at
    /// once. Reading and parsing the files blocks: it runs on the roster's
    /// own reading thread. Nil for a roster given whole.
    package func watching(every interval: Duration, clock: any Clock<Duration>) -> Part? {
        guard directory != nil else { return nil }
        hangupsSeen.store(Signals.count(SIGHUP), ordering: .releasing)
        let loop = Loop(
            "roster watch", every: interval, bell: Signals.bell,
            wokenBy: "SIGHUP (`Signals.bell`); the period is the folder check: files change without telling anyone", clock: clock,
            waitsFirst: true
        ) { [weak self] in await self?.answer() }
        return loop.part()
    }

    /// Reloads for a SIGHUP not answered yet, and checks the folder.
    private func answer() async {
        let count = Signals.count(SIGHUP)
        let hangup = hangupsSeen.exchange(count, ordering: .acquiringAndReleasing) != count
        _ = try? await LiveRoster.reading.run { [self] in
            if hangup { _ = reload(because: "SIGHUP") }
            check()
        }
    }

    private func check() {
        guard let directory else { return }
        let signature = LiveRoster.signature(of: directory)
        let previous = lastSeen.withLock { seen in
            defer { seen = signature }
            return seen
        }
        let inService = loaded.withLock { $0.signature }
        if signature != inService && signature == previous {
            reload(because: "files changed")
        }
    }

    /// Each file's name, size and modification time, or that it is absent.
    static func signature(of directory: String) -> [String] {
        files.map { name in
            var info = stat()
            let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
            guard stat(path, &info) == 0 else { return "\(name) absent" }
            return "\(name) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }
    }
}
