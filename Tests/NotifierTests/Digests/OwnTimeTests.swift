import Foundation
import Guidance
import TestSupport
import XCTest

@testable import Notifier

/// A teacher's own time before the school's (issue 70: homeroom teachers
/// want the list before 조회): the list as it stands at their time, by
/// e-mail then, and what came after it as an 정정 at the school's time.
final class OwnTimeTests: XCTestCase {
    var harness: NotifierHarness?
    var sink: Counterpart?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
        sink?.stop()
        sink = nil
    }

    private func settings(_ harness: NotifierHarness, _ teacher: String, _ body: String) async throws -> Reply {
        try await fetch(
            "POST", "\(harness.notifierBase)/v1/teachers/\(teacher)/settings", body: body, headers: harness.headers(teacher))
    }

    private func mails(to teacher: String, _ records: [[String: Any]]) -> [[String: Any]] {
        records.filter { ($0["to"] as? [String]) == ["\(teacher)@sa.school.example"] }
    }

    func testATeacherWhoseTimeIsBeforeTheSchoolsGetsTheListThenAndTheRestAsAnAmendment() async throws {
        let sink = try Counterpart(interpreter: DeliveryTests.systemPython, script: "smtp-sink.py")
        try sink.start()
        self.sink = sink
        // Tuesday 24 November 2026, 07:30 in Seoul; the school's time is 08:50.
        let now = PushTests.Now("2026-11-23T22:30:00Z")
        let harness = try await NotifierHarness(
            authentication: true, clock: now.read, delivery: DeliveryTests.delivery(smtpPort: sink.port))
        self.harness = harness
        let runner = try XCTUnwrap(harness.notifier?.runner)

        let saved = try await settings(harness, "t-hr-1-1", #"{"listTime":"07:48"}"#)
        XCTAssertEqual(saved.status, 200, "a time before the school's is the teacher's to choose: \(saved.text)")
        XCTAssertEqual(saved.object["listTime"]?.string, "07:48")
        let early = try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-23T22:30:00Z", as: "t-gate")
        let colleague = try await harness.register(grade: 1, classNumber: 2, number: 1, at: "2026-11-23T22:31:00Z", as: "t-gate")
        _ = try await harness.waitForList(date: "2026-11-24", count: 2, as: "t-admin")

        now.set("2026-11-23T22:47:00Z")  // 07:47: not yet
        try await assertEqualAsync(await runner.runEarlyLists(), 0)
        try await assertEqualAsync(await harness.inbox("t-hr-1-1", signedIn: true).count, 0)

        now.set("2026-11-23T22:48:10Z")  // 07:48
        try await assertEqualAsync(await runner.runEarlyLists(), 1, "only the teacher who chose 07:48")
        let first = try await harness.inbox("t-hr-1-1", signedIn: true)
        XCTAssertEqual(first.count, 1, "\(first)")
        XCTAssertEqual(first.first?["revision"]?.int, 1)
        XCTAssertEqual(first.first?.entryChanges, ["\(early) added"])
        let mail = try await sink.waitFor { !self.mails(to: "t-hr-1-1", $0).isEmpty }
        XCTAssertEqual(mails(to: "t-hr-1-1", mail).first?["digestId"] as? String, first.first?["digestId"]?.string, "by e-mail at 07:48")
        try await assertEqualAsync(
            await harness.inbox("t-hr-1-2", signedIn: true).count, 0, "a colleague's list waits for the school's time")
        try await assertEqualAsync(await runner.runEarlyLists(), 0, "once a day")

        now.set("2026-11-23T22:50:00Z")  // 07:50: after the teacher's list
        let late = try await harness.register(grade: 1, classNumber: 1, number: 2, at: "2026-11-23T22:50:00Z", as: "t-gate")
        _ = try await harness.waitForList(date: "2026-11-24", count: 3, as: "t-admin")
        try await assertEqualAsync(await runner.runEarlyLists(), 0, "nothing again before the school's time")

        now.set("2026-11-23T23:50:10Z")  // 08:50: the school's run
        let made = await runner.runDueSchools()
        XCTAssertTrue(made.contains { $0.school == "sa" }, "\(made)")
        let after = try await harness.inbox("t-hr-1-1", signedIn: true)
        XCTAssertEqual(after.map { $0["revision"]?.int ?? 0 }, [2, 1], "\(after)")
        XCTAssertEqual(after.first?.entryChanges, ["\(late) added"], "the 정정 says only what came after 07:48")
        XCTAssertTrue((after.first?["subject"]?.string ?? "").contains("정정"), "\(after.first ?? .null)")
        let colleagues = try await harness.inbox("t-hr-1-2", signedIn: true)
        XCTAssertEqual(colleagues.map { $0["revision"]?.int ?? 0 }, [1])
        XCTAssertEqual(colleagues.first?.entryChanges, ["\(colleague) added"])
        let mails = try await sink.waitFor { self.mails(to: "t-hr-1-1", $0).count == 2 }
        XCTAssertEqual(self.mails(to: "t-hr-1-1", mails).last?["digestId"] as? String, after.first?["digestId"]?.string)
    }
}
