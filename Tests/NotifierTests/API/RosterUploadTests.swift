import Foundation
import Guidance
import Ingest
import TestSupport
import XCTest

/// 관리 → 명부 through the API: a school's admin uploads its students as
/// Korean Excel saves them (CP949 CSV) or as an XLSX, sees exactly what
/// would change, applies it, and every replica of both services serves the
/// new version with no shared folder (the roster log); an earlier version
/// is put back; another school with the same ids is untouched; and a
/// registration recorded before a student left is stored.
final class RosterUploadTests: XCTestCase {
    var harness: NotifierHarness!

    override func setUp() async throws {
        harness = try await NotifierHarness(authentication: true)
    }

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    private func post(_ path: String, _ bytes: [UInt8], base: String? = nil, as teacher: String = "t-admin") async throws -> Reply {
        try await fetch(
            "POST", (base ?? harness.ingestBase) + path, bytes: bytes,
            headers: ["Authorization": "Bearer tok-\(teacher)", "Content-Type": "application/octet-stream"])
    }

    private func lookUp(_ base: String, school: String = "sa", _ seat: String, as teacher: String = "t-gate") async throws -> Reply {
        try await fetch("GET", "\(base)/v1/schools/\(school)/students/\(seat)", headers: ["Authorization": "Bearer tok-\(teacher)"])
    }

    private func seats(_ items: AnyCodable?) -> [String] {
        guard case .array(let items)? = items else { return [] }
        return items.map { item in
            let student = item["after"] ?? item
            return [
                student["studentId"]?.string ?? "?",
                "\(student["grade"]?.int ?? 0)-\(student["class"]?.int ?? 0)-\(student["number"]?.int ?? 0)"
            ].joined(separator: " ")
        }
    }

    func testAnUploadIsPreviewedAppliedOnEveryReplicaAndPutBack() async throws {
        // A second ingest replica beside the harness's: its own roster, no folder shared.
        let second = try await harness.startIngest()
        defer { Task { await second.shutdown() } }
        let secondBase = "http://127.0.0.1:\(second.port)"
        // Recorded at 3-1-1 before the upload that drops the student.
        _ = try await harness.register(grade: 3, classNumber: 1, number: 1, at: "2026-11-20T23:30:00Z", as: "t-gate")

        // As Korean Excel saves it: CP949, a title row, 가가 moved to 1-2-3, a
        // new student at 2-1-2, 라가 (3-1-1) left out, and a broken row.
        func csv(broken: Bool) throws -> [UInt8] {
            let rows =
                ["2027학년도 명부,,,", "학년,반,번호,성명", "1,2,3,가가", "1,1,2,가나", "1,2,1,나가", "1,2,2,나나", "2,1,1,다가", "2,1,2,새학생"]
                + (broken ? ["2,일,3,오류"] : [])
            return try pythonMade("out.write(('\\r\\n'.join(\(rows)) + '\\r\\n').encode('cp949'))")
        }
        let preview = try await post("/v1/schools/sa/roster/students/preview", try csv(broken: true))
        XCTAssertEqual(preview.status, 200, preview.text)
        XCTAssertEqual(preview.object["basedOn"]?.int, 0)
        XCTAssertEqual(seats(preview.object["added"]), ["\(StudentsUpload.madeID(school: "sa", name: "새학생", seat: "2-1-2")) 2-1-2"])
        XCTAssertEqual(seats(preview.object["left"]), ["a311 3-1-1"])
        XCTAssertEqual(seats(preview.object["moved"]), ["a111 1-2-3"])
        XCTAssertEqual(seats(preview.object["renamed"]), [])
        guard case .array(let refused)? = preview.object["refused"] else { return XCTFail(preview.text) }
        XCTAssertEqual(refused.map { $0["line"]?.int }, [9])
        // Nothing applied by a preview; a file with refused rows applies nothing.
        try await assertEqualAsync(try await lookUp(harness.ingestBase, "1/1/1").object["studentId"]?.string, "a111")
        let refusedApply = try await post("/v1/schools/sa/roster/students?basedOn=0", try csv(broken: true))
        XCTAssertEqual(refusedApply.status, 422, refusedApply.text)
        // Only the school's admin: its gate teacher and another school's admin are refused.
        let byGate = try await post("/v1/schools/sa/roster/students/preview", try csv(broken: false), as: "t-gate")
        XCTAssertEqual(byGate.status, 403, byGate.text)

        let applied = try await post("/v1/schools/sa/roster/students?basedOn=0", try csv(broken: false))
        XCTAssertEqual(applied.status, 200, applied.text)
        XCTAssertEqual(applied.object["version"]?.int, 1)
        // The same preview applied again is stale: the roster is version 1 now.
        let stale = try await post("/v1/schools/sa/roster/students?basedOn=0", try csv(broken: false))
        XCTAssertEqual(stale.status, 409, stale.text)

        // The other ingest replica, which shares nothing with the first but the broker, serves it.
        let served = try await eventually(within: .seconds(10)) {
            try await self.lookUp(secondBase, "2/1/2").object["name"]?.string == "새학생"
        }
        XCTAssertTrue(served, "the second replica did not serve the new version")
        try await assertEqualAsync(try await lookUp(secondBase, "1/2/3").object["studentId"]?.string, "a111")
        try await assertEqualAsync(try await lookUp(secondBase, "3/1/1").status, 404)
        // A registration at the new seat, through the other replica, is stored under it.
        let newcomer = try await fetch(
            "POST", secondBase + "/v1/schools/sa/guidances",
            body:
                #"{"student":{"grade":2,"classNumber":1,"number":2},"reason":{"code":"noShoes"},"recordedBy":"t-gate","occurredAt":"2026-11-20T23:40:00Z"}"#,
            headers: harness.headers("t-gate"))
        XCTAssertEqual(newcomer.status, 202, newcomer.text)
        let listed = try await harness.waitForList(date: "2026-11-21", count: 2, as: "t-admin")
        XCTAssertEqual(listed.count, 2, "the registration before the student left and the newcomer's are both stored")
        let list = try await harness.list(date: "2026-11-21", as: "t-admin")
        XCTAssertTrue(list.text.contains("새학생") && list.text.contains("라가"), list.text)

        // A second version from an XLSX (openpyxl), then version 1 put back.
        let xlsx = try pythonMade(
            """
            import openpyxl, io
            book = openpyxl.Workbook(); sheet = book.active
            for row in [["학년", "반", "번호", "성명"], [1, 1, 1, "가가"], [1, 1, 2, "가나"]]: sheet.append(row)
            buffer = io.BytesIO(); book.save(buffer); out.write(buffer.getvalue())
            """)
        let second2 = try await post("/v1/schools/sa/roster/students?basedOn=1", xlsx)
        XCTAssertEqual(second2.status, 200, second2.text)
        XCTAssertEqual(second2.object["version"]?.int, 2)
        try await assertEqualAsync(try await lookUp(harness.ingestBase, "1/1/1").object["studentId"]?.string, "a111")
        let restored = try await post("/v1/schools/sa/roster/versions/1/restore?basedOn=2", [], base: secondBase)
        XCTAssertEqual(restored.status, 200, restored.text)
        XCTAssertEqual(restored.object["version"]?.int, 3)
        XCTAssertEqual(restored.object["restores"]?.int, 1)
        let back = try await eventually(within: .seconds(10)) {
            try await self.lookUp(self.harness.ingestBase, "2/1/2").object["name"]?.string == "새학생"
        }
        XCTAssertTrue(back, "version 1's students were not put back")
        let history = try await fetch("GET", harness.ingestBase + "/v1/schools/sa/roster", headers: harness.headers("t-admin"))
        XCTAssertEqual(history.object["version"]?.int, 3)
        guard case .array(let versions)? = history.object["versions"] else { return XCTFail(history.text) }
        XCTAssertEqual(versions.map { $0["version"]?.int }, [3, 2, 1])
        XCTAssertEqual(versions.map { $0["madeBy"]?.string }, ["t-admin", "t-admin", "t-admin"])
    }

    func testASchoolsVersionNeverReachesAnotherSchoolWithTheSameIDs() async throws {
        // School sb's admin is not sa's: give sb its own upload with sa's ids.
        let csv = Array("student_id,grade,class,number,name\na111,1,1,1,Other\na112,1,1,2,Another\n".utf8)
        let foreign = try await post("/v1/schools/sb/roster/students/preview", csv)
        XCTAssertEqual(foreign.status, 403, "sa's admin previewing sb: \(foreign.text)")
        let applied = try await post("/v1/schools/sa/roster/students?basedOn=0", Array("학년,반,번호,성명\n1,1,1,가가\n".utf8))
        XCTAssertEqual(applied.status, 200, applied.text)
        let sb = try await lookUp(harness.ingestBase, school: "sb", "1/1/1", as: "t-gate-b")
        XCTAssertEqual(sb.object["studentId"]?.string, "b111", sb.text)
        XCTAssertEqual(sb.object["name"]?.string, "Ana")
        try await assertEqualAsync(try await lookUp(harness.ingestBase, "1/1/2").status, 404)
    }

    func testTwoAdminsApplyingAtOnceOnTwoReplicasMakeOneVersion() async throws {
        let second = try await harness.startIngest()
        defer { Task { await second.shutdown() } }
        let bases = [harness.ingestBase, "http://127.0.0.1:\(second.port)"]
        let files = ["학년,반,번호,성명\n1,1,1,가가\n", "학년,반,번호,성명\n1,1,1,가가\n1,1,2,가나\n"].map { Array($0.utf8) }
        let headers = ["Authorization": "Bearer tok-t-admin", "Content-Type": "application/octet-stream"]
        async let one = fetch("POST", bases[0] + "/v1/schools/sa/roster/students?basedOn=0", bytes: files[0], headers: headers)
        async let other = fetch("POST", bases[1] + "/v1/schools/sa/roster/students?basedOn=0", bytes: files[1], headers: headers)
        let answers = try await [one, other]
        XCTAssertEqual(answers.map(\.status).sorted(), [200, 409], answers.map(\.text).joined(separator: " | "))
        let winner = answers.firstIndex { $0.status == 200 }!
        // Both replicas serve the winner's students, as version 1, and list one version.
        for base in bases {
            let listed = try await eventually(within: .seconds(10)) {
                try await fetch("GET", base + "/v1/schools/sa/roster", headers: self.harness.headers("t-admin")).object
            } until: {
                $0["version"]?.int == 1
            }
            XCTAssertEqual(listed["students"]?.int, winner + 1, "the winner's file on \(base)")
            guard case .array(let versions)? = listed["versions"] else { return XCTFail("no versions on \(base)") }
            XCTAssertEqual(versions.count, 1)
        }
    }

    func testTeachersArePreviewedAndAppliedAndThoseWhoLeftCanNoLongerSignIn() async throws {
        // Recorded by a homeroom-and-gate teacher who is about to leave the school's list.
        let recorded = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/guidances",
            body: #"{"student":{"grade":1,"classNumber":2,"number":1},"reason":{"code":"noShoes"},"occurredAt":"2026-11-20T23:30:00Z"}"#,
            headers: harness.headers("t-hr-1-2"))
        XCTAssertEqual(recorded.status, 202, recorded.text)
        let rows = [
            "성명,이메일,역할,학년,반", "관리,,관리,,", "교문,,교문,,", "담임11,t-hr-1-1@sa.school.example,담임,1,2",
            "새선생,new@sa.school.example,담임+교문,1,1", "봉사1,t-vd-1@sa.school.example,봉사 담당,1,"
        ]
        let file = { (extra: [String]) in Array((rows + extra).joined(separator: "\r\n").utf8) }
        let preview = try await post("/v1/schools/sa/roster/teachers/preview", file(["이상한,,청소,,"]))
        XCTAssertEqual(preview.status, 200, preview.text)
        func ids(_ key: String) -> [String] {
            guard case .array(let items)? = preview.object[key] else { return [] }
            return items.compactMap { ($0["after"] ?? $0)["teacherId"]?.string }.sorted()
        }
        XCTAssertEqual(ids("added"), [TeachersUpload.madeID(school: "sa", key: "new@sa.school.example")])
        XCTAssertEqual(ids("left"), ["t-hr-1-2", "t-hr-2-1", "t-hr-3-1", "t-vd-2", "t-vd-3"])
        XCTAssertEqual(ids("changed"), ["t-hr-1-1"], "담임11 moves to 1-2; 봉사1, 교문 and 관리 are as they were")
        guard case .array(let refused)? = preview.object["refused"] else { return XCTFail(preview.text) }
        XCTAssertEqual(refused.map { $0["line"]?.int }, [7])
        XCTAssertEqual(preview.object["problem"], .null)
        try await assertEqualAsync(try await post("/v1/schools/sa/roster/teachers?basedOn=0", file(["이상한,,청소,,"])).status, 422)
        // The admin uploading may not drop their own 관리.
        let own = Array(rows.map { $0.replacingOccurrences(of: "관리,,관리,,", with: "관리,,교문,,") }.joined(separator: "\n").utf8)
        let withoutAdmin = try await post("/v1/schools/sa/roster/teachers/preview", own)
        XCTAssertNotEqual(withoutAdmin.object["problem"], .null, withoutAdmin.text)
        try await assertEqualAsync(try await post("/v1/schools/sa/roster/teachers?basedOn=0", own).status, 422)

        let applied = try await post("/v1/schools/sa/roster/teachers?basedOn=0", file([]))
        XCTAssertEqual(applied.status, 200, applied.text)
        // A teacher who left: their token signs in nowhere; one who stayed still works.
        let lookUp = { (teacher: String) in
            try await fetch(
                "GET", "\(self.harness.ingestBase)/v1/schools/sa/students/1/1/1", headers: ["Authorization": "Bearer tok-\(teacher)"])
        }
        try await assertEqualAsync(try await lookUp("t-hr-1-2").status, 401)
        try await assertEqualAsync(try await lookUp("t-gate").status, 200)
        // What they recorded before leaving is kept.
        let listed = try await harness.waitForList(date: "2026-11-21", count: 1, as: "t-admin")
        XCTAssertEqual(listed.count, 1)
        // The students are as they were: the version set the teachers only.
        try await assertEqualAsync(try await lookUp("t-gate").object["studentId"]?.string, "a111")
    }

    /// 학교 설정: the school's reasons and rules edited as tables, each
    /// checked as its file is; applied, a reason the school added is
    /// recorded at the gate and counted by its rule on the notifier, a
    /// replica started later serves the same tables, and a student upload
    /// after them keeps them.
    func testTheSchoolsTablesArePreviewedAppliedAndServedByBothServices() async throws {
        let admin = harness.headers("t-admin")
        func table(_ name: String, base: String? = nil) async throws -> String {
            let reply = try await fetch("GET", (base ?? harness.ingestBase) + "/v1/schools/sa/roster/tables/\(name)", headers: admin)
            XCTAssertEqual(reply.status, 200, reply.text)
            return reply.object["text"]?.string ?? ""
        }
        func lines(_ reply: Reply, _ key: String) -> [String] {
            guard case .array(let items)? = reply.object[key] else { return [] }
            return items.map { $0.string ?? $0["line"]?.int.map(String.init) ?? "?" }
        }
        try await assertEqualAsync(try await table("reasons"), "code,label,requires_detail,service_sessions\n")
        try await assertEqualAsync(try await post("/v1/schools/sa/roster/tables/reasons/preview", []).status, 422, "no body")
        try await assertEqualAsync(
            try await fetch("GET", harness.ingestBase + "/v1/schools/sa/roster/tables/reasons", headers: harness.headers("t-gate")).status,
            403)
        // Not a reason of the school yet.
        let early = try await fetch(
            "POST", harness.ingestBase + "/v1/schools/sa/guidances",
            body: #"{"student":{"grade":1,"classNumber":1,"number":1},"reason":{"code":"late"}}"#, headers: harness.headers("t-gate"))
        XCTAssertEqual(early.status, 422, early.text)

        let reasons = Array("code,label,requires_detail,service_sessions\nlate,지각,false,2\n".utf8)
        let previewed = try await post("/v1/schools/sa/roster/tables/reasons/preview", reasons)
        XCTAssertEqual(previewed.status, 200, previewed.text)
        XCTAssertEqual(lines(previewed, "added"), ["late · 지각 · false · 2"])
        XCTAssertEqual(lines(previewed, "refused"), [])
        let applied = try await post("/v1/schools/sa/roster/tables/reasons?basedOn=0", reasons)
        XCTAssertEqual(applied.status, 200, applied.text)
        // A rule naming a reason the school does not have is refused with its line, as rules.csv's is.
        let rules = "reason,count,days,notify,label\nlate,2,7,homeroom+admin,지각 2회\nmissing,2,7,admin,없는 사유\n"
        let badRules = try await post("/v1/schools/sa/roster/tables/rules/preview", Array(rules.utf8))
        XCTAssertEqual(lines(badRules, "refused"), ["3"], badRules.text)
        try await assertEqualAsync(try await post("/v1/schools/sa/roster/tables/rules?basedOn=1", Array(rules.utf8)).status, 422)
        let good = Array(rules.split(separator: "\n").dropLast().joined(separator: "\n").utf8)
        let ruled = try await post("/v1/schools/sa/roster/tables/rules?basedOn=1", good)
        XCTAssertEqual(ruled.status, 200, ruled.text)
        // The rule now counts `late`: the reasons table can no longer drop it.
        let dropping = try await post("/v1/schools/sa/roster/tables/reasons/preview", Array("code,label\n".utf8))
        XCTAssertEqual(lines(dropping, "refused").count, 1, dropping.text)

        // Recorded twice with the new reason: the ingest takes it, the notifier lists it by its label and the rule opens a case.
        let now = Date().timeIntervalSince1970
        for hoursAgo in [26.0, 1] {
            try await harness.register(
                grade: 1, classNumber: 1, number: 1, code: "late", at: Timestamp.format(now - hoursAgo * 3600), as: "t-gate")
        }
        let opened = try await eventually(within: .seconds(10)) {
            try await fetch("GET", "\(self.harness.notifierBase)/v1/schools/sa/cases?scope=school", headers: admin).object
        } until: {
            $0["counts"]?["open"]?.int == 1
        }
        XCTAssertEqual(opened["cases"]?[0]?["label"]?.string, "지각 2회", "the notifier applies the school's rule")

        // A student upload after the tables keeps them; a replica started now reads them from the log.
        let students = try await post("/v1/schools/sa/roster/students?basedOn=2", Array("학년,반,번호,성명\n1,1,1,가가\n".utf8))
        XCTAssertEqual(students.status, 200, students.text)
        let later = try await harness.startIngest()
        defer { Task { await later.shutdown() } }
        let laterBase = "http://127.0.0.1:\(later.port)"
        let served = try await eventually(within: .seconds(10)) {
            try await fetch("GET", laterBase + "/v1/schools/sa/roster", headers: admin).object["version"]?.int == 3
        }
        XCTAssertTrue(served)
        for name in ["reasons", "rules"] {
            try await assertEqualAsync(try await table(name, base: laterBase), try await table(name))
        }
        let rulesNow = try await table("rules")
        XCTAssertTrue(rulesNow.contains("late,2,7,homeroom+admin,지각 2회,false"), rulesNow)
        let history = try await fetch("GET", harness.ingestBase + "/v1/schools/sa/roster", headers: admin)
        guard case .array(let versions)? = history.object["versions"] else { return XCTFail(history.text) }
        XCTAssertEqual(versions.map { $0["tables"]?[0]?.string ?? "-" }, ["-", "rules", "reasons"])
    }

    func testAZIPOfPhotosIsMatchedByStudentNumberOrIDMadeSmallAndServed() async throws {
        // A school-size portrait (no real person) under a 학번 and an id, beside what is no photo of the school.
        let portrait = FileManager.default.temporaryDirectory.appendingPathComponent("portrait-\(UUID()).png")
        try Data(PNG.noisy(width: 600, height: 800)).write(to: portrait)
        defer { try? FileManager.default.removeItem(at: portrait) }
        let zip = try pythonMade(
            """
            import zipfile
            photo = open("\(portrait.path)", "rb").read()
            with zipfile.ZipFile(out, "w") as z:
                z.writestr("사진/10102.jpg", photo)
                z.writestr("사진/a111.png", photo)
                z.writestr("사진/a121.jpg", b"not an image at all")
                z.writestr("사진/99999.jpg", photo)
                z.writestr("사진/명단.txt", "학번")
                z.writestr("__MACOSX/사진/._10102.jpg", b"junk")
            """)
        let preview = try await post("/v1/schools/sa/roster/photos/preview", zip)
        XCTAssertEqual(preview.status, 200, preview.text)
        XCTAssertEqual(seats(preview.object["matched"]).sorted(), ["a111 1-1-1", "a112 1-1-2"])
        guard case .array(let refused)? = preview.object["refused"] else { return XCTFail(preview.text) }
        XCTAssertEqual(refused.compactMap { $0["file"]?.string }.sorted(), ["99999.jpg", "a121.jpg", "명단.txt"])
        XCTAssertEqual(seats(preview.object["withoutPhoto"]).count, 4, "sa's other students have no photo")
        // A preview publishes nothing.
        try await assertEqualAsync(try await photo("a111").status, 404)

        let applied = try await post("/v1/schools/sa/roster/photos", zip)
        XCTAssertEqual(applied.status, 200, applied.text)
        let served = try await photo("a112")
        XCTAssertEqual(served.status, 200, served.text)
        XCTAssertEqual(served.header("Content-Type"), "image/jpeg")
        let size = jpegSize(Array(served.body))
        XCTAssertTrue(size.map { $0.width <= 300 && $0.height <= 400 } ?? false, "made the size the app shows: \(String(describing: size))")
        try await assertEqualAsync(try await photo("a111").status, 200)
        // Another school's student with the same id is another child: sb's gate teacher reaches no sa photo.
        try await assertEqualAsync(try await photo("a111", school: "sb", as: "t-gate-b").status, 404)
    }

    private func photo(_ student: String, school: String = "sa", as teacher: String = "t-gate") async throws -> Reply {
        try await fetch(
            "GET", "\(harness.ingestBase)/v1/schools/\(school)/students/\(student)/photo",
            headers: ["Authorization": "Bearer tok-\(teacher)"])
    }
}
