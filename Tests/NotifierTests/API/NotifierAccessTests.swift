import Foundation
import Guidance
import TestSupport
import XCTest

/// With tokens.csv: teachers read their own inbox and their own class or
/// grade; admins do everything in their school.
final class NotifierAccessTests: XCTestCase {
    var harness: NotifierHarness!

    override func setUp() async throws {
        harness = try await NotifierHarness(authentication: true)
    }

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    func status(_ method: String, _ path: String, as teacher: String?, body: String? = nil) async throws -> Int {
        try await fetch(method, harness.notifierBase + path, body: body, headers: harness.headers(teacher)).status
    }

    /// t-hr-1-2 is `homeroom+gate` (1학년 2반 담임 on gate duty): records at
    /// the gate, signs in on both pages, and reads their class, not more.
    func testAHomeroomTeacherOnGateDutyRecordsAtTheGateAndKeepsTheirClass() async throws {
        let body = #"{"student":{"grade":1,"classNumber":1,"number":1},"reason":{"code":"noShoes"},"occurredAt":"2026-11-20T23:30:00Z"}"#
        let registered = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/guidances", body: body, headers: harness.headers("t-hr-1-2"))
        XCTAssertEqual(registered.status, 202, registered.text)
        let listed = try await harness.waitForList(count: 1, as: "t-admin")
        XCTAssertEqual(listed.count, 1)
        for base in [harness.ingestBase, harness.notifierBase] {
            let signedIn = try await fetch(
                "POST", base + "/session", body: "token=tok-t-hr-1-2",
                headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": base])
            XCTAssertEqual(signedIn.status, 303, "\(base): \(signedIn.text.prefix(300))")
        }
        let day = "/v1/schools/sa/guidances?date=2026-11-21"
        try await assertEqualAsync(await status("GET", day + "&grade=1&classNumber=2", as: "t-hr-1-2"), 200)
        try await assertEqualAsync(await status("GET", day + "&grade=1&classNumber=1", as: "t-hr-1-2"), 403, "another class on another day")
        try await assertEqualAsync(await status("GET", "/v1/schools/sa/service?grade=1&class=2", as: "t-hr-1-2"), 200)
        try await assertEqualAsync(
            await status("GET", "/v1/schools/sa/service?grade=2", as: "t-hr-1-2"), 403, "gate duty gives no 봉사 명단 of the school")
        try await assertEqualAsync(await status("POST", "/v1/digests/run", as: "t-hr-1-2", body: #"{"schoolId":"sa"}"#), 403)
    }

    /// 명단조회 as in the notes: today every teacher of the school reads the
    /// school's day list (전체 / 우리 반 / 우리 학년), with photos only of the
    /// students the teacher may see; other days stay by role.
    func testEveryTeacherReadsTodaysSchoolListWithPhotosOnlyInTheirScope() async throws {
        let now = Timestamp.format(Timestamp.now())
        for (grade, classNumber) in [(1, 1), (2, 1)] {
            let body =
                #"{"student":{"grade":\#(grade),"classNumber":\#(classNumber),"number":1},"reason":{"code":"noShoes"},"occurredAt":"\#(now)"}"#
            let reply = try await fetch(
                "POST", harness.ingestBase + "/v1/schools/sa/guidances", body: body, headers: harness.headers("t-gate"))
            XCTAssertEqual(reply.status, 202, reply.text)
        }
        let items = try await eventually {
            let list = try await fetch(
                "GET", harness.notifierBase + "/v1/schools/sa/guidances?scope=school", headers: harness.headers("t-hr-1-1"))
            XCTAssertEqual(list.status, 200, list.text)
            guard case .array(let found)? = list.object["items"] else { return [] }
            return found
        } until: {
            $0.count == 2
        }
        XCTAssertEqual(items.count, 2, "the whole school today for a homeroom teacher")
        try await assertEqualAsync(await status("GET", "/v1/schools/sa/guidances?grade=2", as: "t-vd-1"), 200, "another grade today")
        try await assertEqualAsync(await status("GET", "/v1/schools/sa/guidances?scope=everything", as: "t-vd-1"), 400)
        try await assertEqualAsync(await status("GET", "/v1/schools/sb/guidances?scope=school", as: "t-hr-1-1"), 403, "not another school")
    }

    func testInboxListsAndRunsAreScopedToTheTeacher() async throws {
        try await harness.register(grade: 1, classNumber: 1, number: 1, as: "t-gate")
        let applied = try await harness.waitForList(count: 1, as: "t-admin")
        XCTAssertEqual(applied.count, 1, "the registration reaches the notifier")
        try await assertEqualAsync(await status("GET", "/v1/teachers/t-hr-1-1/inbox", as: nil), 401)
        try await assertEqualAsync(await status("GET", "/v1/teachers/t-hr-1-1/inbox", as: "t-hr-1-2"), 403)
        try await assertEqualAsync(await status("GET", "/v1/teachers/t-hr-1-1/inbox", as: "t-hr-b"), 403, "another school")
        try await assertEqualAsync(await status("GET", "/v1/teachers/t-hr-1-1/inbox", as: "t-hr-1-1"), 200)
        try await assertEqualAsync(await status("GET", "/v1/teachers/t-hr-1-1/inbox", as: "t-admin"), 200)
        // An id that does not exist answers as one that does: ids cannot be enumerated.
        try await assertEqualAsync(await status("GET", "/v1/teachers/nobody/inbox", as: "t-admin"), 403)
        try await assertEqualAsync(await status("GET", "/v1/teachers/nobody/inbox", as: "t-hr-1-2"), 403)
        try await assertEqualAsync(await status("GET", "/v1/teachers/t-hr-1-1/inbox?unread=yes", as: "t-hr-1-1"), 400)

        let day = "/v1/schools/sa/guidances?date=2026-11-21"
        try await assertEqualAsync(await status("GET", day + "&grade=1&classNumber=1", as: "t-hr-1-1"), 200)
        try await assertEqualAsync(await status("GET", day + "&grade=1&classNumber=2", as: "t-hr-1-1"), 403)
        // Without a filter, a teacher gets their own scope.
        for (teacher, count) in [("t-hr-1-1", 1), ("t-hr-1-2", 0), ("t-vd-1", 1)] {
            let list = try await fetch("GET", harness.notifierBase + day, headers: harness.headers(teacher))
            XCTAssertEqual(list.status, 200, list.text)
            guard case .array(let items)? = list.object["items"] else { return XCTFail(list.text) }
            XCTAssertEqual(items.count, count, "\(teacher): \(list.text)")
        }
        try await assertEqualAsync(await status("GET", day + "&grade=1", as: "t-vd-1"), 200)
        try await assertEqualAsync(await status("GET", day + "&grade=2", as: "t-vd-1"), 403)
        try await assertEqualAsync(await status("GET", day, as: "t-admin"), 200)
        try await assertEqualAsync(await status("GET", day, as: "t-gate"), 403)
        try await assertEqualAsync(await status("GET", "/v1/schools/sb/guidances?date=2026-11-21", as: "t-admin"), 403)
        // A school that does not exist answers as another school does: ids cannot be probed.
        try await assertEqualAsync(await status("GET", "/v1/schools/no-such-school/guidances?date=2026-11-21", as: "t-admin"), 403)
        try await assertEqualAsync(await status("POST", "/v1/digests/run", as: "t-admin", body: #"{"schoolId":"no-such-school"}"#), 403)

        let run = #"{"schoolId":"sa","date":"2026-11-21"}"#
        try await assertEqualAsync(await status("POST", "/v1/digests/run", as: "t-hr-1-1", body: run), 403)
        try await assertEqualAsync(
            await status("POST", "/v1/digests/run", as: "t-admin", body: #"{"schoolId":"sb","date":"2026-11-21"}"#), 403)
        try await assertEqualAsync(await status("POST", "/v1/digests/run", as: "t-admin", body: run), 200)

        let inbox = try await fetch("GET", harness.notifierBase + "/v1/teachers/t-hr-1-1/inbox", headers: harness.headers("t-hr-1-1"))
        guard case .array(let items) = inbox.object["items"], let digestID = items.first?["digestId"]?.string else {
            return XCTFail(inbox.text)
        }
        XCTAssertEqual(inbox.object["unreadCount"]?.int, 1)
        try await assertEqualAsync(await status("POST", "/v1/teachers/t-hr-1-1/inbox/\(digestID)/read", as: "t-hr-1-2"), 403)
        // An admin may read a teacher's 알림함, not mark it read: what is unread is the teacher's to know.
        try await assertEqualAsync(await status("POST", "/v1/teachers/t-hr-1-1/inbox/\(digestID)/read", as: "t-admin"), 403)
        let stillUnread = try await fetch("GET", harness.notifierBase + "/v1/teachers/t-hr-1-1/inbox", headers: harness.headers("t-admin"))
        XCTAssertEqual(stillUnread.object["unreadCount"]?.int, 1, "the admin's attempt changed nothing")
        try await assertEqualAsync(await status("POST", "/v1/teachers/t-hr-1-1/inbox/\(digestID)/read", as: "t-hr-1-1"), 204)
        try await assertEqualAsync(await status("POST", "/v1/teachers/t-hr-1-1/inbox/missing/read", as: "t-hr-1-1"), 404)
        let unread = try await fetch(
            "GET", harness.notifierBase + "/v1/teachers/t-hr-1-1/inbox?unread=true", headers: harness.headers("t-hr-1-1"))
        XCTAssertEqual(unread.object["unreadCount"]?.int, 0)
        XCTAssertEqual(unread.object["items"], .array([]))
    }
}
