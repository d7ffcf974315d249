import Common
import Dispatch
import Foundation
import Synchronization

/// The roster a service serves from. Read from its folder at start, it is
/// replaced whole when the folder's files change (checked every few seconds)
/// or on SIGHUP, by a new roster that parses and validates completely. A
/// broken change keeps the old roster in service, logged as an error and
/// counted in `roster_reloads_total{outcome="failed"}`, until the files are
/// fixed. Requests read `current` once and keep that roster to the end.
package final class LiveRoster: @unchecked Sendable {
    private struct Loaded {
        var roster: Roster
        /// The files' state the roster was read from.
        var signature: [String]
        var loadedAt: Double
    }

    /// The folder, or nil for a roster given whole (tests, benchmarks).
    package let directory: String?
    private let loaded: Mutex<Loaded>
    /// The files' state at the previous check: a change is read once it has
    /// held still for one interval, not while an editor is still writing.
    private let lastSeen = Mutex<[String]>([])
    private let logger: Logger
    private let metrics: Metrics?
    /// The check timer, once watching; set once under `sourcesLock` (Dispatch
    /// sources are not Sendable, so not in a Mutex).
    private var sources: [any DispatchSourceProtocol] = []
    private let sourcesLock = NSLock()
    /// The hangups already answered (see `hangups`).
    private let hangupsSeen = Atomic<Int>(0)

    static let files = ["schools.csv", "students.csv", "teachers.csv", "tokens.csv", "reasons.csv", "webhooks.csv"]

    /// A roster that never changes.
    package init(_ roster: Roster) {
        directory = nil
        loaded = Mutex(Loaded(roster: roster, signature: [], loadedAt: Timestamp.now()))
        logger = Logger(component: "roster")
        metrics = nil
    }

    /// The roster of `directory`, already read as `roster`.
    package init(directory: String, roster: Roster, logger: Logger, metrics: Metrics) {
        self.directory = directory
        self.logger = logger
        self.metrics = metrics
        let signature = LiveRoster.signature(of: directory)
        loaded = Mutex(Loaded(roster: roster, signature: signature, loadedAt: Timestamp.now()))
        lastSeen.withLock { $0 = signature }
        metrics.gauge("roster_loaded_timestamp_seconds", help: "When the roster in service was read (Unix seconds).") { [weak self] in
            [([], self?.loaded.withLock { $0.loadedAt } ?? 0)]
        }
    }

    deinit {
        for source in sourcesLock.withLock({ sources }) { source.cancel() }
    }

    package var current: Roster { loaded.withLock { $0.roster } }

    /// Reads the folder again and, when all of it is valid, serves it.
    /// Returns whether the roster was replaced.
    @discardableResult
    package func reload(because reason: String) -> Bool {
        guard let directory else { return false }
        let signature = LiveRoster.signature(of: directory)
        do {
            let roster = try Roster.load(from: directory)
            loaded.withLock { $0 = Loaded(roster: roster, signature: signature, loadedAt: Timestamp.now()) }
            metrics?.increment("roster_reloads_total", help: "Roster reloads by outcome.", labels: [("outcome", "ok")])
            logger.info("roster reloaded", [
                "reason": reason, "schools": String(roster.schools.count), "students": String(roster.studentCount),
                "teachers": String(roster.teachers.count), "authentication": roster.authenticationEnabled ? "on" : "off",
            ])
            return true
        } catch {
            // Not retried until the files change again.
            loaded.withLock { $0.signature = signature }
            metrics?.increment("roster_reloads_total", help: "Roster reloads by outcome.", labels: [("outcome", "failed")])
            logger.error("ROSTER NOT RELOADED: the changed roster is invalid; still serving the previous one until it is fixed", [
                "reason": reason, "directory": directory, "error": "\(error)",
            ])
            return false
        }
    }

    /// Checks the folder every `interval` and reloads on SIGHUP. Once.
    ///
    /// SIGHUP is caught by a handler that only counts it, and a timer reads
    /// the count every 250 ms. A Dispatch signal source does not do here: on
    /// Linux it needs the signal blocked in every thread, and a service's
    /// threads (libmicrohttpd's, librdkafka's) start before it, so the kernel
    /// discarded the ignored signal on one of them.
    package func watch(every interval: Duration) {
        guard directory != nil, sourcesLock.withLock({ sources.isEmpty }) else { return }
        installHangupHandler()
        hangupsSeen.store(hangups.load(ordering: .acquiring), ordering: .releasing)
        let period = max(0.25, interval.seconds)
        var sinceCheck = 0.0
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "roster-watch"))
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            let count = hangups.load(ordering: .acquiring)
            if hangupsSeen.exchange(count, ordering: .acquiringAndReleasing) != count {
                reload(because: "SIGHUP")
            }
            sinceCheck += 0.25
            if sinceCheck >= period {
                sinceCheck = 0
                check()
            }
        }
        timer.resume()
        sourcesLock.withLock { sources = [timer] }
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

/// SIGHUPs received by the process, counted by `hangupHandler`.
private let hangups = Atomic<Int>(0)

/// Async-signal-safe: one atomic add.
private func hangupHandler(_ signal: Int32) {
    hangups.add(1, ordering: .releasing)
}

private let hangupHandlerInstalled = Mutex(false)

private func installHangupHandler() {
    hangupHandlerInstalled.withLock { installed in
        guard !installed else { return }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = hangupHandler
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(SIGHUP, &action, nil)
        installed = true
    }
}
