import Common
import Crypto
import Foundation
import Guidance
import TestSupport
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
        let csv = try pythonMade(
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
        let xlsx = try pythonMade(
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
        let zip = try pythonMade(
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
        let windows = try pythonMade(
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
        let bomb = try pythonMade(
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
        let names = try pythonMade(
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
}

/// A school's applied students as the roster carries them: written and read
/// back whole, refused when broken, and served in place of that school's
/// students only (the other school's same ids untouched).
final class RosterVersionTests: XCTestCase {
    func testATeachersVersionReplacesTheSchoolsTeachersTheirTokensAndSignIns() throws {
        let teachers =
            "school_id,teacher_id,name,email,role,grade,class\nsa,g1,Lee,g1@a.example,gate,,\nsa,a1,Kim,a1@a.example,admin,,\nsb,b1,Park,b1@b.example,admin,,\n"
        let tokens =
            "token_sha256,teacher_id\n"
            + ["g1", "a1", "b1"].map { "\(SHA256.hex(SHA256.hash(utf8: "tok-\($0)"))),\($0)" }.joined(separator: "\n")
        let roster = try Roster.parse(schools: UploadsTests.schools, students: UploadsTests.students, teachers: teachers, tokens: tokens)
        let rows = try UploadedTable.rows(
            of: Array("성명,이메일,역할,학년,반\nKim,a1@a.example,관리,,\n최,choi@a.example,담임+교문,1,1\n".utf8), file: "t.csv")
        let upload = try TeachersUpload.read(rows, school: "sa", current: roster, uploader: "a1")
        XCTAssertNil(upload.problem)
        XCTAssertEqual(upload.left.map(\.id), ["g1"])
        XCTAssertEqual(upload.added.map(\.roles), [[.homeroom, .gate]])
        let version = RosterVersion(
            schoolId: "sa", version: 1, students: roster.students(school: "sa"), teachers: upload.teachers, madeBy: "a1", madeAt: "x")
        XCTAssertEqual(try RosterVersion(json: version.json), version, "teachers written and read back")
        let applied = try roster.applying(version)
        XCTAssertNil(applied.teacher(forToken: "tok-g1"), "a teacher who left signs in with no token")
        XCTAssertEqual(applied.teacher(forToken: "tok-a1")?.id, "a1")
        XCTAssertEqual(applied.teacher(forToken: "tok-b1")?.id, "b1", "another school's teachers are untouched")
        XCTAssertEqual(applied.teachers(withEmail: "CHOI@a.example").map(\.name), ["최"])
        XCTAssertTrue(applied.teachers(withEmail: "g1@a.example").isEmpty)
        XCTAssertEqual(applied.knownTeacher("g1")?.schoolID, "sa", "what g1 recorded before still names a teacher of sa")
        XCTAssertNil(applied.teachers["g1"])
        XCTAssertEqual(applied.students(school: "sa").count, 4)
        // An id of another school is refused by its row.
        let foreign = try TeachersUpload.read(
            try UploadedTable.rows(of: Array("teacher_id,name,role\na1,Kim,admin\nb1,Park,gate\n".utf8), file: "t.csv"), school: "sa",
            current: roster, uploader: "a1")
        XCTAssertEqual(foreign.refused.map(\.line), [3])
    }

    func testAVersionStaysOverTheFolderReadAgainAndItsLeaversStayKnown() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("versions-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(students: String) throws {
            for (name, text) in [("schools.csv", UploadsTests.schools), ("students.csv", students), ("teachers.csv", UploadsTests.teachers)]
            {
                try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
            }
        }
        try write(students: UploadsTests.students)
        let live = LiveRoster(
            directory: folder.path, roster: try Roster.load(from: folder.path), clock: { 0 }, logger: Logger(component: "test"),
            metrics: Metrics())
        let first = try RosterVersion(
            json: Array(
                #"{"schemaVersion":1,"schoolId":"sa","version":1,"madeBy":"t","madeAt":"x","students":[{"studentId":"s10102","grade":1,"class":2,"number":5,"name":"이서연"}]}"#
                    .utf8))
        XCTAssertTrue(live.apply([first]).isEmpty)
        XCTAssertEqual(live.version(of: "sa"), 1)
        // An older number, or the same again, changes nothing.
        XCTAssertTrue(live.apply([RosterVersion(schoolId: "sa", version: 1, students: [], madeBy: "t", madeAt: "x")]).isEmpty)
        XCTAssertEqual(live.current.students(school: "sa").map(\.id), ["s10102"])

        // The folder changes another school: read again, sa's version stays over it.
        try write(students: UploadsTests.students.replacingOccurrences(of: "정하늘", with: "정하람"))
        XCTAssertTrue(live.reload(because: "test"))
        XCTAssertEqual(live.current.student(school: "sb", id: "s10101")?.name, "정하람")
        XCTAssertEqual(live.current.students(school: "sa").map(\.id), ["s10102"], "the version stays over the folder")
        XCTAssertEqual(live.current.student(school: "sa", id: "s10102")?.classNumber, 2)
        XCTAssertEqual(live.version(of: "sa"), 1)
        // Those the version dropped are no student of the school's lists, but known by id to events recorded before it.
        XCTAssertNil(live.current.student(school: "sa", id: "s10101"))
        XCTAssertEqual(live.current.knownStudent(school: "sa", id: "s10101")?.number, 1)
        XCTAssertNil(live.current.knownStudent(school: "sb", id: "s10102"), "a departed id is its school's only")
    }

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

    /// A replica that starts reads every version at once; one that was
    /// running applied them one at a time. Both serve the same roster: the
    /// teachers and each table are the newest any version set, though the
    /// newest version (a students upload) sets neither.
    func testVersionsReadAtOnceServeWhatTheyServedOneAtATime() throws {
        let calendar = "school_id,date,end_date,name\n*,2026-12-25,,성탄절\nsa,2027-01-02,2027-01-05,겨울방학\n"
        let roster = try Roster.parse(
            schools: UploadsTests.schools, students: UploadsTests.students,
            teachers: UploadsTests.teachers + "sa,a1,Kim,a1@a.example,admin,,\n", calendar: calendar)
        let students = roster.students(school: "sa")
        let teachers = [
            Teacher(schoolID: "sa", id: "a1", name: "Kim", email: "a1@a.example", roles: [.admin], grade: nil, classNumber: nil)
        ]
        let slots = "weekday,time,place,capacity\nwed,16:00,도서관,8\n"
        let versions = [
            RosterVersion(schoolId: "sa", version: 1, students: students, teachers: teachers, madeBy: "a1", madeAt: "x"),
            RosterVersion(
                schoolId: "sa", version: 2, students: students,
                tables: [.serviceSlots: slots, .calendar: "date,end_date,name\n2027-03-01,,삼일절\n"],
                madeBy: "a1", madeAt: "x"),
            RosterVersion(schoolId: "sa", version: 3, students: Array(students.prefix(2)), madeBy: "a1", madeAt: "x")
        ]
        XCTAssertEqual(try RosterVersion(json: versions[1].json), versions[1], "tables written and read back")
        let atOnce = try roster.applying(versions)
        var oneByOne = roster
        for version in versions { oneByOne = try oneByOne.applying(version) }
        for served in [atOnce, oneByOne] {
            XCTAssertEqual(served.teachers(of: "sa", role: .gate).map(\.id), [], "version 1's teachers: g1 left")
            XCTAssertEqual(served.students(school: "sa").count, 2)
            XCTAssertEqual(served.table(.serviceSlots, of: "sa"), slots)
            XCTAssertEqual(served.school("sa")?.calendar.dayOff("2027-03-01"), "삼일절")
            XCTAssertNil(served.school("sa")?.calendar.dayOff("2026-12-25"), "the school's calendar replaces the folder's rows, * too")
            XCTAssertEqual(served.school("sb")?.calendar.dayOff("2026-12-25"), "성탄절", "another school keeps the folder's")
        }
        // The folder's calendar as the app shows it: a range is one row; read back, the same days.
        XCTAssertEqual(roster.table(.calendar, of: "sa"), "date,end_date,name\n2026-12-25,,성탄절\n2027-01-02,2027-01-05,겨울방학\n")
        let again = try roster.applying(
            RosterVersion(
                schoolId: "sa", version: 1, students: students, tables: [.calendar: roster.table(.calendar, of: "sa")], madeBy: "a1",
                madeAt: "x"))
        XCTAssertEqual(again.school("sa")?.calendar, roster.school("sa")?.calendar)
        // A row naming another school is refused by its line, as the file's would be.
        XCTAssertThrowsError(
            try roster.applying(
                RosterVersion(
                    schoolId: "sa", version: 4, students: students,
                    tables: [.serviceSlots: "school_id,weekday,time,place,capacity\nsb,mon,16:00,강당,5\n"],
                    madeBy: "a1", madeAt: "x"))
        ) { error in
            XCTAssertEqual((error as? RosterError)?.line, 2)
        }
    }

    /// A 진급 version's day stays with its school, and with its rules, when
    /// the folder is read again under the versions.
    func testANewYearsFirstDayStaysOverTheFolderReadAgain() throws {
        let folder = try Roster.parse(
            schools: UploadsTests.schools, students: UploadsTests.students, teachers: UploadsTests.teachers,
            rules: "school_id,reason,count,days,notify,label\nsa,*,2,7,admin,x\n")
        let students = folder.students(school: "sa")
        let served = try folder.applying(
            RosterVersion(schoolId: "sa", version: 1, students: students, effective: "2027-03-02", madeBy: "t", madeAt: "x"))
        let day = try XCTUnwrap(Timestamp.civilDay("2027-03-02"))
        XCTAssertEqual(served.school("sa")?.yearStarts, [day])
        let reloaded = try folder.applying(
            [RosterVersion(schoolId: "sa", version: 1, students: students, madeBy: "", madeAt: "")], departedFrom: served)
        XCTAssertEqual(reloaded.school("sa")?.yearStarts, [day])
        XCTAssertEqual(reloaded.rules["sa"]?.first?.yearStarts, [day], "the rule's window still starts on the new year")
        XCTAssertEqual(reloaded.school("sb")?.yearStarts, [])
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
