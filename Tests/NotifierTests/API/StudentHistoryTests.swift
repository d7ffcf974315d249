import Foundation
import Guidance
import Notifier
import TestSupport
import XCTest

/// A student's record (학생 기록): everything about one student for whoever
/// may see them, read through the app's ingest as the page reads it, and
/// each opening in the access record.
final class StudentHistoryTests: XCTestCase {
    var harness: NotifierHarness?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    func testTheRecordHoldsGuidancesDeletionsServiceAndCrossingsForWhoeverMaySeeTheStudent() async throws {
        let harness = try await NotifierHarness(
            authentication: true, rules: "school_id,reason,count,days,notify,label\nsa,*,2,7,admin,학생부장 상담 대상\n")
        self.harness = harness
        let notifier = try await harness.startIngest(notifierURL: harness.notifierBase)
        defer { Task { await notifier.shutdown() } }
        let app = "http://127.0.0.1:\(notifier.port)"
        let now = Date().timeIntervalSince1970
        let first = try await harness.register(
            grade: 1, classNumber: 1, number: 1, code: "others", detail: "길에 껌을 뱉음", at: Timestamp.format(now - 86_400), as: "t-gate")
        let second = try await harness.register(grade: 1, classNumber: 1, number: 1, at: Timestamp.format(now - 60), as: "t-gate")
        let third = try await harness.register(grade: 1, classNumber: 1, number: 1, at: Timestamp.format(now - 30), as: "t-gate")
        try await harness.delete(grade: 1, guidanceID: third, as: "t-gate")
        let served =
            #"{"serviceId":"\#(UUID().uuidString.lowercased())","date":"\#(Timestamp.localDate(now, in: TimeZone(identifier: "Asia/Seoul")!))","sessions":1,"note":"화단 정리"}"#
        let recorded = try await fetch(
            "POST", "\(app)/v1/schools/sa/grades/1/students/a111/service", body: served, headers: harness.headers("t-vd-1"))
        XCTAssertEqual(recorded.status, 202, recorded.text)

        let history = "\(app)/v1/schools/sa/students/a111/history"
        let record = try await eventually {
            try await fetch("GET", history, headers: harness.headers("t-hr-1-1"))
        } until: {
            $0.status == 200 && $0.object["guidances"]?[2]?["deletedBy"]?.string == "t-gate" && $0.object["services"]?[0] != nil
                && $0.object["crossings"]?[0] != nil
        }
        XCTAssertEqual(record.status, 200, record.text)
        let body = record.object
        XCTAssertEqual(body["student"]?["name"]?.string, "가가")
        XCTAssertEqual(body["student"]?["classNumber"]?.int, 1)
        guard case .array(let guidances)? = body["guidances"] else { return XCTFail(record.text) }
        XCTAssertEqual(guidances.map { $0["guidanceId"]?.string ?? "" }, [first, second, third], "oldest first, the deleted one too")
        XCTAssertEqual(guidances[0]["reason"]?["detail"]?.string, "길에 껌을 뱉음")
        XCTAssertEqual(guidances.map { $0["deletedBy"]?.string ?? "-" }, ["-", "-", "t-gate"])
        XCTAssertEqual(body["teachers"]?["t-gate"]?.string, "교문", "the recorder's name")
        XCTAssertEqual(body["service"]?["owed"]?.int, 2, "one session per active guidance")
        XCTAssertEqual(body["service"]?["served"]?.int, 1)
        XCTAssertEqual(body["services"]?[0]?["note"]?.string, "화단 정리")
        XCTAssertEqual(body["crossings"]?[0]?["label"]?.string, "학생부장 상담 대상")
        XCTAssertEqual(body["crossings"]?[0]?["active"], .bool(true), "two remain after the deletion")
        guard case .array(let counted)? = body["crossings"]?[0]?["guidanceIds"] else { return XCTFail(record.text) }
        XCTAssertEqual(counted.compactMap(\.string), [first, second])

        // The grade's volunteer-duty teacher and the admin too; not another class's teacher, not the gate.
        for (teacher, status) in [("t-vd-1", 200), ("t-admin", 200), ("t-hr-1-2", 403), ("t-gate", 403), ("t-hr-b", 403)] {
            let reply = try await fetch("GET", history, headers: harness.headers(teacher))
            XCTAssertEqual(reply.status, status, "\(teacher): \(reply.text)")
        }
        let unknown = try await fetch("GET", "\(app)/v1/schools/sa/students/nobody/history", headers: harness.headers("t-admin"))
        XCTAssertEqual(unknown.status, 404, unknown.text)
        let csv = try await fetch("GET", history, headers: harness.headers("t-hr-1-1").merging(["Accept": "text/csv"]) { $1 })
        XCTAssertEqual(csv.status, 200)
        XCTAssertEqual(csv.text.split(separator: "\r\n").count, 4, "a header and a row per guidance: \(csv.text)")
        XCTAssertTrue(csv.text.contains("길에 껌을 뱉음"))

        let opened = try await harness.accessLog("?action=history") { $0.count >= 4 }
        XCTAssertEqual(
            Set(opened.compactMap { $0["teacherId"]?.string }), ["t-hr-1-1", "t-vd-1", "t-admin"], "every opening, and only the allowed")
        XCTAssertEqual(Set(opened.compactMap { $0["target"]?.string }), ["a111"])
    }
}
