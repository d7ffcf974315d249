import Common
import Foundation
import Synchronization

/// The roster a service serves from. Read from its folder at start, it is
/// replaced whole when the folder's files change (checked every few seconds)
/// or on SIGHUP, by a new roster that parses and validates completely. A
/// broken change keeps the old roster in service, logged as an error and
/// counted in `roster_reloads_total{outcome="failed"}`, until the files are
/// fixed. Over the folder, each school's latest roster version (관리 →
/// 명부, carried by the roster log) replaces the folder's students of that
/// school, and stays over the folder read again. Requests read `current`
/// once and keep that roster to the end.
package final class LiveRoster: Sendable {
    private struct Loaded {
        /// The folder's roster (or the one given whole) with `versions`
        /// applied: what is served.
        var roster: Roster
        /// The number of each school's latest version applied, by school:
        /// its students are the served roster's (a district's versions kept
        /// twice would be hundreds of megabytes).
        var versions: [String: Int] = [:]
        /// Schools whose teachers a version set: theirs too stay over the folder.
        var teachersSet: Set<String> = []
        /// Each school's tables a version set (학교 설정): they too stay over the folder.
        var tablesSet: [String: Set<SchoolTable>] = [:]
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
    /// Held while a new roster is built (a reload, versions applied), so
    /// that one build never overwrites another's; requests never wait on it.
    private let building = Mutex(())
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

    /// A roster without a folder (tests, benchmarks): only versions change it.
    package init(_ roster: Roster, logger: Logger = Logger(component: "roster")) {
        directory = nil
        requireTokens = false
        loaded = Mutex(Loaded(roster: roster, signature: [], loadedAt: 0))
        self.logger = logger
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

    /// The version of `school` in service; 0 while the folder's students are.
    package func version(of school: String) -> Int { loaded.withLock { $0.versions[school] ?? 0 } }

    /// Serves `versions` (in the order the roster log serves them) over
    /// what is served: each one other than its school's version in service
    /// replaces the school's students. Returns those refused and why (a school the
    /// folder does not have), each logged; the others apply.
    @discardableResult
    package func apply(_ versions: [RosterVersion]) -> [(version: RosterVersion, error: RosterError)] {
        building.withLock { _ in
            let (roster, known) = loaded.withLock { ($0.roster, $0.versions) }
            // The roster log hands each version over once, in the order it is served (a 진급 version
            // on its day, after later numbers): only the one in service again changes nothing.
            let fresh = versions.filter { $0.version != (known[$0.schoolId] ?? 0) }
            guard !fresh.isEmpty else { return [] }
            let (served, refused) = LiveRoster.overlaid(roster, fresh)
            let applied = fresh.filter { version in !refused.contains { $0.version == version } }
            loaded.withLock { loaded in
                loaded.roster = served
                for version in applied {
                    loaded.versions[version.schoolId] = version.version
                    if version.teachers != nil { loaded.teachersSet.insert(version.schoolId) }
                    loaded.tablesSet[version.schoolId, default: []].formUnion(version.tables.keys)
                }
            }
            for version in applied {
                metrics?.increment("roster_versions_applied_total", help: "Schools' roster versions put in service.")
                logger.info(
                    "roster version applied",
                    [
                        "school": version.schoolId, "version": String(version.version),
                        "students": version.students.map { String($0.count) } ?? "as they were"
                    ])
            }
            for (version, error) in refused {
                logger.error(
                    "ROSTER VERSION NOT APPLIED", ["school": version.schoolId, "version": String(version.version), "error": "\(error)"])
            }
            return refused
        }
    }

    /// `roster` with `versions` applied: all in one build, or, when one of
    /// them cannot be, one at a time, leaving out those that fail.
    private static func overlaid(
        _ roster: Roster, _ versions: [RosterVersion], departedFrom earlier: Roster? = nil
    ) -> (Roster, [(version: RosterVersion, error: RosterError)]) {
        if let all = try? roster.applying(versions, departedFrom: earlier) { return (all, []) }
        var served = roster
        var refused: [(version: RosterVersion, error: RosterError)] = []
        // The earlier roster's departed join at the first build; later ones carry them on.
        var earlier = earlier
        for version in versions {
            do throws(RosterError) {
                served = try served.applying([version], departedFrom: earlier)
                earlier = nil
            } catch {
                refused.append((version, error))
            }
        }
        return (served, refused)
    }

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
            building.withLock { _ in
                // Each school's version again over the folder read anew, its students as served now.
                let (numbers, teachersSet, tablesSet, served) = loaded.withLock {
                    ($0.versions, $0.teachersSet, $0.tablesSet, $0.roster)
                }
                let versions = numbers.sorted { $0.key < $1.key }.map { school, number in
                    RosterVersion(
                        schoolId: school, version: number, students: served.students(school: school),
                        teachers: teachersSet.contains(school) ? served.teachersBySchool[school] ?? [] : nil,
                        tables: Dictionary(uniqueKeysWithValues: (tablesSet[school] ?? []).map { ($0, served.table($0, of: school)) }),
                        madeBy: "", madeAt: "")
                }
                let (overlaid, refused) = LiveRoster.overlaid(roster, versions, departedFrom: served)
                for (version, error) in refused {
                    logger.error(
                        "ROSTER VERSION NOT APPLIED over the folder read again; the folder's students of the school are served",
                        ["school": version.schoolId, "version": String(version.version), "error": "\(error)"])
                }
                loaded.withLock { loaded in
                    let kept = loaded.versions.filter { school, _ in !refused.contains { $0.version.schoolId == school } }
                    loaded = Loaded(
                        roster: overlaid, versions: kept, teachersSet: loaded.teachersSet.filter { kept[$0] != nil },
                        tablesSet: loaded.tablesSet.filter { kept[$0.key] != nil }, signature: signature, loadedAt: clock())
                }
            }
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
