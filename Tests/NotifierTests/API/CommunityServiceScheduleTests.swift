import Foundation
import Guidance
import Synchronization
import TestSupport
import XCTest

@testable import Notifier
@testable import Store

/// 교내봉사 as a schedule, through the ingest and the notifier with a clock
/// the test moves: a school with a holiday on Monday 16 November 2026, due
/// dates 3 school days after the guidance's day, and sittings on Tuesdays
/// and Thursdays at 16:00 for two students each.
final class CommunityServiceScheduleTests: XCTestCase {
    final class Clock: Sendable {
        let time = Mutex<Double>(0)
    }

    let clock = Clock()
    var harness: NotifierHarness?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    static let schools = """
        school_id,name,timezone,digest_time,service_due_days
        sa,서울고,Asia/Seoul,08:50,3
        sb,LA High,America/Los_Angeles,07:30,

        """
    static let calendar = "school_id,date,end_date,name\nsa,2026-11-16,,개교기념일\n"
    static let slots = "school_id,weekday,time,place,capacity\nsa,tue,16:00,상담실,2\nsa,thu,16:00,상담실,2\n"

    /// Moves the clock to `time` (RFC 3339).
    func at(_ time: String) {
        clock.time.withLock { $0 = Timestamp.parse(time)! }
    }

    /// 오늘 봉사 as the grade's volunteer-duty teacher: `studentId: [state, dutyId, serviceId]` by sitting time.
    func today(_ harness: NotifierHarness, date: String? = nil) async throws -> (reply: Reply, rows: [String: [String]]) {
        let reply = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/service/sittings" + (date.map { "?date=\($0)" } ?? ""),
            headers: harness.headers("t-vd-1"))
        XCTAssertEqual(reply.status, 200, reply.text)
        var rows: [String: [String]] = [:]
        if case .array(let sittings) = reply.object["sittings"] {
            for sitting in sittings {
                guard case .array(let items) = sitting["items"] else { continue }
                for item in items {
                    rows[item["student"]?["studentId"]?.string ?? ""] = [
                        item["state"]?.string ?? "", item["dutyId"]?.string ?? "", item["serviceId"]?.string ?? "",
                        item["slot"]?["date"]?.string ?? ""
                    ]
                }
            }
        }
        return (reply, rows)
    }

    /// The 봉사 명단 as `teacher`: `studentId: [state, dueDate, slot date]`, polled until `done`.
    func schedule(_ harness: NotifierHarness, as teacher: String, until done: @escaping ([String: [String]]) -> Bool) async throws
        -> [String: [String]]
    {
        try await eventually {
            let reply = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service", headers: harness.headers(teacher))
            var found: [String: [String]] = [:]
            if case .array(let items) = reply.object["items"] {
                for item in items {
                    found[item["student"]?["studentId"]?.string ?? ""] = [
                        item["state"]?.string ?? "-", item["dueDate"]?.string ?? "-", item["slot"]?["date"]?.string ?? "-"
                    ]
                }
            }
            return found
        } until: {
            done($0)
        }
    }

    /// 완료 or 불참 of a session, through the teacher pages' route (the notifier passes it to the ingest).
    func mark(_ harness: NotifierHarness, student: String, duty: String, outcome: String, date: String) async throws -> String {
        let id = UUID().uuidString.lowercased()
        let body = #"{"serviceId":"\#(id)","date":"\#(date)","sessions":1,"outcome":"\#(outcome)","dutyId":"\#(duty)"}"#
        let reply = try await fetch(
            "POST", "\(harness.notifierBase)/v1/schools/sa/grades/1/students/\(student)/service", body: body,
            headers: harness.headers("t-vd-1"))
        XCTAssertEqual(reply.status, 202, reply.text)
        return id
    }

    func undo(_ harness: NotifierHarness, student: String, service: String) async throws {
        let reply = try await fetch(
            "DELETE", "\(harness.notifierBase)/v1/schools/sa/grades/1/students/\(student)/service/\(service)",
            headers: harness.headers("t-vd-1"))
        XCTAssertEqual(reply.status, 202, reply.text)
    }

    /// The digests of `scope` in a teacher's inbox: `date r<revision>: text`.
    func digests(_ harness: NotifierHarness, _ teacher: String, scope: String) async throws -> [String] {
        try await harness.inbox(teacher, signedIn: true).filter { $0["scope"]?.string == scope }.map {
            "\($0["date"]?.string ?? "") r\($0["revision"]?.int ?? 0): \($0["text"]?.string ?? "")"
        }.sorted()
    }

    /// The school on Friday 13 November 2026, 09:00 in Seoul, on the test's clock (SQLite).
    func fridayHarness() async throws -> NotifierHarness {
        let clock = self.clock
        at("2026-11-13T00:00:00Z")
        let harness = try await NotifierHarness(
            authentication: true, clock: { clock.time.withLock { $0 } }, schools: Self.schools, calendar: Self.calendar,
            serviceSlots: Self.slots)
        self.harness = harness
        return harness
    }

    /// The same school on two notifier replicas sharing a PostgreSQL store
    /// (a schema of its own named `schema_…`), or a skip without one.
    func fridayReplicas(schema: String) async throws -> (NotifierHarness, url: String) {
        let url = try NotifierHarness.postgresURL(schema: schema)
        let clock = self.clock
        at("2026-11-13T00:00:00Z")
        let harness = try await NotifierHarness(
            authentication: true, store: .postgres(url: url), clock: { clock.time.withLock { $0 } }, schools: Self.schools,
            calendar: Self.calendar, serviceSlots: Self.slots)
        self.harness = harness
        _ = try await harness.startReplica(sharing: true)
        return (harness, url)
    }

    /// A sitting nobody marked is 확인 필요 the next day, not 예정; once the
    /// due date has passed the overdue list names it as a past seat with no
    /// record, never as the "next" one (issue 67: "지남 · 다음 배정 일정 12월 1일"
    /// with 12월 1일 gone).
    func testASittingNobodyMarkedIsToBeConfirmedAndNeverANextSittingInThePast() async throws {
        let harness = try await fridayHarness()
        let runner = try XCTUnwrap(harness.notifier?.runner)
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-12T23:30:00Z", as: "t-gate")
        _ = try await schedule(harness, as: "t-admin") { $0["a111"] == ["scheduled", "2026-11-19", "2026-11-17"] }
        // Tuesday 17's sitting passes with no 완료 and no 불참.
        at("2026-11-18T01:00:00Z")
        let wednesday = try await schedule(harness, as: "t-admin") { $0["a111"]?[0] != "scheduled" }
        XCTAssertEqual(wednesday["a111"], ["unconfirmed", "2026-11-19", "2026-11-17"])
        // Tuesday's sittings, looked at on Wednesday: to confirm, not 예정.
        let tuesday = try await today(harness, date: "2026-11-17")
        XCTAssertEqual(tuesday.rows["a111"]?[0], "unconfirmed", tuesday.reply.text)
        // Friday 20: past the due date.
        at("2026-11-20T01:00:00Z")
        let friday = try await schedule(harness, as: "t-hr-1-1") { $0["a111"]?[0] == "overdue" }
        XCTAssertEqual(friday["a111"], ["overdue", "2026-11-19", "2026-11-17"])
        _ = await runner.runDueSchools()
        let overdue = try await digests(harness, "t-hr-1-1", scope: "overdue")
        XCTAssertEqual(overdue.count, 1, "\(overdue)")
        XCTAssertTrue(overdue[0].contains("1번 가가 — 교내봉사 기한 11월 19일(목) 지남 · 11월 17일(화) 배정 일정에 완료·불참 기록 없음"), overdue[0])
        XCTAssertFalse(overdue[0].contains("다음 배정 일정 11월 17일"), overdue[0])
    }

    /// Two sittings of room 2 before the due date and seven sessions due:
    /// the three that only find a seat after it are 기한 내 자리 없음, not
    /// 예정, and the grade's volunteer-duty teacher and the admin hear once,
    /// the next school day, that the sittings lack 3 seats by that date
    /// (issue 67: "기한 12월 8일(화) · 자리 12월 15일(화)", silently).
    func testSessionsSeatedAfterTheirDueDateAreSaidAndTheShortfallToldOnce() async throws {
        let harness = try await fridayHarness()
        let runner = try XCTUnwrap(harness.notifier?.runner)
        // Friday 13 November, 08:30-08:36 in Seoul: seven guidances of grade 1, all due Thursday 19.
        let seats = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 1), (1, 2), (2, 1)]
        for (minute, seat) in zip(30..., seats) {
            try await harness.register(
                grade: 1, classNumber: seat.0, number: seat.1, at: "2026-11-12T23:\(minute):00Z", as: "t-gate")
        }
        // Every session with its state and sitting: `dueDate sittingDate state`.
        let sessions = try await eventually {
            let reply = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service", headers: harness.headers("t-admin"))
            var found: [String] = []
            if case .array(let items) = reply.object["items"] {
                for item in items {
                    guard case .array(let duties) = item["duties"] else { continue }
                    found += duties.map {
                        "\($0["dueDate"]?.string ?? "-") \($0["slot"]?["date"]?.string ?? "-") \($0["state"]?.string ?? "-")"
                    }
                }
            }
            return found.sorted()
        } until: {
            $0.count == 7
        }
        XCTAssertEqual(
            sessions,
            [
                "2026-11-19 2026-11-17 scheduled", "2026-11-19 2026-11-17 scheduled", "2026-11-19 2026-11-19 scheduled",
                "2026-11-19 2026-11-19 scheduled", "2026-11-19 2026-11-24 lateSeat", "2026-11-19 2026-11-24 lateSeat",
                "2026-11-19 2026-11-26 lateSeat"
            ])

        // Tuesday 17, the week's first school day, after the digest time.
        at("2026-11-17T01:00:00Z")
        _ = await runner.runDueSchools()
        for teacher in ["t-vd-1", "t-admin"] {
            let told = try await digests(harness, teacher, scope: "overdue")
            XCTAssertEqual(told.count, 1, "\(teacher): \(told)")
            XCTAssertTrue(told.first?.contains("기한 내 자리 없음 3건입니다.") ?? false, "\(teacher): \(told)")
            XCTAssertTrue(told.first?.contains("11월 19일(목)까지 3석") ?? false, "\(teacher): \(told)")
            XCTAssertTrue(
                told.first?.contains("1번 가가 — 교내봉사 기한 11월 19일(목) · 기한 내 자리 없음 · 다음 배정 일정 11월 24일(화) 16:00 상담실") ?? false,
                "\(teacher): \(told)")
        }
        // The homeroom teacher of 1-1 hears of their two students' late seats.
        let homeroom = try await digests(harness, "t-hr-1-1", scope: "overdue")
        XCTAssertEqual(homeroom.count, 1, "\(homeroom)")
        XCTAssertTrue(homeroom.first?.contains("기한 내 자리 없음 2건입니다.") ?? false, "\(homeroom)")
        // Wednesday's run does not tell it again.
        at("2026-11-18T01:00:00Z")
        _ = await runner.runDueSchools()
        let again = try await digests(harness, "t-vd-1", scope: "overdue")
        XCTAssertEqual(again.count, 1, "\(again)")
    }

    /// The plan says the week is 3 seats short; the admin adds a sitting on
    /// Wednesday for 2, and the late sessions move into it in due order at
    /// once, one seat per student, never beyond its room; what the ingest
    /// refuses changes nothing.
    func testASittingAddedOnceSeatsTheLateSessionsInDueOrder() async throws {
        let harness = try await fridayHarness()
        // Thursday 12 (due Tuesday 17) before Friday 13's six (due Thursday 19).
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-12T00:30:00Z", as: "t-gate")
        let seats = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 1), (1, 2)]
        for (minute, seat) in zip(30..., seats) {
            try await harness.register(grade: 1, classNumber: seat.0, number: seat.1, at: "2026-11-12T23:\(minute):00Z", as: "t-gate")
        }
        at("2026-11-16T01:00:00Z")
        let plan = { () async throws -> [String: AnyCodable] in
            try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service/plan", headers: harness.headers("t-vd-1")).object
        }
        let before = try await eventually {
            try await plan()
        } until: {
            $0["weeks"]?[0]?["due"]?.int == 7
        }
        // This week from Monday 16: Tuesday's and Thursday's sittings, 4 seats, all taken; 3 of 7 sessions due are short.
        XCTAssertEqual(before["weeks"]?[0]?["start"]?.string, "2026-11-16")
        XCTAssertEqual(
            [before["weeks"]?[0]?["seats"]?.int, before["weeks"]?[0]?["taken"]?.int, before["weeks"]?[0]?["short"]?.int], [4, 4, 3])

        // What the ingest refuses: a gate teacher, a weekly sitting's time, a day already past, a blank place.
        let post = { (teacher: String, body: String) async throws -> Reply in
            try await fetch("POST", "\(harness.ingestBase)/v1/schools/sa/service/sittings", body: body, headers: harness.headers(teacher))
        }
        let sitting = { (id: String, date: String, time: String, place: String) in
            #"{"sittingId":"\#(id)","date":"\#(date)","time":"\#(time)","place":"\#(place)","capacity":2}"#
        }
        let id = UUID().uuidString.lowercased()
        try await assertEqualAsync(try await post("t-gate", sitting(id, "2026-11-18", "16:00", "도서관")).status, 403)
        for (body, field) in [
            (sitting(id, "2026-11-17", "16:00", "도서관"), "time"), (sitting(id, "2026-11-13", "16:00", "도서관"), "date"),
            (sitting(id, "2026-11-18", "16:00", "  "), "place")
        ] {
            let refused = try await post("t-admin", body)
            XCTAssertEqual(refused.status, 422, refused.text)
            XCTAssertTrue(refused.text.contains(#""field":"\#(field)""#), refused.text)
        }
        // Wednesday 18, 16:00, room for 2.
        let added = try await post("t-admin", sitting(id, "2026-11-18", "16:00", "도서관"))
        XCTAssertEqual(added.status, 202, added.text)
        let retry = try await post("t-admin", sitting(id, "2026-11-18", "16:00", "도서관"))
        XCTAssertEqual(retry.status, 202, "a retry adds nothing: \(retry.text)")
        let after = try await eventually {
            try await plan()
        } until: {
            $0["weeks"]?[0]?["short"]?.int == 1
        }
        XCTAssertEqual([after["weeks"]?[0]?["seats"]?.int, after["weeks"]?[0]?["taken"]?.int], [6, 6])
        XCTAssertEqual(after["weeks"]?[0]?["sittings"]?[1]?["added"], AnyCodable.bool(true), "\(after)")
        let store = try SQLStore.sqlite(path: harness.directory.appendingPathComponent("notifier.db").path, clock: Timestamp.now)
        let duties = try store.duties(school: "sa")
        // Two of Friday's three late sessions, in due order (a111's own Thursday one was due first and sat Tuesday).
        let wednesday = duties.filter { $0.slot?.date == "2026-11-18" }
        XCTAssertEqual(wednesday.count, 2, "\(duties)")
        XCTAssertEqual(Set(wednesday.map(\.studentId)).count, 2, "one seat a student")
        XCTAssertEqual(duties.filter { $0.state(today: "2026-11-16") == .lateSeat }.count, 1)
        // 오늘 교내봉사 on Wednesday lists the added sitting with its two students.
        let day = try await today(harness, date: "2026-11-18")
        XCTAssertEqual(day.reply.object["sittings"]?[0]?["place"]?.string, "도서관", day.reply.text)
        XCTAssertEqual(day.rows.count, 2, day.reply.text)
    }

    func testDueDatesSkipTheWeekendAndTheHolidayAFullSittingOverflowsNoShowsMoveAndOverdueIsToldOnce() async throws {
        let harness = try await fridayHarness()
        let runner = try XCTUnwrap(harness.notifier?.runner)
        // Friday 13 November, 08:30-08:32 in Seoul: three students stopped, in this order.
        for (minute, seat) in [(30, (1, 1, 1)), (31, (1, 1, 2)), (32, (1, 2, 1))] {
            try await harness.register(
                grade: seat.0, classNumber: seat.1, number: seat.2, at: "2026-11-12T23:\(minute):00Z", as: "t-gate")
        }
        // Due the 3rd school day after Friday: not Monday (개교기념일), so Tue, Wed, Thu 19.
        // Tuesday 17's sitting holds two; the third student goes to Thursday's.
        let expected = [
            "a111": ["scheduled", "2026-11-19", "2026-11-17"], "a112": ["scheduled", "2026-11-19", "2026-11-17"],
            "a121": ["scheduled", "2026-11-19", "2026-11-19"]
        ]
        let placed = try await schedule(harness, as: "t-admin") { $0 == expected }
        XCTAssertEqual(placed, expected)

        // Monday 16, the holiday, after the digest time: no digest at all (without
        // the calendar, Monday's run wrote the weekly 봉사 명단).
        at("2026-11-16T00:00:00Z")
        _ = await runner.runDueSchools()
        at("2026-11-16T01:00:00Z")
        _ = await runner.runDueSchools()
        for teacher in ["t-vd-1", "t-hr-1-1", "t-hr-1-2", "t-admin"] {
            let holiday = try await harness.inbox(teacher, signedIn: true).filter { $0["date"]?.string == "2026-11-16" }
            XCTAssertEqual(holiday.count, 0, "\(teacher): \(holiday)")
        }
        // The weekly list goes out on the week's first school day, Tuesday.
        at("2026-11-17T01:00:00Z")
        _ = await runner.runDueSchools()
        let weekly = try await digests(harness, "t-vd-1", scope: "service")
        XCTAssertEqual(weekly.count, 1, "\(weekly)")
        XCTAssertTrue(weekly.first?.hasPrefix("2026-11-17 r1") ?? false, "\(weekly)")

        // Tuesday 17 at the sitting: 오늘 봉사 has a111 and a112.
        at("2026-11-17T07:10:00Z")
        var sitting = try await today(harness)
        XCTAssertEqual(sitting.rows.mapValues { $0[0] }, ["a111": "scheduled", "a112": "scheduled"], sitting.reply.text)
        XCTAssertEqual(sitting.reply.object["sittings"]?[0]?["place"]?.string, "상담실")
        // a112: 불참 marked by mistake and undone, then 완료.
        let mistake = try await mark(harness, student: "a112", duty: sitting.rows["a112"]![1], outcome: "missed", date: "2026-11-17")
        sitting = try await eventually {
            try await self.today(harness)
        } until: {
            $0.rows["a112"]?[0] == "missed"
        }
        let moved = try await schedule(harness, as: "t-admin") { $0["a112"]?[0] == "missed" }
        XCTAssertEqual(moved["a112"], ["missed", "2026-11-19", "2026-11-19"], "the next sitting with room: Thursday's")
        try await undo(harness, student: "a112", service: mistake)
        _ = try await schedule(harness, as: "t-admin") { $0["a112"] == ["scheduled", "2026-11-19", "2026-11-17"] }
        _ = try await mark(harness, student: "a112", duty: sitting.rows["a112"]![1], outcome: "served", date: "2026-11-17")
        // a111 does not come: 불참 moves them to Thursday's sitting (a121 and a111 fill it).
        _ = try await mark(harness, student: "a111", duty: sitting.rows["a111"]![1], outcome: "missed", date: "2026-11-17")
        let afterTuesday = try await schedule(harness, as: "t-admin") { $0["a111"]?[0] == "missed" && $0["a112"]?[0] == "served" }
        XCTAssertEqual(afterTuesday["a111"], ["missed", "2026-11-19", "2026-11-19"])
        sitting = try await today(harness)
        XCTAssertEqual(sitting.rows.mapValues { $0[0] }, ["a111": "missed", "a112": "served"], sitting.reply.text)
        XCTAssertEqual(sitting.rows["a111"]?[3], "2026-11-19", "where the missed session went")

        // Wednesday 18: the homeroom teacher hears of the 불참 in the day's 교내봉사 list, not a message of its own.
        at("2026-11-18T01:00:00Z")
        _ = await runner.runDueSchools()
        let missedList = try await digests(harness, "t-hr-1-1", scope: "overdue")
        XCTAssertEqual(missedList.count, 1, "\(missedList)")
        XCTAssertTrue(missedList.first?.contains("1번 가가 — 교내봉사 불참 1회 · 다음 배정 일정 11월 19일(목) 16:00 상담실") ?? false, "\(missedList)")
        XCTAssertTrue(missedList.first?.contains("불참 1건입니다.") ?? false, "\(missedList)")
        XCTAssertFalse(missedList.first?.contains("가나") ?? true, "a112's 불참 was taken back")

        // Thursday 19: a121 serves on the due day; a111 misses again and goes to Tuesday 24.
        at("2026-11-19T07:10:00Z")
        sitting = try await today(harness)
        XCTAssertEqual(sitting.rows.mapValues { $0[0] }, ["a111": "scheduled", "a121": "scheduled"], sitting.reply.text)
        _ = try await mark(harness, student: "a121", duty: sitting.rows["a121"]![1], outcome: "served", date: "2026-11-19")
        _ = try await mark(harness, student: "a111", duty: sitting.rows["a111"]![1], outcome: "missed", date: "2026-11-19")
        _ = try await schedule(harness, as: "t-admin") { $0["a111"]?[2] == "2026-11-24" && $0["a121"]?[0] == "served" }

        // The second 불참 opens a case for the grade's volunteer-duty teacher and the admins.
        let missedCase = try await eventually {
            try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/cases", headers: harness.headers("t-vd-1")).object
        } until: {
            $0["counts"]?["open"]?.int == 1
        }
        XCTAssertEqual(missedCase["cases"]?[0]?["label"]?.string, "교내봉사 불참 2회", "\(missedCase)")
        XCTAssertEqual(missedCase["cases"]?[0]?["origin"]?.string, "service")
        let adminCases = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/cases", headers: harness.headers("t-admin"))
        XCTAssertEqual(adminCases.object["counts"]?["open"]?.int, 1, adminCases.text)

        // Friday 20: a111 is past the due date: 지남 in the homeroom teacher's list, and in one overdue digest.
        at("2026-11-20T01:00:00Z")
        let homeroom = try await schedule(harness, as: "t-hr-1-1") { $0["a111"]?[0] == "overdue" }
        XCTAssertEqual(homeroom, ["a111": ["overdue", "2026-11-19", "2026-11-24"], "a112": ["served", "2026-11-19", "2026-11-17"]])
        _ = await runner.runDueSchools()
        var overdue = try await digests(harness, "t-hr-1-1", scope: "overdue").filter { $0.hasPrefix("2026-11-20") }
        XCTAssertEqual(overdue.count, 1, "\(overdue)")
        XCTAssertTrue(overdue[0].contains("1번 가가 — 교내봉사 기한 11월 19일(목) 지남 · 다음 배정 일정 11월 24일(화) 16:00 상담실"), overdue[0])
        let other = try await digests(harness, "t-hr-1-2", scope: "overdue")
        XCTAssertEqual(other, [], "a121 served on the due day")
        // The entry's session as the contract's ServiceSession: every field, null where there is none.
        let inbox = try await fetch("GET", "\(harness.notifierBase)/v1/teachers/t-hr-1-1/inbox", headers: harness.headers("t-hr-1-1"))
        XCTAssertTrue(inbox.text.contains(#""servedOn":null"#) && inbox.text.contains(#""dueDate":"2026-11-19""#), inbox.text)
        let school = try await digests(harness, "t-admin", scope: "overdue").filter { $0.hasPrefix("2026-11-20") }
        XCTAssertEqual(school.count, 1, "\(school)")
        XCTAssertTrue(school.first?.contains("[1학년 1반]") ?? false, "\(school)")
        // The next school days' runs do not tell it again.
        for day in ["2026-11-23", "2026-11-24"] {
            at("\(day)T01:00:00Z")
            _ = await runner.runDueSchools()
        }
        overdue = try await digests(harness, "t-hr-1-1", scope: "overdue").filter { $0.hasPrefix("2026-11-20") }
        XCTAssertEqual(overdue.count, 1, "\(overdue)")

        // Tuesday 24: served late; Friday's overdue list is amended once.
        at("2026-11-24T07:10:00Z")
        sitting = try await today(harness)
        XCTAssertEqual(sitting.rows["a111"]?[0], "scheduled", sitting.reply.text)
        _ = try await mark(harness, student: "a111", duty: sitting.rows["a111"]![1], outcome: "served", date: "2026-11-24")
        _ = try await schedule(harness, as: "t-hr-1-1") { $0["a111"]?[0] == "served" }
        overdue = try await eventually {
            await runner.runAmendments()
            return try await self.digests(harness, "t-hr-1-1", scope: "overdue").filter { $0.hasPrefix("2026-11-20") }
        } until: {
            $0.count == 2
        }
        XCTAssertTrue(overdue[1].hasPrefix("2026-11-20 r2"), "\(overdue)")
        XCTAssertTrue(overdue[1].contains("교내봉사 기한 11월 19일(목) · 11월 24일(화) 늦게 완료"), overdue[1])
        await runner.runAmendments()
        let again = try await digests(harness, "t-hr-1-1", scope: "overdue")
        XCTAssertEqual(again.count, 3, "Wednesday's 불참, Friday's list and its one amendment: \(again)")

        // The student's export holds the sessions.
        let export = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/students/a111/records", headers: harness.headers("t-admin"))
        XCTAssertEqual(export.object["duties"]?[0]?["dueDate"]?.string, "2026-11-19", export.text)
        XCTAssertEqual(export.object["duties"]?[0]?["misses"]?.int, 2, export.text)
        // Counted: one owed and served, two 불참, served late once; the 봉사 명단 says the same.
        let counts = export.object["serviceCounts"]
        XCTAssertEqual(
            ["owed", "served", "missed", "late"].map { counts?[$0]?.int }, [1, 1, 2, 1], export.text)
        let tally = { () async throws -> [String: [Int?]] in
            let list = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service", headers: harness.headers("t-admin"))
            var found: [String: [Int?]] = [:]
            if case .array(let items) = list.object["items"] {
                for item in items {
                    found[item["student"]?["studentId"]?.string ?? ""] = [item["served"]?.int, item["missed"]?.int, item["late"]?.int]
                }
            }
            return found
        }
        let counted = try await tally()
        XCTAssertEqual(counted["a111"], [1, 2, 1])
        XCTAssertEqual(counted["a121"], [1, 0, 0], "served on the due day is on time")

        // A replay from the start into the same store moves nothing.
        let before = try await schedule(harness, as: "t-admin") { _ in true }
        // Every event the first notifier applied, applied again before the
        // erasure: one replayed after it would bring the student back (the
        // store is the same, so the 봉사 명단 alone reads alike at once).
        let events = harness.notifier?.metrics.value("notifier_events_applied_total") ?? 0
        await harness.stopNotifier()
        try await harness.startNotifier(group: "replay-\(UUID().uuidString.prefix(6))")
        try await harness.waitUntilApplied(max(11, events))
        let replayed = try await schedule(harness, as: "t-admin") { $0 == before }
        XCTAssertEqual(replayed, before)
        try await assertEqualAsync(try await tally(), counted, "served, missed and late after the replay")

        // The erasure takes them, and the overdue list keeps no id of the student.
        let erased = try await fetch(
            "DELETE", "\(harness.notifierBase)/v1/schools/sa/students/a111/records", headers: harness.headers("t-admin"))
        XCTAssertEqual(erased.status, 200, erased.text)
        let lists = try await harness.inbox("t-hr-1-1", signedIn: true).filter { $0["scope"]?.string == "overdue" }
        XCTAssertFalse(lists.contains { "\($0)".contains("a111") }, "\(lists)")
        let after = try await schedule(harness, as: "t-admin") { $0["a111"] == nil }
        XCTAssertNil(after["a111"])
    }

    /// A 불참 told in the next school day's list and then taken back
    /// (되돌리기): that list is amended once, the 불참 among what was told before.
    func testAMissedSittingTakenBackAmendsTheListThatToldIt() async throws {
        let harness = try await fridayHarness()
        let runner = try XCTUnwrap(harness.notifier?.runner)
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-12T23:30:00Z", as: "t-gate")
        _ = try await schedule(harness, as: "t-admin") { $0["a111"]?[0] == "scheduled" }
        at("2026-11-17T07:10:00Z")
        let sitting = try await today(harness)
        let missed = try await mark(
            harness, student: "a111", duty: try XCTUnwrap(sitting.rows["a111"]?[1]), outcome: "missed", date: "2026-11-17")
        _ = try await schedule(harness, as: "t-admin") { $0["a111"]?[0] == "missed" }
        at("2026-11-18T01:00:00Z")
        _ = await runner.runDueSchools()
        let told = try await digests(harness, "t-hr-1-1", scope: "overdue")
        XCTAssertEqual(told.count, 1, "\(told)")
        XCTAssertTrue(told.first?.contains("교내봉사 불참 1회") ?? false, "\(told)")
        try await undo(harness, student: "a111", service: missed)
        let amended = try await eventually {
            await runner.runAmendments()
            return try await self.digests(harness, "t-hr-1-1", scope: "overdue")
        } until: {
            $0.count == 2
        }
        XCTAssertTrue(amended.last?.hasPrefix("2026-11-18 r2") ?? false, "\(amended)")
        XCTAssertTrue(amended.last?.contains("앞서 알린 내용 1건") ?? false, "\(amended)")
        await runner.runAmendments()
        try await assertEqualAsync(try await self.digests(harness, "t-hr-1-1", scope: "overdue").count, 2, "one amendment")
    }

    /// 종결 (issue 69): owed sessions an admin closes with a reason leave
    /// their sitting (the seat goes to the next student stopped), show the
    /// reason in the 봉사 명단 and the student's record, and, the 종결 taken
    /// back, are owed again at the next sitting with room. Only admins close,
    /// and only with a reason.
    func testOwedSessionsClosedWithAReasonLeaveTheirSittingShowWhyAndComeBackWhenTakenBack() async throws {
        let harness = try await fridayHarness()
        // Friday 13 November: a111 and a112 fill Tuesday 17's sitting.
        for (minute, number) in [(30, 1), (31, 2)] {
            try await harness.register(grade: 1, classNumber: 1, number: number, at: "2026-11-12T23:\(minute):00Z", as: "t-gate")
        }
        _ = try await schedule(harness, as: "t-admin") { $0["a111"]?[2] == "2026-11-17" && $0["a112"]?[2] == "2026-11-17" }
        let serviceId = UUID().uuidString.lowercased()
        func close(note: String?, as teacher: String) async throws -> Reply {
            let reason = note.map { #","note":"\#($0)""# } ?? ""
            return try await fetch(
                "POST", "\(harness.notifierBase)/v1/schools/sa/grades/1/students/a111/service",
                body: #"{"serviceId":"\#(serviceId)","date":"2026-11-13","sessions":1,"outcome":"closed"\#(reason)}"#,
                headers: harness.headers(teacher))
        }
        let byDutyTeacher = try await close(note: "전학", as: "t-vd-1")
        XCTAssertEqual(byDutyTeacher.status, 403, byDutyTeacher.text)
        let withoutReason = try await close(note: nil, as: "t-admin")
        XCTAssertEqual(withoutReason.status, 422, withoutReason.text)
        XCTAssertTrue(withoutReason.text.contains("note"), withoutReason.text)
        let closed = try await close(note: "전학 (11월 13일)", as: "t-admin")
        XCTAssertEqual(closed.status, 202, closed.text)

        // The 명단: nothing left to serve, 종결 with its reason, on the record and on the session.
        let item = try await eventually {
            let list = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service", headers: harness.headers("t-admin"))
            guard case .array(let items)? = list.object["items"] else { return nil as AnyCodable? }
            return items.first { $0["student"]?["studentId"]?.string == "a111" }
        } until: {
            $0?["state"]?.string == "closed"
        }
        XCTAssertEqual(["owed", "served", "closed", "outstanding"].map { item?[$0]?.int }, [1, 0, 1, 0], "\(String(describing: item))")
        XCTAssertEqual(item?["services"]?[0]?["outcome"]?.string, "closed")
        XCTAssertEqual(item?["services"]?[0]?["note"]?.string, "전학 (11월 13일)")
        XCTAssertEqual(item?["duties"]?[0]?["closedReason"]?.string, "전학 (11월 13일)")
        let record = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/students/a111/records", headers: harness.headers("t-admin"))
        XCTAssertEqual(record.object["serviceCounts"]?["closed"]?.int, 1, record.text)
        XCTAssertEqual(record.object["duties"]?[0]?["closedReason"]?.string, "전학 (11월 13일)", record.text)

        // The seat a111 left on Tuesday goes to the next student stopped.
        try await harness.register(grade: 1, classNumber: 2, number: 1, at: "2026-11-12T23:40:00Z", as: "t-gate")
        let seated = try await schedule(harness, as: "t-admin") { $0["a121"] != nil }
        XCTAssertEqual(seated["a121"], ["scheduled", "2026-11-19", "2026-11-17"], "Tuesday had room again")
        at("2026-11-17T07:10:00Z")
        let tuesday = try await today(harness)
        XCTAssertEqual(tuesday.rows.keys.sorted(), ["a112", "a121"], "a closed session is at no sitting: \(tuesday.reply.text)")

        // Taken back: owed again, at the next sitting with room (Tuesday's is full now).
        let undone = try await fetch(
            "DELETE", "\(harness.notifierBase)/v1/schools/sa/grades/1/students/a111/service/\(serviceId)",
            headers: harness.headers("t-admin"))
        XCTAssertEqual(undone.status, 202, undone.text)
        let reopened = try await schedule(harness, as: "t-admin") { $0["a111"]?[0] != "closed" }
        XCTAssertEqual(reopened["a111"], ["scheduled", "2026-11-19", "2026-11-19"])
        try await assertEqualAsync(try await today(harness).rows.keys.sorted(), ["a112", "a121"], "Tuesday's room is not exceeded")
    }

    /// Two replicas on one PostgreSQL store apply grades 1, 2 and 3 (keys
    /// of their own partitions) side by side: the school's sittings fill in
    /// order, none beyond its room, and a replay changes nothing.
    /// A student owes one session for each of two guidances: each session
    /// gets a sitting of its own, and the seat a sitting had left goes to
    /// the next student. A 불참 moves the session past the sitting where
    /// the student already sits.
    func testAStudentSitsOnceInASittingWhateverTheGuidancesOwed() async throws {
        let harness = try await fridayHarness()
        // Friday 13 November: a111 stopped twice, then a112.
        for (minute, seat) in [(30, (1, 1, 1)), (31, (1, 1, 1)), (32, (1, 1, 2))] {
            try await harness.register(
                grade: seat.0, classNumber: seat.1, number: seat.2, at: "2026-11-12T23:\(minute):00Z", as: "t-gate")
        }
        let store = try SQLStore.sqlite(path: harness.directory.appendingPathComponent("notifier.db").path, clock: Timestamp.now)
        let placed = try await eventually {
            try store.duties(school: "sa")
        } until: {
            $0.count == 3
        }
        let sittings = { (duties: [CommunityServiceDuty], student: String) in
            duties.filter { $0.studentId == student }.compactMap(\.slot?.date).sorted()
        }
        XCTAssertEqual(sittings(placed, "a111"), ["2026-11-17", "2026-11-19"], "one seat a sitting: \(placed)")
        XCTAssertEqual(sittings(placed, "a112"), ["2026-11-17"], "Tuesday's second seat was free for the next student")

        // a111 misses Tuesday's sitting: the next with room is Thursday's, where a111 already sits.
        let tuesday = try XCTUnwrap(placed.first { $0.studentId == "a111" && $0.slot?.date == "2026-11-17" })
        at("2026-11-17T08:00:00Z")
        _ = try await mark(harness, student: "a111", duty: tuesday.dutyId, outcome: "missed", date: "2026-11-17")
        let moved = try await eventually {
            try store.duties(school: "sa")
        } until: { duties in
            duties.contains { $0.dutyId == tuesday.dutyId && $0.slot?.date != "2026-11-17" }
        }
        XCTAssertEqual(sittings(moved, "a111"), ["2026-11-19", "2026-11-24"], "\(moved)")
    }

    func testTwoReplicasFillTheSittingsInOrderNeverBeyondTheirRoom() async throws {
        let (harness, url) = try await fridayReplicas(schema: "duties")
        // Eight guidances of Friday 13 November in three grades, a minute apart.
        let seats = [(1, 1, 1), (2, 1, 1), (1, 1, 2), (3, 1, 1), (1, 2, 1), (2, 1, 1), (1, 2, 2), (3, 1, 1)]
        for (minute, seat) in seats.enumerated() {
            try await harness.register(
                grade: seat.0, classNumber: seat.1, number: seat.2, at: "2026-11-12T23:\(10 + minute):00Z", as: "t-gate")
        }
        let store = try SQLStore.postgres(url: url, clock: Timestamp.now)
        let placed = try await eventually {
            try store.duties(school: "sa")
        } until: {
            $0.count == seats.count
        }
        let filled = Dictionary(grouping: placed, by: { $0.slot?.date ?? "none" }).mapValues(\.count)
        XCTAssertEqual(filled, ["2026-11-17": 2, "2026-11-19": 2, "2026-11-24": 2, "2026-11-26": 2], "two to a sitting, in order")
        XCTAssertEqual(Set(placed.map(\.dueDate)), ["2026-11-19"])
        // A replay of every event by a new group into the same store.
        await harness.stopNotifier()
        try await harness.startNotifier(group: "replay-\(UUID().uuidString.prefix(6))")
        try await harness.waitUntilApplied(Double(seats.count))
        XCTAssertEqual(try store.duties(school: "sa"), placed)
    }

    /// A sitting added while registrations flow, on two replicas of one
    /// PostgreSQL store: it takes the late sessions in due order, and no
    /// sitting holds more than its room or a student twice.
    func testASittingAddedWhileRegistrationsFlowNeverOverfillsOnTwoReplicas() async throws {
        let (harness, url) = try await fridayReplicas(schema: "sittings")
        // Friday 13: seven guidances due Thursday 19; Tuesday's and Thursday's four seats go first.
        let friday = [(1, 1, 1), (2, 1, 1), (1, 1, 2), (3, 1, 1), (1, 2, 1), (1, 2, 2), (2, 1, 1)]
        for (minute, seat) in friday.enumerated() {
            try await harness.register(
                grade: seat.0, classNumber: seat.1, number: seat.2, at: "2026-11-12T23:\(10 + minute):00Z", as: "t-gate")
        }
        let store = try SQLStore.postgres(url: url, clock: Timestamp.now)
        _ = try await eventually {
            try store.duties(school: "sa")
        } until: {
            $0.count == friday.count
        }
        // Sunday: Wednesday 18 for 3, while Saturday's two guidances (also due the 19th) are recorded.
        at("2026-11-15T00:00:00Z")
        let body = #"{"sittingId":"\#(UUID().uuidString.lowercased())","date":"2026-11-18","time":"15:00","place":"도서관","capacity":3}"#
        async let added = fetch(
            "POST", "\(harness.ingestBase)/v1/schools/sa/service/sittings", body: body, headers: harness.headers("t-admin"))
        var saturday: Set<String> = []
        for (minute, seat) in [(1, 1, 2), (3, 1, 1)].enumerated() {
            saturday.insert(
                try await harness.register(
                    grade: seat.0, classNumber: seat.1, number: seat.2, at: "2026-11-14T01:\(10 + minute):00Z", as: "t-gate"))
        }
        let answer = try await added
        XCTAssertEqual(answer.status, 202, answer.text)
        let placed = try await eventually {
            try store.duties(school: "sa")
        } until: { duties in
            duties.count == 9 && duties.filter { $0.slot?.date == "2026-11-18" }.count == 3
        }
        let room = ["2026-11-17": 2, "2026-11-18": 3, "2026-11-19": 2, "2026-11-24": 2, "2026-11-26": 2, "2026-12-01": 2]
        for (date, sessions) in Dictionary(grouping: placed, by: { $0.slot?.date ?? "none" }) {
            XCTAssertLessThanOrEqual(sessions.count, room[date] ?? 0, "\(date): \(sessions)")
            XCTAssertEqual(Set(sessions.map(\.studentId)).count, sessions.count, "a student twice on \(date)")
        }
        // Friday's three late ones came before Saturday's two in due order (which three
        // of Friday's were late depends on the order the replicas applied them).
        XCTAssertTrue(placed.filter { $0.slot?.date == "2026-11-18" }.allSatisfy { !saturday.contains($0.guidanceId) }, "\(placed)")
        XCTAssertEqual(
            Set(placed.filter { $0.state(today: "2026-11-16") == .lateSeat }.map(\.guidanceId)), saturday, "\(placed)")
    }

    func testCalendarAndSlotFilesRefuseBrokenRowsNamingTheLine() throws {
        func parse(calendar: String? = nil, slots: String? = nil, schools: String = CommunityServiceScheduleTests.schools) -> String {
            do {
                _ = try Roster.parse(
                    schools: schools, students: NotifierHarness.students, teachers: NotifierHarness.teachers, calendar: calendar,
                    serviceSlots: slots)
                return "ok"
            } catch {
                return error.description
            }
        }
        XCTAssertEqual(
            parse(calendar: "school_id,date,end_date,name\nsz,2026-11-16,,x\n"), "calendar.csv:2: unknown school 'sz' (* for every school)")
        XCTAssertEqual(
            parse(calendar: "school_id,date,end_date,name\nsa,2026-12-20,2026-12-10,겨울방학\n"),
            "calendar.csv:2: end_date 2026-12-10 must be on or after date 2026-12-20, within a year")
        XCTAssertEqual(parse(calendar: "school_id,date,end_date,name\n*,2026-12-25,,성탄절\n"), "ok")
        XCTAssertEqual(
            parse(slots: "school_id,weekday,time,place,capacity\nsa,sat,16:00,상담실,2\n"),
            "service_slots.csv:2: weekday 'sat' is not one of mon, tue, wed, thu, fri")
        XCTAssertEqual(
            parse(slots: "school_id,weekday,time,place,capacity\nsa,tue,16:00,상담실,0\n"),
            "service_slots.csv:2: capacity '0' is not a whole number from 1 to 500")
        XCTAssertEqual(
            parse(
                schools:
                    "school_id,name,timezone,digest_time,service_due_days\nsa,서울고,Asia/Seoul,08:50,0\nsb,LA,America/Los_Angeles,07:30,\n"),
            "schools.csv:2: service_due_days '0' is not a whole number from 1 to 60 (empty: no due date)")

        // A vacation and the weekly list's day after a long weekend.
        let roster = try Roster.parse(
            schools: Self.schools, students: NotifierHarness.students, teachers: NotifierHarness.teachers,
            calendar: "school_id,date,end_date,name\n*,2026-12-24,2027-01-05,겨울방학\nsa,2027-01-11,2027-01-12,재량휴업\n")
        let calendar = try XCTUnwrap(roster.school("sa")?.calendar)
        XCTAssertEqual(calendar.schoolDay(1, after: "2026-12-23"), "2027-01-06")
        XCTAssertEqual(roster.school("sb")?.calendar.dayOff("2026-12-31"), "겨울방학")
        XCTAssertFalse(calendar.isWeekStart("2027-01-12"))
        XCTAssertTrue(calendar.isWeekStart("2027-01-13"), "Wednesday, after Monday and Tuesday off")
        XCTAssertEqual(calendar.schoolDay(before: "2027-01-13"), "2027-01-08")
    }
}
