import Common
import Foundation
import Guidance

/// Removes what is past its retention (docs/guarantees.md, "Data protection"): school
/// days older than `RETENTION_DAYS` (guidances, digests, their deliveries,
/// run records, pending amendments), tombstones as old, and access records
/// older than `ACCESS_LOG_DAYS`. The schedule runs it once a UTC day, on the
/// first tick after 18:00 UTC (03:00 in Seoul), on whichever replica claims
/// the day first; `guidance-admin purge` runs the same now.
package struct Purger: Sendable {
    let store: SQLStore
    let retention: Retention
    let clock: @Sendable () -> Double
    let logger: Logger

    /// The hour (UTC) from which the day's purge may run.
    static let hour = 18

    package init(store: SQLStore, retention: Retention, clock: @escaping @Sendable () -> Double, logger: Logger) {
        self.store = store
        self.retention = retention
        self.clock = clock
        self.logger = logger
    }

    /// Each school's cut now: the roster's schools in their zones, and any
    /// other school the store holds in UTC.
    package func cuts(roster: Roster) throws(StoreError) -> [PurgeCut] {
        let now = clock()
        let stored = try store.schoolsStored()
        let ids = Set(stored).union(roster.schools.keys).sorted()
        return ids.compactMap { id in
            let zone = roster.school(id)?.timeZone ?? .gmt
            guard let kept = retention.firstKeptDay(today: Timestamp.localDate(now, in: zone)) else { return nil }
            return PurgeCut(
                school: id, firstKeptDay: kept, before: now - Double(retention.days) * 86_400,
                accessLogBefore: now - Double(retention.accessLogDays) * 86_400)
        }
    }

    /// Purges now (or, `dryRun`, counts what would go) and logs what went.
    package func purge(roster: Roster, dryRun: Bool = false) throws(StoreError) -> (PurgeReport, oldestKept: String?) {
        let cuts = try cuts(roster: roster)
        let report = try store.purge(cuts, dryRun: dryRun)
        let oldest = cuts.map(\.firstKeptDay).min()
        var fields = report.removed.sorted { $0.key < $1.key }.map { ($0.key, String($0.value)) }
        fields += [
            ("oldest_day_kept", oldest ?? "-"), ("batches", String(report.batches)),
            ("longest_batch_ms", String(Int(report.longestBatchMilliseconds.rounded(.up))))
        ]
        logger.info(
            dryRun ? "purge (dry run): what would be removed" : "purged what is past its retention",
            Dictionary(uniqueKeysWithValues: fields))
        return (report, oldest)
    }

    /// The daily purge, when it is due and this replica claims the day;
    /// returns the UTC day it asked the store about, so the next tick of
    /// that day (`checked`) asks nothing.
    package func runIfDue(roster: Roster, checked: Int?) async -> Int? {
        let now = clock()
        let (day, minute) = Timestamp.local(now, in: .gmt)
        guard minute >= Purger.hour * 60, day != checked else { return checked }
        let store = self.store
        do {
            let claimed = try await store.blocking { try store.claimPurge(day: Timestamp.dateString(civil: day), now: now) }
            if claimed { _ = try await store.blocking { try self.purge(roster: roster) } }
            return day
        } catch {
            logger.warning(
                "the daily purge did not finish; it runs again tomorrow, or now with guidance-admin purge", ["error": "\(error)"])
            return day
        }
    }
}
