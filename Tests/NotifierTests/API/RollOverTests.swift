import Foundation
import Guidance
import Store
import Synchronization
import TestSupport
import XCTest

/// 진급 (issue 69): the new school year's students uploaded in February
/// with the day they take effect, on a moved clock. Until that day every
/// replica serves this year's seats; from it, the new ones, each replica
/// within a poll; what was recorded before keeps its seat and joins the
/// student's one record.
final class RollOverTests: XCTestCase {
    final class Now: Sendable { let time = Mutex(0.0) }
    var harness: NotifierHarness!
    let now = Now()

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    func at(_ instant: String) { now.time.withLock { $0 = Timestamp.parse(instant)! } }

    func testANewSchoolYearUploadedAheadIsServedFromItsDayAndHistoryKeepsItsSeats() async throws {
        at("2027-02-26T00:30:00Z")  // Friday 26 February, 09:30 in Seoul
        let now = self.now
        // Two records in a week flag a student: February's and March's are of two school years.
        harness = try await NotifierHarness(
            authentication: true, clock: { now.time.withLock { $0 } },
            rules: "school_id,reason,count,days,notify,label\nsa,*,2,7,admin,두 번 지도\n")
        let admin = harness.headers("t-admin")
        func lookUp(_ seat: String, base: String? = nil) async throws -> String? {
            try await fetch("GET", "\(base ?? harness.ingestBase)/v1/schools/sa/students/\(seat)", headers: harness.headers("t-gate"))
                .object["studentId"]?.string
        }
        try await harness.register(grade: 1, classNumber: 2, number: 1, at: "2027-02-26T00:20:00Z", as: "t-gate")
        // 라가 (3-1-1), who graduates.
        try await harness.register(grade: 3, classNumber: 1, number: 1, at: "2027-02-26T00:21:00Z", as: "t-gate")
        // 가가 (1-1-1), the day before: the session it owes the school closes at the roll-over (종결, with a reason).
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2027-02-25T00:20:00Z", as: "t-gate")

        // As NEIS gives it: names and new seats only. 나가 (1-2-1) becomes 2-1-7; 라가 (3-1-1) graduates.
        let file = Array(
            """
            학년,반,번호,성명
            1,1,1,신입생
            2,1,1,가가
            2,1,2,가나
            2,1,7,나가
            2,2,1,나나
            3,1,1,다가

            """.utf8)
        let headers = ["Authorization": "Bearer tok-t-admin", "Content-Type": "application/octet-stream"]
        let preview = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/roster/students/preview", bytes: file, headers: headers)
        XCTAssertEqual(preview.status, 200, preview.text)
        XCTAssertEqual(preview.object["promoted"]?.int, 5, preview.text)
        XCTAssertEqual(preview.object["graduates"]?[0]?["studentId"]?.string, "a311")
        XCTAssertEqual(preview.object["added"]?[0]?["name"]?.string, "신입생")
        // The school's choice for 가가's owed 봉사: closed, with the reason the 명단 shows in March.
        let closing = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/grades/1/students/a111/service",
            body:
                #"{"serviceId":"\#(UUID().uuidString.lowercased())","date":"2027-02-26","sessions":1,"outcome":"closed","note":"학년 말 정리"}"#,
            headers: admin)
        XCTAssertEqual(closing.status, 202, closing.text)
        let past = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/roster/students?basedOn=0&effective=2027-02-26", bytes: file, headers: headers)
        XCTAssertEqual(past.status, 422, "a day that is not after today: \(past.text)")
        let applied = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/roster/students?basedOn=0&effective=2027-03-02", bytes: file, headers: headers)
        XCTAssertEqual(applied.status, 200, applied.text)
        XCTAssertEqual(applied.object["effective"]?.string, "2027-03-02")

        // February still: this year's seats, and the version waits.
        let versions = try await fetch("GET", harness.ingestBase + "/v1/schools/sa/roster", headers: admin).object
        XCTAssertEqual(versions["version"]?.int, 0)
        XCTAssertEqual(versions["latest"]?.int, 1)
        XCTAssertEqual(versions["versions"]?[0]?["pending"], .bool(true))
        try await assertEqualAsync(try await lookUp("1/2/1"), "a121")
        // A change made meanwhile (a reason added) applies at once, and does not bring this year's students back in March.
        let reasons = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/roster/tables/reasons?basedOn=1",
            bytes: Array("code,label,requires_detail\nlate,지각,false\n".utf8), headers: headers)
        XCTAssertEqual(reasons.status, 200, reasons.text)
        try await assertEqualAsync(try await lookUp("1/2/1"), "a121")

        at("2027-03-01T23:10:00Z")  // Tuesday 2 March, 08:10 in Seoul: the first school day
        let served = try await eventually(within: .seconds(10)) { try await lookUp("2/1/7") == "a121" }
        XCTAssertTrue(served, "the ingest serves the new year on its day")
        try await assertEqualAsync(try await lookUp("3/1/1"), "a211", "다가 a grade up; 라가 graduated")
        try await assertEqualAsync(try await lookUp("1/1/1").map { $0.hasPrefix("s") }, true, "the newcomer at 1-1-1")
        try await harness.register(
            grade: 2, classNumber: 1, number: 7, code: "late", at: "2027-03-01T23:05:00Z", as: "t-gate")
        // A replica started now reads the versions at once and, once ready (as a load balancer sees it), serves the same.
        let later = try await harness.startIngest()
        defer { Task { await later.shutdown() } }
        let laterBase = "http://127.0.0.1:\(later.port)"
        let ready = try await eventually(within: .seconds(30)) { try await fetch("GET", laterBase + "/readyz").status == 200 }
        XCTAssertTrue(ready, "the later replica reads the roster log to its end")
        let caught = try await eventually(within: .seconds(10)) { try await lookUp("2/1/7", base: laterBase) == "a121" }
        XCTAssertTrue(caught, "a replica started after the day serves the new year")
        try await assertEqualAsync(
            try await fetch("GET", laterBase + "/v1/schools/sa/roster/tables/reasons", headers: admin).object["text"]?.string
                .map { $0.contains("late,지각,false") }, true)

        // February's list keeps the seat the student had; March's has the new one; the record has both.
        func seats(_ date: String) async throws -> [String] {
            _ = try await harness.waitForList(date: date, count: date == "2027-02-26" ? 2 : 1, as: "t-admin")
            guard case .array(let items)? = try await harness.list(date: date, as: "t-admin").object["items"] else { return [] }
            return items.map {
                "\($0["student"]?["grade"]?.int ?? 0)-\($0["student"]?["classNumber"]?.int ?? 0)-\($0["student"]?["number"]?.int ?? 0)"
            }
        }
        try await assertEqualAsync(try await seats("2027-02-26").sorted(), ["1-2-1", "3-1-1"])
        try await assertEqualAsync(try await seats("2027-03-02"), ["2-1-7"])
        // The rule's week does not reach back into last school year: no case yet; a second March record opens one.
        func open() async throws -> Int? {
            try await fetch("GET", harness.notifierBase + "/v1/schools/sa/cases?scope=school", headers: admin).object["counts"]?["open"]?
                .int
        }
        try await assertEqualAsync(try await open(), 0, "February's record and March's are of two school years")
        try await harness.register(grade: 2, classNumber: 1, number: 7, at: "2027-03-01T23:08:00Z", as: "t-gate")
        let crossed = try await eventually(within: .seconds(10)) { try await open() == 1 }
        XCTAssertTrue(crossed, "two records in March cross the rule")
        // 봉사 owed is the student's, not the seat's: February's carried into March's 명단, under the new grade.
        let owing = try await fetch("GET", harness.notifierBase + "/v1/schools/sa/service?grade=2&owing=true", headers: admin)
        guard case .array(let owed)? = owing.object["items"] else { return XCTFail(owing.text) }
        let account = owed.first { $0["student"]?["studentId"]?.string == "a121" }
        XCTAssertEqual(account?["student"]?["classNumber"]?.int, 1, owing.text)
        XCTAssertEqual(account?["owed"]?.int, 3, "February's session and March's two")
        let grade2 = try await fetch("GET", harness.notifierBase + "/v1/schools/sa/service?grade=2", headers: admin)
        guard case .array(let listed)? = grade2.object["items"] else { return XCTFail(grade2.text) }
        let closed = listed.first { $0["student"]?["studentId"]?.string == "a111" }
        XCTAssertEqual(closed?["student"]?["number"]?.int, 1, "가가 at 2-1-1: \(grade2.text)")
        XCTAssertEqual(["owed", "closed", "outstanding"].map { closed?[$0]?.int }, [1, 1, 0], grade2.text)
        XCTAssertEqual(closed?["services"]?[0]?["outcome"]?.string, "closed", grade2.text)
        XCTAssertEqual(closed?["services"]?[0]?["note"]?.string, "학년 말 정리", "a closed session shows its reason")
        let record = try await fetch("GET", harness.notifierBase + "/v1/schools/sa/students/a121/records", headers: admin)
        guard case .array(let guidances)? = record.object["guidances"] else { return XCTFail(record.text) }
        XCTAssertEqual(
            guidances.map { "\($0["student"]?["grade"]?.int ?? 0)-\($0["student"]?["classNumber"]?.int ?? 0)" }.sorted(),
            ["1-2", "2-1", "2-1"])

        // The graduate: in no March list, their record kept (not deleted at the roll-over) until retention's day.
        func graduate() async throws -> Int {
            try await fetch("GET", harness.notifierBase + "/v1/schools/sa/students/a311/records", headers: admin).status
        }
        try await assertEqualAsync(try await graduate(), 200)
        let store = try StoreLocation.sqlite(path: harness.directory.appendingPathComponent("notifier.db").path).open(clock: Timestamp.now)
        let retention = Retention()
        let march = Purger(
            store: store, retention: retention, clock: { Timestamp.parse("2027-03-02T00:00:00Z")! }, logger: quietLogger("purge"))
        _ = try march.purge(roster: harness.roster)
        try await assertEqualAsync(try await graduate(), 200, "a roll-over deletes nothing")
        let due = Timestamp.parse("2027-02-26T00:00:00Z")! + Double(retention.days + 2) * 86_400
        let purger = Purger(store: store, retention: retention, clock: { due }, logger: quietLogger("purge"))
        _ = try purger.purge(roster: harness.roster)
        try await assertEqualAsync(try await graduate(), 404, "purged on retention's day: no student, nothing stored")
    }
}
