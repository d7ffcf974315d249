import Foundation
import Guidance
import Synchronization
import TestSupport
import XCTest

@testable import Notifier

/// The schedule, driven by a clock the test moves: each school's digests go
/// out once a day, after its digest time in its own time zone, across a day
/// change and the end of daylight saving time in Los Angeles.
final class ScheduleTests: XCTestCase {
    final class Clock: Sendable {
        let time = Mutex<Double>(0)
    }

    let clock = Clock()
    var harness: NotifierHarness!

    override func setUp() async throws {
        let clock = self.clock
        harness = try await NotifierHarness(clock: { clock.time.withLock { $0 } })
    }

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    /// Runs the schedule's check at `time` (RFC 3339) and returns what ran.
    private func check(at time: String) async throws -> [String] {
        clock.time.withLock { $0 = Timestamp.parse(time)! }
        let runner = try XCTUnwrap(harness.notifier?.runner)
        return await runner.runDueSchools().map { "\($0.school) \($0.date)" }
    }

    func testEachSchoolRunsOnceADayAfterItsDigestTimeInItsOwnZone() async throws {
        // sa: Asia/Seoul 08:50 (UTC+9). sb: America/Los_Angeles 07:30.
        // 2026-10-31 14:29Z is 23:29 in Seoul and 07:29 PDT in Los Angeles.
        try await assertEqualAsync(await check(at: "2026-10-31T14:29:00Z"), ["sa 2026-10-31"])
        try await assertEqualAsync(await check(at: "2026-10-31T14:31:00Z"), ["sb 2026-10-31"], "07:31 PDT")
        try await assertEqualAsync(await check(at: "2026-10-31T15:00:00Z"), [], "both ran today already")
        // After Seoul's midnight, before 08:50 there: nothing new.
        try await assertEqualAsync(await check(at: "2026-10-31T23:49:00Z"), [], "08:49 in Seoul")
        try await assertEqualAsync(await check(at: "2026-10-31T23:51:00Z"), ["sa 2026-11-01"], "08:51 in Seoul, the next day")
        // Daylight saving time ended in Los Angeles at 09:00Z on 1 November:
        // 14:31Z is now 06:31 PST, not yet the school's 07:30.
        try await assertEqualAsync(await check(at: "2026-11-01T14:31:00Z"), [], "06:31 PST")
        try await assertEqualAsync(await check(at: "2026-11-01T15:31:00Z"), ["sb 2026-11-01"], "07:31 PST")
        try await assertEqualAsync(await check(at: "2026-11-01T15:45:00Z"), [])
    }
}
