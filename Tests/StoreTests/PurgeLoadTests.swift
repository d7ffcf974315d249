import Dispatch
import Foundation
import Guidance
import Synchronization
import XCTest

@testable import Store

/// A purge of a large old day while registrations keep coming: each batch
/// holds the writer briefly, so the registrations' apply latency stays far
/// below what one big DELETE would hold. Prints its numbers.
final class PurgeLoadTests: XCTestCase {
    func testAPurgeOfALargeTableKeepsApplyLatencyBounded() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purge-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLStore.sqlite(path: directory.appendingPathComponent("test.db").path, clock: Timestamp.now)
        let suite = StoreSuite { store }
        let old = 100_000
        for chunk in stride(from: 0, to: old, by: 5000) {
            _ = try store.apply(
                (chunk..<chunk + 5000).map { .registered(suite.record("old-\($0)", number: $0 % 30 + 1, date: "2025-01-0\($0 % 9 + 1)")) })
        }
        let stop = Atomic<Bool>(false)
        let latencies = Mutex<[Double]>([])
        let done = DispatchSemaphore(value: 0)
        let warmedUp = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var batch = 0
            while !stop.load(ordering: .relaxed) {
                let events = (0..<50).map {
                    StoredEvent.registered(suite.record("new-\(batch)-\($0)", number: $0 % 30 + 1, date: "2026-11-30"))
                }
                let started = DispatchTime.now().uptimeNanoseconds
                _ = try? store.apply(events)
                let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000
                latencies.withLock { $0.append(milliseconds) }
                batch += 1
                if batch == 20 { warmedUp.signal() }
                // The pace of a busy morning's batches: the load under test.
                usleep(5_000)
            }
            done.signal()
        }
        warmedUp.wait()
        let baseline = latencies.withLock { $0 }
        let started = DispatchTime.now().uptimeNanoseconds
        let report = try store.purge([PurgeCut(school: "sa", firstKeptDay: "2026-01-01", before: 0, accessLogBefore: 0)], dryRun: false)
        let purgeSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let during = latencies.withLock { $0 }.dropFirst(baseline.count).sorted()
        stop.store(true, ordering: .relaxed)
        done.wait()
        XCTAssertEqual(report.removed["guidances"], old)
        XCTAssertFalse(during.isEmpty)
        let p99 = during[min(during.count - 1, during.count * 99 / 100)]
        let worst = during.last ?? 0
        print(
            "purge of \(old) guidances: \(String(format: "%.2f", purgeSeconds)) s in \(report.batches) batches, longest batch "
                + "\(String(format: "%.1f", report.longestBatchMilliseconds)) ms; 50-event applies meanwhile: \(during.count), "
                + "p50 \(String(format: "%.1f", during[during.count / 2])) ms, p99 \(String(format: "%.1f", p99)) ms, max \(String(format: "%.1f", worst)) ms "
                + "(before the purge: max \(String(format: "%.1f", baseline.max() ?? 0)) ms)")
        // Relative, not a wall-clock bound (the machine is shared): the
        // purge went in batches of at most 5,000 rows, never one DELETE,
        // and no apply waited for more than a quarter of the purge.
        XCTAssertGreaterThanOrEqual(report.batches, old / 5_000, "the purge went in batches")
        XCTAssertLessThan(worst, purgeSeconds * 1000 / 4, "an apply waits for a batch, not for the purge")
        XCTAssertEqual(
            try store.guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil).count % 50, 0, "every apply went through")
    }
}
