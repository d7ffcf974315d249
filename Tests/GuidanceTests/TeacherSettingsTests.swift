import Guidance
import XCTest

/// When a message may reach a teacher: their own time, then quiet hours.
final class TeacherSettingsTests: XCTestCase {
    private let roster = try! Roster.parse(
        schools: "school_id,name,timezone,digest_time\nsa,서울고,Asia/Seoul,16:00\n",
        students: "school_id,student_id,grade,class,number,name,photo_url\n",
        teachers: "school_id,teacher_id,name,email,role,grade,class\n")

    private func list(_ date: String, scope: DigestScope = .class) -> Digest {
        Digest(
            digestId: "d", teacherId: "t", schoolId: "sa", date: date, scope: scope, grade: 1, classNumber: 1, revision: 1,
            createdAt: "", read: false, subject: "", text: "", entries: [], counts: [:])
    }

    /// Seoul is UTC+9: 16:00 there is 07:00Z.
    private func release(_ settings: TeacherSettings, at utc: String, scope: DigestScope = .class, urgent: Bool = false) -> String {
        let school = roster.school("sa")!
        let now = Timestamp.parse(utc)!
        let at = settings.release(of: list("2026-11-21", scope: scope), urgent: urgent, school: school, now: now, quietByDefault: .standard)
        return Timestamp.format(at)
    }

    func testTheOwnTimeHoldsTodaysListsOnlyAndQuietHoursHoldAllButUrgentOnes() {
        var own = TeacherSettings()
        own.listMinute = 17 * 60
        XCTAssertEqual(release(own, at: "2026-11-21T07:00:10Z"), "2026-11-21T08:00:00Z", "16:00:10 → the teacher's 17:00")
        XCTAssertEqual(release(own, at: "2026-11-21T08:30:00Z"), "2026-11-21T08:30:00Z", "after it: at once")
        XCTAssertEqual(release(own, at: "2026-11-21T07:00:00Z", scope: .rule), "2026-11-21T07:00:00Z", "a rule's notice is no list")
        XCTAssertEqual(release(own, at: "2026-11-22T07:00:00Z"), "2026-11-22T07:00:00Z", "another day's list (a late amendment): at once")
        let plain = TeacherSettings()
        XCTAssertEqual(release(plain, at: "2026-11-21T13:30:00Z"), "2026-11-21T22:00:00Z", "22:30 waits for 07:00")
        XCTAssertEqual(release(plain, at: "2026-11-21T16:00:00Z"), "2026-11-21T22:00:00Z", "01:00 after midnight too")
        XCTAssertEqual(release(plain, at: "2026-11-21T22:00:00Z"), "2026-11-21T22:00:00Z", "07:00 is the end")
        XCTAssertEqual(release(plain, at: "2026-11-21T13:30:00Z", scope: .rule, urgent: true), "2026-11-21T13:30:00Z")
        var none = TeacherSettings()
        none.quietHours = QuietHours.none
        XCTAssertEqual(release(none, at: "2026-11-21T13:30:00Z"), "2026-11-21T13:30:00Z", "the teacher's none beats the default")
        var day = TeacherSettings()
        day.quietHours = QuietHours(from: 12 * 60, until: 13 * 60)
        XCTAssertEqual(release(day, at: "2026-11-21T03:15:00Z"), "2026-11-21T04:00:00Z", "12:15 within 12:00–13:00")
    }

    func testQuietHoursReadAsTheEnvironmentWritesThem() {
        XCTAssertEqual(QuietHours("22:00-06:30"), QuietHours(from: 22 * 60, until: 6 * 60 + 30))
        XCTAssertEqual(QuietHours("off"), QuietHours.none)
        for wrong in ["", "22:00", "22:00-22:00", "25:00-07:00", "9:00-10:00", "22:00–07:00"] {
            XCTAssertNil(QuietHours(wrong), wrong)
        }
        XCTAssertEqual(QuietHours.standard.text, "21:00-07:00")
    }
}
