import Crypto
import Foundation
import Guidance
import XCTest

final class RosterTests: XCTestCase {
    let schools = "school_id,name,timezone,digest_time\nsa,School A,Asia/Seoul,08:50\nsb,School B,America/Los_Angeles,07:30\n"
    let teachers =
        "school_id,teacher_id,name,email,role,grade,class\nsa,t1,Kim,t1@a.example,homeroom,1,2\nsa,g1,Lee,g1@a.example,gate,,\nsb,g2,Park,g2@b.example,gate,,\n"

    func testReadsQuotedCommasBOMAndCRLFAndColumnsByName() throws {
        let students =
            "\u{FEFF}name,school_id,student_id,grade,class,number,photo_url\r\n\"Kim, \"\"Minji\"\"\",sa,s1,1,2,3,https://p/1.jpg\r\nLee,sa,s2,1,2,4,\r\n"
        let roster = try Roster.parse(schools: schools, students: students, teachers: teachers)
        let student = try XCTUnwrap(roster.student(school: "sa", grade: 1, classNumber: 2, number: 3))
        XCTAssertEqual(student.name, "Kim, \"Minji\"")
        XCTAssertEqual(student.id, "s1")
        XCTAssertEqual(student.photoURL, "https://p/1.jpg")
        XCTAssertEqual(roster.student(school: "sa", grade: 1, classNumber: 2, number: 4)?.name, "Lee")
        XCTAssertEqual(roster.school("sb")?.timeZone.identifier, "America/Los_Angeles")
        XCTAssertEqual(roster.school("sa")?.digestMinute, 8 * 60 + 50)
        XCTAssertFalse(roster.authenticationEnabled)
    }

    func testPhotoURLsComeBackExactlyAsListed() throws {
        // Stored as a shared directory plus a file name; every shape must
        // round-trip unchanged.
        let urls = [
            "https://photos.example/sa/s1.jpg", "https://photos.example/sa/s2.jpg", "https://cdn.example/other/s3.png",
            "https://s4.jpg", "", "https://photos.example/sa/", "https://photos.example/사진/김.jpg?v=2", "https://"
        ]
        var students = "school_id,student_id,grade,class,number,name,photo_url\n"
        for (index, url) in urls.enumerated() { students += "sa,s\(index),1,1,\(index + 1),Kim,\(url)\n" }
        let roster = try Roster.parse(schools: schools, students: students, teachers: teachers)
        for (index, url) in urls.enumerated() {
            XCTAssertEqual(roster.student(school: "sa", grade: 1, classNumber: 1, number: index + 1)?.photoURL, url)
        }
    }

    func testWebhooksAreReadPerSchoolAndBadRowsNameTheLineWithoutTheSecret() throws {
        let students = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2,3,Kim,\n"
        let key = Data((0..<24).map { UInt8($0) })
        let secret = "whsec_" + key.base64EncodedString()
        let roster = try Roster.parse(
            schools: schools, students: students, teachers: teachers,
            webhooks: "school_id,url,secret\nsa,https://hooks.example/guidance,\(secret)\n")
        XCTAssertEqual(roster.webhooks["sa"]?.url, "https://hooks.example/guidance")
        XCTAssertEqual(roster.webhooks["sa"]?.secret, Array(key))
        XCTAssertNil(roster.webhooks["sb"])
        let cases = [
            ("sa,ftp://hooks.example/x,\(secret)", "webhooks.csv:2: url 'ftp://hooks.example/x' is not an http:// or https:// URL"),
            ("sx,https://hooks.example/x,\(secret)", "webhooks.csv:2: unknown school 'sx'"),
            (
                "sa,https://hooks.example/x,whsec_c2hvcnQ=",
                "webhooks.csv:2: secret must be whsec_ followed by the base64 of at least 16 random bytes"
            ),
            (
                "sa,https://hooks.example/x,\(secret.dropFirst(6))",
                "webhooks.csv:2: secret must be whsec_ followed by the base64 of at least 16 random bytes"
            ),
            (
                "sa,https://hooks.example/x,\(secret)\nsa,https://hooks.example/y,\(secret)",
                "webhooks.csv:3: school 'sa' has a webhook already; one per school"
            )
        ]
        for (rows, message) in cases {
            XCTAssertThrowsError(
                try Roster.parse(schools: schools, students: students, teachers: teachers, webhooks: "school_id,url,secret\n\(rows)\n")
            ) { error in
                XCTAssertEqual("\(error)", message)
                XCTAssertFalse("\(error)".contains(key.base64EncodedString()), "the secret was echoed")
            }
        }
    }

    /// A photo is loaded by teachers' browsers: only https addresses.
    func testAPhotoURLThatIsNotHTTPSIsRefusedWithItsLine() {
        for url in ["javascript:alert(8)", "http://photos.example/s1.jpg", "\"data:image/png;base64,AAAA\"", "s1.jpg"] {
            let students = "school_id,student_id,grade,class,number,name,photo_url\nsa,s0,1,2,2,Lee,\nsa,s1,1,2,3,Kim,\(url)\n"
            assertRejected(students: students, "students.csv:3: photo_url must be empty or an https:// address")
        }
    }

    /// `service_sessions` is optional (1), per reason, 0–10; a default reason listed again takes the school's number.
    func testReasonsCarryTheirServiceSessions() throws {
        let students = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2,3,Kim,\n"
        let reasons =
            "school_id,code,label,requires_detail,service_sessions\nsa,trespassing,무단횡단,false,2\nsa,late,지각,false,\nsa,free,면제,false,0\n"
        let roster = try Roster.parse(schools: schools, students: students, teachers: teachers, reasons: reasons)
        let school = try XCTUnwrap(roster.school("sa"))
        XCTAssertEqual(school.reason("trespassing")?.serviceSessions, 2)
        XCTAssertEqual(school.reason("late")?.serviceSessions, 1)
        XCTAssertEqual(school.reason("free")?.serviceSessions, 0)
        XCTAssertEqual(school.reason("noShoes")?.serviceSessions, 1)
        XCTAssertEqual(roster.school("sb")?.reason("trespassing")?.serviceSessions, 1, "another school keeps the default")
        let old = try Roster.parse(
            schools: schools, students: students, teachers: teachers, reasons: "school_id,code,label,requires_detail\nsa,late,지각,false\n")
        XCTAssertEqual(old.school("sa")?.reason("late")?.serviceSessions, 1, "a reasons.csv without the column")
        for bad in ["11", "-1", "two"] {
            XCTAssertThrowsError(
                try Roster.parse(
                    schools: schools, students: students, teachers: teachers,
                    reasons: "school_id,code,label,requires_detail,service_sessions\nsa,late,지각,false,\(bad)\n")
            ) { error in
                XCTAssertEqual("\(error)", "reasons.csv:2: service_sessions '\(bad)' is not a whole number from 0 to 10")
            }
        }
    }

    func testRulesAreReadPerSchoolAndBadRowsNameTheLine() throws {
        let students = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2,3,Kim,\n"
        let header = "school_id,reason,count,days,notify,label,urgent\n"
        let roster = try Roster.parse(
            schools: schools, students: students, teachers: teachers,
            rules: header + "sa,*,10,30,homeroom+admin,선도위원회 검토 대상,true\nsa,noShoes,3,7,volunteer_duty,실내화 반복,\n")
        XCTAssertEqual(
            roster.rules["sa"],
            [
                SchoolRule(
                    schoolID: "sa", reason: nil, count: 10, days: 30, notify: [.homeroom, .admin], label: "선도위원회 검토 대상", urgent: true),
                SchoolRule(schoolID: "sa", reason: "noShoes", count: 3, days: 7, notify: [.volunteerDuty], label: "실내화 반복")
            ])
        XCTAssertEqual(roster.rules["sa"]?.map(\.key), ["*/10/30", "noShoes/3/7"])
        XCTAssertEqual(roster.rules["sa"]?.first?.notifyText, "homeroom+admin")
        XCTAssertNil(roster.rules["sb"])
        for (row, message) in [
            ("sx,*,3,7,admin,x,", "unknown school 'sx'"),
            (
                "sa,late,3,7,admin,x,",
                "reason 'late' is not a reason of school 'sa' (its codes: wrongClothes, noShoes, trespassing, others; * for any)"
            ),
            ("sa,*,1,7,admin,x,", "count '1' is not a whole number from 2 to 100"),
            ("sa,*,3,366,admin,x,", "days '366' is not a whole number from 1 to 365"),
            (
                "sa,*,3,7,gate,x,",
                "notify 'gate' is not one of homeroom, volunteer_duty, admin (several are joined by +, e.g. homeroom+admin)"
            ),
            ("sa,*,3,7,admin+admin,x,", "notify 'admin' is given twice"),
            ("sa,*,3,7,admin,,", "label is empty"),
            ("sa,*,3,7,admin,x,maybe", "urgent 'maybe' is not true or false"),
            ("sa,*,3,7,homeroom,y,", "school 'sa' has a rule for * 3 in 7 days already")
        ] {
            XCTAssertThrowsError(
                try Roster.parse(
                    schools: schools, students: students, teachers: teachers, rules: header + "sa,*,3,7,admin,x,\n" + row + "\n")
            ) { error in
                XCTAssertEqual("\(error)", "rules.csv:3: \(message)")
            }
        }
    }

    /// 3 in 7 days: a crossing counts records no earlier crossing counted,
    /// within the window; other reasons and records outside it do not count.
    func testARuleIsCrossedByItsCountWithinItsDaysOncePerNewRecords() {
        let rule = SchoolRule(schoolID: "sa", reason: "noShoes", count: 3, days: 7, notify: [.admin], label: "x")
        func records(_ days: [(String, String)]) -> [SchoolRule.Counted] {
            days.enumerated().map { SchoolRule.Counted(guidanceId: "g\($0.offset)", date: $0.element.0, reasonCode: $0.element.1) }
        }
        func crossed(_ days: [(String, String)], by rule: SchoolRule) -> [[String]] {
            rule.crossings(of: records(days)).map { $0.map(\.guidanceId) }
        }
        let week = [("2026-12-01", "noShoes"), ("2026-12-02", "noShoes"), ("2026-12-07", "noShoes")]
        XCTAssertEqual(crossed(week, by: rule), [["g0", "g1", "g2"]], "the 1st to the 7th is 7 days")
        XCTAssertEqual(crossed([("2026-11-30", "noShoes")] + week.dropFirst(), by: rule), [], "the 30th to the 7th is 8")
        XCTAssertEqual(crossed([week[0], ("2026-12-01", "wrongClothes"), week[1], week[2]], by: rule), [["g0", "g2", "g3"]])
        let any = SchoolRule(schoolID: "sa", reason: nil, count: 3, days: 7, notify: [.admin], label: "x")
        XCTAssertEqual(crossed([week[0], ("2026-12-01", "wrongClothes"), week[1]], by: any), [["g0", "g1", "g2"]])
        let seven = Array(repeating: ("2026-12-03", "noShoes"), count: 7)
        XCTAssertEqual(crossed(seven, by: rule), [["g0", "g1", "g2"], ["g3", "g4", "g5"]], "again after 3 more, not at the 4th")
    }

    /// A new school year (진급 served on 2027-03-02) starts the window again,
    /// unless the rule says `across_years`.
    func testARulesWindowStartsAgainWithANewSchoolYear() throws {
        var rule = SchoolRule(schoolID: "sa", reason: nil, count: 2, days: 7, notify: [.admin], label: "x")
        rule.yearStarts = [try XCTUnwrap(Timestamp.civilDay("2027-03-02"))]
        let records = ["2027-02-26", "2027-03-02", "2027-03-03"].enumerated().map {
            SchoolRule.Counted(guidanceId: "g\($0.offset)", date: $0.element, reasonCode: "noShoes")
        }
        XCTAssertEqual(rule.crossings(of: records).map { $0.map(\.guidanceId) }, [["g1", "g2"]], "February's is last year's")
        rule.acrossYears = true
        XCTAssertEqual(rule.crossings(of: records).map { $0.map(\.guidanceId) }, [["g0", "g1"]])
        // As rules.csv says it, and as the app's table writes it back.
        let roster = try Roster.parse(
            schools: "school_id,name,timezone,digest_time\nsa,A,Asia/Seoul,08:50\n",
            students: "school_id,student_id,grade,class,number,name,photo_url\n",
            teachers: "school_id,teacher_id,name,email,role,grade,class\n",
            rules: "school_id,reason,count,days,notify,label,across_years\nsa,*,2,7,admin,x,true\n")
        XCTAssertEqual(roster.rules["sa"]?.first?.acrossYears, true)
        XCTAssertTrue(roster.table(.rules, of: "sa").hasSuffix("*,2,7,admin,x,false,true\n"))
    }

    func testMissingColumnNamesFileAndColumn() {
        let students = "school_id,student_id,grade,number,name,photo_url\nsa,s1,1,3,Kim,\n"
        assertRejected(students: students, "students.csv:1: missing column 'class'")
    }

    /// Rows in any order, two schools, seats that differ in one part only:
    /// each seat and each id finds its own student, an empty seat none.
    func testEverySeatAndIdFindsItsStudentWhateverTheRowOrder() throws {
        var rows: [(school: String, grade: Int, classNumber: Int, number: Int)] = []
        for school in ["sa", "sb"] {
            for grade in 1...3 {
                for classNumber in [1, 2, 10, 300] {
                    for number in [1, 2, 30, 65535] { rows.append((school, grade, classNumber, number)) }
                }
            }
        }
        var generator = SystemRandomNumberGenerator()
        rows.shuffle(using: &generator)
        func id(_ row: (school: String, grade: Int, classNumber: Int, number: Int)) -> String {
            "\(row.school)-\(row.grade)-\(row.classNumber)-\(row.number)"
        }
        let students =
            "school_id,student_id,grade,class,number,name,photo_url\n"
            + rows.map { "\($0.school),\(id($0)),\($0.grade),\($0.classNumber),\($0.number),N \(id($0)),https://p/\(id($0)).jpg\n" }
            .joined()
        let roster = try Roster.parse(schools: schools, students: students, teachers: teachers)
        XCTAssertEqual(roster.studentCount, rows.count)
        for row in rows {
            let student = try XCTUnwrap(
                roster.student(school: row.school, grade: row.grade, classNumber: row.classNumber, number: row.number))
            XCTAssertEqual(student.id, id(row))
            XCTAssertEqual(student.name, "N \(id(row))")
            XCTAssertEqual(student.photoURL, "https://p/\(id(row)).jpg")
            XCTAssertEqual(roster.student(school: row.school, id: id(row))?.number, row.number)
        }
        for (school, grade, classNumber, number) in [
            ("sa", 1, 1, 3), ("sa", 4, 1, 1), ("sc", 1, 1, 1), ("sb", 3, 300, 65534), ("sa", 1, 3, 1)
        ] {
            XCTAssertNil(roster.student(school: school, grade: grade, classNumber: classNumber, number: number))
        }
        XCTAssertNil(roster.student(school: "sb", id: "sa-1-1-1"), "an id of another school")
        XCTAssertEqual(roster.seats(school: "sb").map(\.grade), [1, 2, 3])
        XCTAssertEqual(roster.seats(school: "sb")[0].classes.map(\.classNumber), [1, 2, 10, 300])
        XCTAssertEqual(roster.seats(school: "sb")[0].classes[3].numbers, [1, 2, 30, 65535])
        XCTAssertEqual(
            roster.students(school: "sa", grade: 2, classNumber: 300).map(\.id),
            ["sa-2-300-1", "sa-2-300-2", "sa-2-300-30", "sa-2-300-65535"])
        XCTAssertEqual(roster.students(school: "sa", grade: 2, classNumber: 3).count, 0, "no such class")
        XCTAssertEqual(roster.students(school: "sc", grade: 2, classNumber: 300).count, 0, "no such school")
    }

    func testDuplicateStudentNamesTheLine() {
        let students = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2,3,Kim,\nsa,s2,1,2,4,Lee,\nsa,s1,1,2,5,Park,\n"
        assertRejected(students: students, "students.csv:4: student 's1' is listed twice")
        let sameSeat = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2,3,Kim,\nsa,s2,1,2,3,Lee,\n"
        assertRejected(students: sameSeat, "students.csv:3: grade 1 class 2 number 3 is already student 's1'")
    }

    func testBadGradeAndBrokenRowsNameTheLine() {
        let badGrade = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2,3,Kim,\nsa,s2,first,2,4,Lee,\n"
        assertRejected(students: badGrade, "students.csv:3: grade 'first' is not a positive whole number")
        let shortRow = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2\n"
        assertRejected(students: shortRow, "students.csv:2: 4 fields, the header has 7")
        let openQuote = "school_id,student_id,grade,class,number,name,photo_url\nsa,s1,1,2,3,\"Kim,\n"
        assertRejected(students: openQuote, "students.csv:2: a quoted field is never closed")
        let badZone = "school_id,name,timezone,digest_time\nsa,A,Mars/Olympus,08:50\n"
        assertRejected(
            schools: badZone, students: "school_id,student_id,grade,class,number,name,photo_url\n",
            "schools.csv:2: unknown time zone 'Mars/Olympus'")
        let homeroomWithoutClass = "school_id,teacher_id,name,email,role,grade,class\nsa,t1,Kim,,homeroom,1,\n"
        assertRejected(
            students: "school_id,student_id,grade,class,number,name,photo_url\n", teachers: homeroomWithoutClass,
            "teachers.csv:2: a homeroom teacher needs grade and class")
    }

    /// `role` takes several roles joined by `+`; grade and class apply to
    /// the homeroom and volunteer-duty roles; one role per row stays valid.
    func testATeacherMayHoldSeveralRoles() throws {
        let teachers =
            "school_id,teacher_id,name,email,role,grade,class\n"
            + "sa,t1,Kim,,homeroom+gate,1,2\nsa,t2,Lee,,volunteer_duty+gate,3,\nsa,g1,Park,,gate,,\nsa,a1,Choi,,gate+admin,2,4\n"
        let roster = try Roster.parse(
            schools: schools, students: "school_id,student_id,grade,class,number,name,photo_url\n", teachers: teachers)
        let kim = try XCTUnwrap(roster.teachers["t1"])
        XCTAssertEqual(kim.roles, [.homeroom, .gate])
        XCTAssertEqual([kim.grade, kim.classNumber], [1, 2])
        XCTAssertEqual(kim.roleText, "homeroom+gate")
        XCTAssertEqual(roster.teachers["t2"]?.roles, [.volunteerDuty, .gate])
        XCTAssertEqual(roster.teachers["t2"]?.classNumber, nil, "class is a homeroom teacher's only")
        XCTAssertEqual(roster.teachers["g1"]?.roles, [.gate])
        XCTAssertEqual(roster.teachers["a1"]?.grade, nil, "grade and class mean nothing for gate and admin")
        XCTAssertEqual(roster.teachers(of: "sa", role: .homeroom).map(\.id), ["t1"], "digests still go by role")
        XCTAssertEqual(Set(roster.teachers(of: "sa", role: .gate).map(\.id)), ["t1", "t2", "g1", "a1"])

        let header = "school_id,teacher_id,name,email,role,grade,class\n"
        let none = "school_id,student_id,grade,class,number,name,photo_url\n"
        assertRejected(
            students: none, teachers: header + "sa,t1,Kim,,homeroom+janitor,1,2\n",
            "teachers.csv:2: role 'janitor' is not one of homeroom (담임), volunteer_duty (봉사), gate (교문), admin (관리); several are joined by +, e.g. homeroom+gate"
        )
        assertRejected(students: none, teachers: header + "sa,t1,Kim,,gate+gate,,\n", "teachers.csv:2: role 'gate' is given twice")
        assertRejected(
            students: none, teachers: header + "sa,t1,Kim,,gate+homeroom,1,\n", "teachers.csv:2: a homeroom teacher needs grade and class")
        assertRejected(
            students: none, teachers: header + "sa,t1,Kim,,gate+,,\n",
            "teachers.csv:2: role '' is not one of homeroom (담임), volunteer_duty (봉사), gate (교문), admin (관리); several are joined by +, e.g. homeroom+gate"
        )
    }

    func testTokensAuthenticateByDigestAndNameTheirTeacher() throws {
        let tokens =
            "token_sha256,teacher_id\n\(SHA256.hex(SHA256.hash(Array("gate-secret".utf8)))),g1\n\(SHA256.hex(SHA256.hash(Array("hr-secret".utf8)))),t1\n"
        let roster = try Roster.parse(
            schools: schools, students: "school_id,student_id,grade,class,number,name,photo_url\n", teachers: teachers, tokens: tokens)
        XCTAssertTrue(roster.authenticationEnabled)
        XCTAssertEqual(roster.teacher(forToken: "gate-secret")?.id, "g1")
        XCTAssertEqual(roster.teacher(forToken: "hr-secret")?.id, "t1")
        XCTAssertNil(roster.teacher(forToken: "wrong"))
        XCTAssertNil(roster.teacher(forToken: ""))
        // A session names its token by fingerprint; the roster says whether the teacher still holds it.
        XCTAssertTrue(roster.holdsToken(teacher: "g1", fingerprint: Roster.fingerprint(token: "gate-secret")))
        XCTAssertFalse(roster.holdsToken(teacher: "t1", fingerprint: Roster.fingerprint(token: "gate-secret")))
    }

    func testSampleRosterLoads() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../examples/roster").path
        let roster = try Roster.load(from: directory)
        XCTAssertEqual(roster.schools.count, 1)
        XCTAssertGreaterThan(roster.studentCount, 800)
        XCTAssertEqual(roster.teachers(of: "demo-hs", role: .homeroom).count, 31)
        XCTAssertEqual(roster.teachers(of: "demo-hs", role: .volunteerDuty).count, 3)
        XCTAssertEqual(roster.teacher(forToken: "demo-t-gate-01")?.id, "t-gate-01")
    }

    /// Parsing fails with exactly `message` (file, line and reason).
    private func assertRejected(
        schools: String? = nil, students: String, teachers: String? = nil, _ message: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(
            try Roster.parse(schools: schools ?? self.schools, students: students, teachers: teachers ?? self.teachers), file: file,
            line: line
        ) { error in
            XCTAssertEqual("\(error)", message, file: file, line: line)
        }
    }

    /// Other days than today: admins any list, homeroom teachers their
    /// class, volunteer-duty teachers their grade (any class of it), gate
    /// teachers none; several roles, what any allows.
    func testWhoMayReadTheListsOfOtherDays() {
        func teacher(_ roles: Set<Teacher.Role>, grade: Int? = 1, classNumber: Int? = 3) -> Teacher {
            Teacher(schoolID: "s", id: "t", name: "n", email: "e@x", roles: roles, grade: grade, classNumber: classNumber)
        }
        let scopes: [(Int?, Int?)] = [(nil, nil), (1, nil), (1, 3), (1, 4), (2, nil), (2, 3)]
        let cases: [(Set<Teacher.Role>, [Bool])] = [
            ([.admin], [true, true, true, true, true, true]),
            ([.homeroom], [false, false, true, false, false, false]),
            ([.volunteerDuty], [false, true, true, true, false, false]),
            ([.gate], [false, false, false, false, false, false]),
            ([.homeroom, .gate], [false, false, true, false, false, false])
        ]
        for (roles, expected) in cases {
            let seen = scopes.map { teacher(roles).mayReadOtherDays(grade: $0.0, classNumber: $0.1) }
            XCTAssertEqual(seen, expected, "\(roles)")
        }
    }
}

final class PrimitiveTests: XCTestCase {
    func testTimestampsParseWithOffsetsAndFormatInUTC() throws {
        let seoul = try XCTUnwrap(Timestamp.parse("2026-11-30T07:52:10+09:00"))
        XCTAssertEqual(Timestamp.format(seoul), "2026-11-29T22:52:10Z")
        XCTAssertEqual(Timestamp.parse("2026-11-29T22:52:10Z"), seoul)
        XCTAssertEqual(Timestamp.format(try XCTUnwrap(Timestamp.parse("2024-02-29T23:59:59.250-08:00"))), "2024-03-01T07:59:59.250Z")
        for bad in [
            "2026-11-30", "2026-11-30T07:52:10", "2026-02-30T07:52:10Z", "yesterday", "2026-11-30T25:00:00Z", "2026-11-30T07:52:10+0900"
        ] {
            XCTAssertNil(Timestamp.parse(bad), bad)
        }
    }

    func testLocalDateFollowsTheSchoolsTimeZone() throws {
        let instant = try XCTUnwrap(Timestamp.parse("2026-11-30T07:52:10+09:00"))
        XCTAssertEqual(Timestamp.localDate(instant, in: TimeZone(identifier: "Asia/Seoul")!), "2026-11-30")
        XCTAssertEqual(Timestamp.localDate(instant, in: TimeZone(identifier: "America/Los_Angeles")!), "2026-11-29")
    }
}
