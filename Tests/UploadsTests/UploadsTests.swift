import Common
import Foundation
import Guidance
import Uploads
import XCTest

/// What a school uploads, made as the school's own tools make it: Korean
/// Excel's CSV in CP949 (Python's codec), an XLSX by openpyxl, a ZIP by
/// Python's zipfile; read into rows, and previewed against the roster.
final class UploadsTests: XCTestCase {
    static let schools = "school_id,name,timezone,digest_time\nsa,서울고,Asia/Seoul,08:50\nsb,부산고,Asia/Seoul,08:50\n"
    static let teachers = "school_id,teacher_id,name,email,role,grade,class\nsa,g1,Lee,g1@a.example,gate,,\n"
    /// Two schools with the same ids: an upload for one never reaches the other.
    static let students = """
        school_id,student_id,grade,class,number,name,photo_url
        sa,s10101,1,1,1,김민준,
        sa,s10102,1,1,2,이서연,
        sa,s10103,1,1,3,박지호,
        sa,s10104,1,1,4,최유나,
        sb,s10101,1,1,1,정하늘,
        """

    func testKoreanExcelsCSVInCP949WithATitleAboveTheHeaderIsReadAndPreviewed() throws {
        let csv = try make(
            """
            rows = ["2027학년도 학생 명부,,,", "학년,반,번호,성명", "1,1,1,김민준", "1,2,5,이서연", "1,1,3,박지후", "1,1,9,강하준", "1,일,4,오류"]
            out.write(("\\r\\n".join(rows) + "\\r\\n").encode("cp949"))
            """)
        XCTAssertNil(String(validating: csv, as: UTF8.self), "the file is CP949, not UTF-8")
        let rows = try UploadedTable.rows(of: csv, file: "명부.csv")
        XCTAssertEqual(rows.first?.fields, ["2027학년도 학생 명부", "", "", ""])
        XCTAssertEqual(rows[1].fields, ["학년", "반", "번호", "성명"])

        let roster = try Roster.parse(schools: Self.schools, students: Self.students, teachers: Self.teachers)
        let upload = try StudentsUpload.read(rows, school: "sa", current: roster)
        // 김민준 stays; 이서연 moved to 1-2-5; 박지호 at 1-1-3 is now 박지후 (a
        // new name in the same seat is a new student unless the file gives
        // ids), so 박지호 left; 강하준 is new; the last row is refused.
        XCTAssertEqual(upload.moved.map { "\($0.after.id) \($0.after.grade)-\($0.after.classNumber)-\($0.after.number)" }, ["s10102 1-2-5"])
        XCTAssertEqual(upload.added.map(\.name), ["박지후", "강하준"])
        XCTAssertEqual(Set(upload.left.map(\.id)), ["s10103", "s10104"])
        XCTAssertEqual(upload.refused, [StudentsUpload.Refused(line: 7, reason: "class '일' is not a positive whole number")])
        XCTAssertEqual(upload.students.map(\.name), ["김민준", "박지후", "강하준", "이서연"], "in seat order")
        XCTAssertTrue(upload.students.allSatisfy { $0.schoolID == "sa" })
        // Read again, the new students get the same ids: a preview and its apply agree.
        let again = try StudentsUpload.read(rows, school: "sa", current: roster)
        XCTAssertEqual(again.added.map(\.id), upload.added.map(\.id))
    }

    func testAnXLSXMadeByOpenpyxlWithIdsNumbersAndEmptyCellsIsRead() throws {
        let xlsx = try make(
            """
            import openpyxl
            book = openpyxl.Workbook()
            sheet = book.active
            sheet.title = "학생"
            sheet.append(["학생 명부"])
            sheet.append(["학생ID", "학년", "반", "번호", "성명", "비고"])
            sheet.append(["s10101", 1, 1, 1, "김민준", None])
            sheet.append(["s10104", 2, 3, 7, "최유나", "전학 예정"])
            sheet.append(["s10102", 1, 1, 2, "이서현", None])
            sheet.append(["s10103", 1, 1, 2, "박지호", None])
            book.create_sheet("다른 시트").append(["무시", "됨"])
            book.save(out)
            """)
        let rows = try UploadedTable.rows(of: xlsx, file: "명부.xlsx")
        XCTAssertEqual(rows.map(\.line), [1, 2, 3, 4, 5, 6], "the first sheet only, rows by their number")
        XCTAssertEqual(rows[2].fields, ["s10101", "1", "1", "1", "김민준"])
        XCTAssertEqual(rows[3].fields, ["s10104", "2", "3", "7", "최유나", "전학 예정"])

        let roster = try Roster.parse(schools: Self.schools, students: Self.students, teachers: Self.teachers)
        let upload = try StudentsUpload.read(rows, school: "sa", current: roster)
        XCTAssertEqual(upload.moved.map(\.after.id), ["s10104"])
        XCTAssertEqual(upload.renamed.map { "\($0.before.name)→\($0.after.name)" }, ["이서연→이서현"])
        XCTAssertEqual(upload.refused, [StudentsUpload.Refused(line: 6, reason: "1학년 1반 2번 is also on line 5")])
        XCTAssertEqual(upload.left.map(\.id), ["s10103"], "its row was refused: not listed")
        XCTAssertEqual(upload.added, [])
    }

    func testUTF8WithAndWithoutAByteOrderMarkAndWhatIsNeither() throws {
        let text = "grade,class,number,name\n1,1,1,김민준\n"
        for bytes in [Array(text.utf8), [0xEF, 0xBB, 0xBF] + Array(text.utf8)] {
            let rows = try UploadedTable.rows(of: bytes, file: "students.csv")
            XCTAssertEqual(rows.map(\.fields), [["grade", "class", "number", "name"], ["1", "1", "1", "김민준"]])
        }
        // Bytes that are not CP949 either.
        XCTAssertThrowsError(try UploadedTable.rows(of: [0x31, 0x2C, 0xFF, 0xFF, 0x0A], file: "x.csv")) { error in
            XCTAssertEqual((error as? UploadError)?.reason.hasPrefix("the file is neither UTF-8 nor Korean Excel's CSV"), true)
        }
        let roster = try Roster.parse(schools: Self.schools, students: Self.students, teachers: Self.teachers)
        XCTAssertThrowsError(
            try StudentsUpload.read(try UploadedTable.rows(of: Array("이름,나이\n김,3\n".utf8), file: "x.csv"), school: "sa", current: roster))
        // Rows shorter than the header (the name column far right, cells left out) are refused by line, not a crash.
        let short = try UploadedTable.rows(
            of: Array("비고,,,,,,,,,,학년,반,번호,성명\n,,,,,,,,,,1,1,1,김민준\n메모\n".utf8), file: "x.csv")
        let upload = try StudentsUpload.read(short, school: "sa", current: roster)
        XCTAssertEqual(upload.students.map(\.name), ["김민준"])
        XCTAssertEqual(upload.refused, [StudentsUpload.Refused(line: 3, reason: "grade '' is not a positive whole number")])
    }

    func testAZIPIsReadWithinItsLimitsAndWhatIsNoZIPIsSaidSo() throws {
        let zip = try make(
            """
            import zipfile, io
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("사진/10101.jpg", b"\\xff\\xd8" + bytes(1000))
                z.writestr("사진/", b"")
                z.writestr("s10102.png", b"\\x89PNG" + bytes(10))
                z.writestr("big.bin", bytes(3_000_000))
            """)
        let entries = try ZipArchive.entries(of: zip) { !$0.hasSuffix(".bin") }
        XCTAssertEqual(entries.map(\.name), ["사진/10101.jpg", "s10102.png"], "folders and the unwanted left out")
        XCTAssertEqual(entries.first?.bytes.count, 1002)
        XCTAssertThrowsError(try ZipArchive.entries(of: zip, limits: ZipArchive.Limits(bytes: 1 << 20))) { error in
            XCTAssertEqual((error as? UploadError)?.reason, "the ZIP file unpacks to more than 1 MiB")
        }
        XCTAssertThrowsError(try ZipArchive.entries(of: zip, limits: ZipArchive.Limits(entries: 2))) { error in
            XCTAssertEqual((error as? UploadError)?.reason, "the ZIP file holds more than 2 files")
        }
        XCTAssertThrowsError(try ZipArchive.entries(of: Array("not a zip".utf8)))
        // Korean Windows's own "compressed folder": CP949 names, no UTF-8 flag.
        let windows = try make(
            """
            import zipfile, io
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as z:
                z.writestr("NAME_PLACEHOLDER", b"photo")
            name = "김민준.jpg".encode("cp949")
            out.write(buffer.getvalue().replace(b"NAME_PLACEHOLDER", name.ljust(16, b"_")))
            """)
        XCTAssertEqual(try ZipArchive.entries(of: windows).map(\.name), ["김민준.jpg______"])
        XCTAssertThrowsError(try UploadedTable.rows(of: Array(zip.prefix(200)), file: "cut.xlsx"), "a cut workbook is refused")
    }

    func testHostileUploadsAreRefusedOrReadAsNamesOnly() throws {
        // A billion laughs in the shared strings: libxml2 refuses the expansion at once.
        let bomb = try make(
            """
            import openpyxl, zipfile, io
            buffer = io.BytesIO()
            book = openpyxl.Workbook()
            book.active.append(["학년", "반", "번호", "성명"])
            book.save(buffer)
            parts = {n: zipfile.ZipFile(buffer).read(n) for n in zipfile.ZipFile(buffer).namelist()}
            entities = '<!ENTITY l0 "lollollollollollollollollollol">' + "".join(
                '<!ENTITY l%d "%s">' % (i, ("&l%d;" % (i - 1)) * 10) for i in range(1, 10))
            parts["xl/sharedStrings.xml"] = ('<?xml version="1.0"?><!DOCTYPE s [' + entities + ']>'
                + '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>&l9;</t></si></sst>').encode()
            with zipfile.ZipFile(out, "w") as z:
                for name, data in parts.items():
                    z.writestr(name, data)
            """)
        XCTAssertThrowsError(try UploadedTable.rows(of: bomb, file: "bomb.xlsx")) { error in
            XCTAssertEqual((error as? UploadError)?.reason.hasPrefix("the workbook's XML cannot be read"), true, "\(error)")
        }
        // '../' and absolute names are names, never paths: nothing is written anywhere.
        let names = try make(
            """
            import zipfile
            with zipfile.ZipFile(out, "w") as z:
                z.writestr("../../etc/10101.jpg", b"a")
                z.writestr("/abs/10102.jpg", b"b")
                z.writestr("empty.jpg", b"")
            """)
        XCTAssertEqual(
            try ZipArchive.entries(of: names).map { "\($0.name) \($0.bytes.count)" },
            ["../../etc/10101.jpg 1", "/abs/10102.jpg 1", "empty.jpg 0"])
        // An empty file: no ZIP, and no table with a header.
        XCTAssertThrowsError(try ZipArchive.entries(of: [])) { XCTAssertEqual(($0 as? UploadError)?.reason, "not a ZIP file") }
        let roster = try Roster.parse(schools: Self.schools, students: Self.students, teachers: Self.teachers)
        XCTAssertThrowsError(try StudentsUpload.read(try UploadedTable.rows(of: [], file: "empty.csv"), school: "sa", current: roster))
    }

    /// The bytes a Python script writes to `out`, a binary file.
    private func make(_ script: String) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import sys\nout = open(sys.argv[1], 'wb')\n" + script + "\nout.close()", path]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "python3 (and python3-openpyxl, scripts/setup) made the file")
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// A school's applied students as the roster carries them: written and read
/// back whole, refused when broken, and served in place of that school's
/// students only (the other school's same ids untouched).
final class RosterVersionTests: XCTestCase {
    func testAnUploadBecomesAVersionThatReplacesOnlyItsSchoolsStudents() throws {
        let roster = try Roster.parse(schools: UploadsTests.schools, students: UploadsTests.students, teachers: UploadsTests.teachers)
        let rows = try UploadedTable.rows(of: Array("학년,반,번호,성명\n1,1,1,김민준\n1,2,5,이서연\n2,1,1,강하준\n".utf8), file: "명부.csv")
        let upload = try StudentsUpload.read(rows, school: "sa", current: roster)
        let version = RosterVersion(
            schoolId: "sa", version: 2, students: upload.students, madeBy: "t-admin", madeAt: "2027-03-02T07:00:00Z")
        let read = try RosterVersion(json: version.json)
        XCTAssertEqual(read, version)
        XCTAssertEqual(
            try RosterVersion(
                json: RosterVersion(
                    schoolId: "sa", version: 3, students: [], madeBy: "t", madeAt: "x", restores: 1
                ).json
            ).restores, 1)

        let applied = try roster.applying(read)
        XCTAssertEqual(applied.students(school: "sa").map(\.name), ["김민준", "이서연", "강하준"])
        XCTAssertEqual(applied.student(school: "sa", id: "s10102")?.classNumber, 2, "이서연 moved, her id kept")
        XCTAssertNil(applied.student(school: "sa", id: "s10103"), "박지호 left")
        XCTAssertTrue(applied.hasGrade(2, in: "sa"))
        XCTAssertEqual(applied.student(school: "sb", id: "s10101")?.name, "정하늘", "the other school's s10101 is untouched")
        XCTAssertEqual(applied.student(school: "sa", id: "s10101")?.name, "김민준")
        XCTAssertEqual(applied.studentCount, 4)
        XCTAssertEqual(roster.studentCount, 5, "the roster it was made from is unchanged")
    }

    func testABrokenVersionIsRefusedNamingTheField() {
        func refusal(_ json: String) -> String? {
            do {
                _ = try RosterVersion(json: Array(json.utf8))
                return nil
            } catch { return error.field }
        }
        let head = #"{"schemaVersion":1,"schoolId":"sa","version":2,"madeBy":"t","madeAt":"x","students":"#
        XCTAssertEqual(refusal(head + #"[{"studentId":"s1","grade":0,"class":1,"number":1,"name":"가"}]}"#), "students[0].grade")
        XCTAssertEqual(
            refusal(
                head
                    + #"[{"studentId":"s1","grade":1,"class":1,"number":1,"name":"가"},{"studentId":"s2","grade":1,"class":1,"number":1,"name":"나"}]}"#
            ),
            "students[1]", "a seat twice")
        XCTAssertEqual(refusal(head + #"{}}"#), "students")
        XCTAssertEqual(refusal(#"{"schemaVersion":9,"schoolId":"sa"}"#), "schemaVersion")
        XCTAssertNil(refusal(head + "[]}"), "a school may have no students")
    }
}
