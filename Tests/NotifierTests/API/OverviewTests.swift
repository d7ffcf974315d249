import Foundation
import Guidance
import Synchronization
import TestSupport
import XCTest

@testable import Notifier

/// 현황 counts what the list API lists for the same period: a week with
/// registrations on several days, of several reasons and classes, against
/// the week before.
final class OverviewTests: XCTestCase {
    var harness: NotifierHarness?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    /// Seconds since the epoch of `hour`:`minute` on the Seoul day `civil`.
    private func seoul(_ civil: Int, _ hour: Int, _ minute: Int = 0) -> String {
        Timestamp.format(Double(civil * 86_400 - 9 * 3600 + hour * 3600 + minute * 60))
    }

    /// Last week's Monday in Seoul, as a day number (day 0, 1970-01-01, was a Thursday).
    private func lastWeeksMonday() throws -> Int {
        let zone = try XCTUnwrap(TimeZone(identifier: "Asia/Seoul"))
        let today = try XCTUnwrap(Timestamp.parseDate(Timestamp.localDate(Date().timeIntervalSince1970, in: zone)))
        let civil = Timestamp.daysFromCivil(year: today.year, month: today.month, day: today.day)
        return civil - ((civil + 3) % 7 + 7) % 7 - 7
    }

    func testTheOverviewsFiguresAreTheListsFiguresForTheSamePeriod() async throws {
        let harness = try await NotifierHarness(authentication: true)
        self.harness = harness
        let zone = try XCTUnwrap(TimeZone(identifier: "Asia/Seoul"))
        // Last week's Monday and the Monday before.
        let monday = try lastWeeksMonday()
        let seats = [(1, 1, 1), (1, 1, 2), (1, 2, 1), (2, 1, 1), (3, 1, 1)]
        let week: [(day: Int, seat: Int, code: String, hour: Int)] = [
            (0, 0, "noShoes", 7), (0, 1, "wrongClothes", 8), (0, 2, "noShoes", 8), (2, 0, "trespassing", 8), (2, 3, "noShoes", 7),
            (4, 0, "noShoes", 8), (4, 4, "wrongClothes", 9), (4, 2, "noShoes", 8), (6, 1, "noShoes", 8)
        ]
        let before: [(day: Int, seat: Int, code: String, hour: Int)] = [(-6, 0, "noShoes", 8), (-3, 3, "wrongClothes", 7)]
        for item in week + before {
            let seat = seats[item.seat]
            try await harness.register(
                grade: seat.0, classNumber: seat.1, number: seat.2, code: item.code, at: seoul(monday + item.day, item.hour, 10),
                as: "t-gate")
        }
        let (from, to) = (Timestamp.dateString(civil: monday), Timestamp.dateString(civil: monday + 6))
        let list = { (teacher: String, query: String) async throws -> [AnyCodable] in
            let reply = try await fetch(
                "GET", "\(harness.notifierBase)/v1/schools/sa/guidances?\(query)", headers: harness.headers(teacher))
            XCTAssertEqual(reply.status, 200, reply.text)
            guard case .array(let items)? = reply.object["items"] else { return [] }
            return items
        }
        _ = try await eventually {
            try await list("t-admin", "from=\(Timestamp.dateString(civil: monday - 7))&to=\(to)")
        } until: {
            $0.count == week.count + before.count
        }
        // A period's rows count how often as of each row's own day (issue 70), not the week's end:
        // 1-1-1 on Monday (and the Tuesday before), Wednesday and Friday.
        let counts = try await list("t-admin", "from=\(from)&to=\(to)&scope=school").filter {
            $0["student"]?["studentId"]?.string == "a111"
        }.map { ($0["occurredAt"]?.string ?? "", $0["frequency"]?["last7Days"]?.int ?? 0, $0["frequency"]?["last30Days"]?.int ?? 0) }
        XCTAssertEqual(
            counts.sorted { $0.0 < $1.0 }.map { "\($0.1)/\($0.2)" }, ["2/2", "2/3", "3/4"],
            "Monday: itself and the Tuesday before; Wednesday: 7 days back no longer reach that Tuesday; Friday: the week's three")
        let overview = { (teacher: String, query: String) async throws -> Reply in
            try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/overview?\(query)", headers: harness.headers(teacher))
        }
        for (teacher, scope, groupKey) in [
            ("t-admin", "", "grade"), ("t-vd-1", "&grade=1", "classNumber"), ("t-hr-1-1", "&grade=1&classNumber=1", "")
        ] {
            let reply = try await overview(teacher, "period=week&date=\(Timestamp.dateString(civil: monday + 4))")
            XCTAssertEqual(reply.status, 200, reply.text)
            let body = reply.object
            XCTAssertEqual(body["from"]?.string, from)
            XCTAssertEqual(body["to"]?.string, to)
            XCTAssertEqual(body["previousFrom"]?.string, Timestamp.dateString(civil: monday - 7))
            let listed = try await list(teacher, "from=\(from)&to=\(to)\(scope)")
            let earlier = try await list(
                teacher, "from=\(Timestamp.dateString(civil: monday - 7))&to=\(Timestamp.dateString(civil: monday - 1))\(scope)")
            XCTAssertEqual(body["total"]?.int, listed.count, "\(teacher): the total is the list's")
            XCTAssertEqual(body["previousTotal"]?.int, earlier.count, "\(teacher): the week before is its list's")
            XCTAssertGreaterThan(listed.count, 0, teacher)
            func counted(_ items: [AnyCodable], _ key: (AnyCodable) -> String) -> [String: Int] {
                items.reduce(into: [:]) { $0[key($1), default: 0] += 1 }
            }
            func figures(_ name: String) -> [String: [Int]] {
                guard case .array(let items)? = body[name] else { return [:] }
                return Dictionary(
                    uniqueKeysWithValues: items.map { ($0["key"]?.string ?? "", [$0["count"]?.int ?? -1, $0["previous"]?.int ?? -1]) })
            }
            let reasons = counted(listed) { $0["reason"]?["code"]?.string ?? "" }
            let reasonsBefore = counted(earlier) { $0["reason"]?["code"]?.string ?? "" }
            XCTAssertEqual(
                figures("reasons"),
                Dictionary(
                    uniqueKeysWithValues: Set(reasons.keys).union(reasonsBefore.keys).map {
                        ($0, [reasons[$0] ?? 0, reasonsBefore[$0] ?? 0])
                    }),
                "\(teacher): by reason")
            if !groupKey.isEmpty {
                let groups = counted(listed) { String(format: "%03d", $0["student"]?[groupKey]?.int ?? 0) }
                let groupsBefore = counted(earlier) { String(format: "%03d", $0["student"]?[groupKey]?.int ?? 0) }
                XCTAssertEqual(
                    figures("groups"),
                    Dictionary(
                        uniqueKeysWithValues: Set(groups.keys).union(groupsBefore.keys).map {
                            ($0, [groups[$0] ?? 0, groupsBefore[$0] ?? 0])
                        }),
                    "\(teacher): by \(groupKey)")
            } else {
                XCTAssertEqual(figures("groups"), [:], "a class has no groups")
            }
            let hour = { (item: AnyCodable) in
                String(
                    format: "%02d",
                    Timestamp.parse(item["occurredAt"]?.string ?? "").map { Timestamp.local($0, in: zone).minuteOfDay / 60 } ?? -1)
            }
            XCTAssertEqual(figures("hours").mapValues { $0[0] }.filter { $0.value > 0 }, counted(listed, hour), "\(teacher): by hour")
            guard case .array(let students)? = body["students"] else { return XCTFail(reply.text) }
            let perStudent = counted(listed) { $0["student"]?["studentId"]?.string ?? "" }
            XCTAssertEqual(
                Dictionary(uniqueKeysWithValues: students.map { ($0["student"]?["studentId"]?.string ?? "", $0["count"]?.int ?? 0) }),
                perStudent, "\(teacher): the students with the most")
            XCTAssertEqual(students.first?["count"]?.int, perStudent.values.max())
            guard case .array(let days)? = body["days"] else { return XCTFail(reply.text) }
            XCTAssertEqual(days.count, 20, "four weeks of school days")
            let perDay = counted(listed) {
                $0["student"] != nil
                    ? ($0["occurredAt"]?.string).flatMap(Timestamp.parse).map { Timestamp.localDate($0, in: zone) } ?? "" : ""
            }
            for day in days where (day["date"]?.string ?? "") >= from {
                XCTAssertEqual(day["count"]?.int, perDay[day["date"]?.string ?? ""] ?? 0, "\(teacher): \(day["date"]?.string ?? "")")
            }
            XCTAssertFalse(days.contains { $0["date"]?.string == Timestamp.dateString(civil: monday + 6) }, "no Sunday in the chart")
        }
        // What the teacher's lists of other days allow, no more.
        for (teacher, query) in [("t-hr-1-1", "grade=1"), ("t-vd-1", "grade=2"), ("t-gate", "")] {
            let reply = try await overview(teacher, query)
            XCTAssertEqual(reply.status, 403, "\(teacher) \(query): \(reply.text)")
        }
        for query in ["period=year", "date=yesterday", "classNumber=1"] {
            let reply = try await overview("t-admin", query)
            XCTAssertEqual(reply.status, 400, "\(query): \(reply.text)")
        }
        for query in ["from=\(from)", "from=\(to)&to=\(from)", "from=\(from)&to=\(to)&date=\(from)", "from=2026-01-01&to=2026-06-30"] {
            let reply = try await fetch(
                "GET", "\(harness.notifierBase)/v1/schools/sa/guidances?\(query)", headers: harness.headers("t-admin"))
            XCTAssertEqual(reply.status, 400, "\(query): \(reply.text)")
        }
        let csv = try await fetch(
            "GET", "\(harness.notifierBase)/v1/schools/sa/guidances?from=\(from)&to=\(to)&scope=school",
            headers: harness.headers("t-admin").merging(["Accept": "text/csv"]) { $1 })
        XCTAssertEqual(csv.text.split(separator: "\r\n").count, week.count + 1, "the period's records as CSV: \(csv.text)")
        let recorded = try await harness.accessLog("?action=overview") { $0.count >= 3 }
        XCTAssertTrue(recorded.contains { $0["target"]?.string == "period=week&from=\(from)&to=\(to)&grade=1" }, "\(recorded)")
    }

    /// Issue 71: a class whose reason rose against its own four weeks
    /// before is named first among the rises; a steady one is not; a
    /// volunteer-duty teacher sees their grade's rises only.
    func testAClassAndReasonThatRoseAgainstItsOwnFourWeeksIsNamedFirst() async throws {
        let harness = try await NotifierHarness(authentication: true)
        self.harness = harness
        let monday = try lastWeeksMonday()
        // Four weeks before: 1-1 and 2-1 실내화 없음 once a week each (an average of 1 a week).
        var planted: [(grade: Int, classNumber: Int, number: Int, code: String, day: Int)] = []
        for week in 1...4 {
            planted += [(1, 1, 1, "noShoes", monday - 7 * week + 1), (2, 1, 1, "noShoes", monday - 7 * week + 2)]
        }
        // Last week: 2-1 six times (a rise of 5), 1-1 twice (of 1), 1-2 복장 불량 four times from none.
        planted += (0..<6).map { (2, 1, 1, "noShoes", monday + $0 % 5) }
        planted += [(1, 1, 1, "noShoes", monday), (1, 1, 2, "noShoes", monday + 1)]
        planted += (0..<4).map { (1, 2, 1, "wrongClothes", monday + $0) }
        for item in planted {
            try await harness.register(
                grade: item.grade, classNumber: item.classNumber, number: item.number, code: item.code, at: seoul(item.day, 8, 10),
                as: "t-gate")
        }
        let date = Timestamp.dateString(civil: monday)
        let rises = { (teacher: String) async throws -> [String] in
            let reply = try await fetch(
                "GET", "\(harness.notifierBase)/v1/schools/sa/overview?period=week&date=\(date)", headers: harness.headers(teacher))
            XCTAssertEqual(reply.status, 200, reply.text)
            guard case .array(let items)? = reply.object["rises"] else { return [] }
            return items.map {
                "\($0["grade"]?.int ?? 0)-\($0["classNumber"]?.int ?? 0) \($0["reason"]?["code"]?.string ?? "") "
                    + "\($0["count"]?.int ?? 0) vs \($0["average"]?.number ?? -1)"
            }
        }
        // Every record applied (the rises are made of their counts).
        _ = try await eventually {
            try await fetch(
                "GET",
                "\(harness.notifierBase)/v1/schools/sa/guidances?from=\(Timestamp.dateString(civil: monday - 27))&to=\(Timestamp.dateString(civil: monday + 6))",
                headers: harness.headers("t-admin"))
        } until: {
            if case .array(let items)? = $0.object["items"] { return items.count == planted.count }
            return false
        }
        let school = try await rises("t-admin")
        XCTAssertEqual(school, ["2-1 noShoes 6 vs 1.0", "1-2 wrongClothes 4 vs 0.0"], "the planted rise first; 1-1's one more is no rise")
        try await assertEqualAsync(await rises("t-vd-1"), ["1-2 wrongClothes 4 vs 0.0"], "a grade's teacher: the grade's rises")
    }

    /// "Is it working" over two weeks of a school with 교내봉사 sittings on
    /// Tuesdays and Thursdays (due 3 school days after the record), on a
    /// clock the test moves, asked on Friday 27 November 2026 for the week
    /// and the week before (Monday 16 a holiday):
    /// - week before: 가가 (1-1-1) recorded Tuesday 17, served Thursday 19
    ///   (by the due date, Friday 20), recorded again Monday 23: a repeat;
    ///   a case of 가가 opened Wednesday 18, 상담 예정 Thursday 19;
    /// - this week: 가가 and 다다 (1-2-1) recorded Monday 23; 다다 misses
    ///   Tuesday's sitting; a case of 다다 opened Tuesday 24; 가가's case
    ///   closed Wednesday 25; 가가 serves Thursday 26.
    /// Each figure as the school's admin sees it, and 1학년 1반's homeroom teacher
    /// only 가가's. The case is counted as it stood at each week's end.
    func testIsItWorkingCountsServiceCasesAndRepeatsForTheWeekAndTheWeekBefore() async throws {
        final class Now: Sendable { let time = Mutex(0.0) }
        let now = Now()
        let at = { (time: String) in now.time.withLock { $0 = Timestamp.parse(time) ?? 0 } }
        at("2026-11-16T23:40:00Z")
        let harness = try await NotifierHarness(
            authentication: true, clock: { now.time.withLock { $0 } },
            schools:
                "school_id,name,timezone,digest_time,service_due_days\nsa,서울고,Asia/Seoul,08:50,3\nsb,LA High,America/Los_Angeles,07:30,\n",
            calendar: "school_id,date,end_date,name\nsa,2026-11-16,,개교기념일\n",
            serviceSlots: "school_id,weekday,time,place,capacity\nsa,tue,16:00,상담실,4\nsa,thu,16:00,상담실,4\n")
        self.harness = harness
        let post = { (path: String, body: String, teacher: String) async throws in
            let reply = try await fetch(
                "POST", "\(harness.ingestBase)/v1/schools/sa/\(path)", body: body, headers: harness.headers(teacher))
            XCTAssertEqual(reply.status, 202, "\(path): \(reply.text)")
        }
        let serve = { (student: String, date: String, outcome: String, duty: String?) async throws in
            let dutyField = duty.map { #","dutyId":"\#($0)""# } ?? ""
            try await post(
                "grades/1/students/\(student)/service",
                #"{"serviceId":"\#(UUID().uuidString.lowercased())","date":"\#(date)","sessions":1,"outcome":"\#(outcome)"\#(dutyField)}"#,
                "t-vd-1")
        }
        /// The students' sessions of the 봉사 명단: `studentId: [dutyId]`, once `count` are there.
        let sessions = { (count: Int) async throws -> [String: [String]] in
            try await eventually {
                let reply = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service", headers: harness.headers("t-admin"))
                var found: [String: [String]] = [:]
                if case .array(let items) = reply.object["items"] {
                    for item in items {
                        guard case .array(let duties) = item["duties"] else { continue }
                        found[item["student"]?["studentId"]?.string ?? ""] = duties.compactMap { $0["dutyId"]?.string }
                    }
                }
                return found
            } until: {
                $0.values.reduce(0) { $0 + $1.count } >= count
            }
        }
        let caseA = UUID().uuidString.lowercased()
        let caseB = UUID().uuidString.lowercased()

        // The week before.
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-16T23:30:00Z", as: "t-gate")
        _ = try await sessions(1)
        at("2026-11-18T01:00:00Z")
        try await post("grades/1/students/a111/cases", #"{"caseId":"\#(caseA)","note":"지각 잦음"}"#, "t-hr-1-1")
        at("2026-11-19T08:00:00Z")
        try await serve("a111", "2026-11-19", "served", nil)
        try await post(
            "grades/1/students/a111/cases/\(caseA)/steps", #"{"action":"move","state":"counseling-planned","nextDate":"2026-11-24"}"#,
            "t-hr-1-1")
        // This week.
        at("2026-11-22T23:30:00Z")
        try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-22T23:20:00Z", as: "t-gate")
        try await harness.register(grade: 1, classNumber: 2, number: 1, at: "2026-11-22T23:25:00Z", as: "t-gate")
        let owed = try await sessions(3)
        at("2026-11-24T08:00:00Z")
        try await serve("a121", "2026-11-24", "missed", try XCTUnwrap(owed["a121"]?.first))
        try await post("grades/1/students/a121/cases", #"{"caseId":"\#(caseB)","note":"불참"}"#, "t-vd-1")
        at("2026-11-25T02:00:00Z")
        try await post("grades/1/students/a111/cases/\(caseA)/steps", #"{"action":"move","state":"closed"}"#, "t-hr-1-1")
        at("2026-11-26T08:00:00Z")
        try await serve("a111", "2026-11-26", "served", nil)
        at("2026-11-27T00:00:00Z")

        /// The overview's "is it working" figures: `key: [this week, the week before]`.
        func working(_ teacher: String) async throws -> [String: [Int]] {
            try await eventually {
                let reply = try await fetch(
                    "GET", "\(harness.notifierBase)/v1/schools/sa/overview?period=week", headers: harness.headers(teacher))
                XCTAssertEqual(reply.status, 200, reply.text)
                var found: [String: [Int]] = [:]
                for part in ["service", "cases", "repeats"] {
                    guard case .array(let items)? = reply.object["working"]?[part] else { continue }
                    for item in items {
                        found[part + "." + (item["key"]?.string ?? "")] = [item["count"]?.int ?? -1, item["previous"]?.int ?? -1]
                    }
                }
                return found
            } until: {
                $0["service.served"]?[0] == 1 && $0["cases.closed"]?[0] == 1
            }
        }
        let school = try await working("t-admin")
        XCTAssertEqual(
            school,
            [
                "service.owed": [2, 1], "service.served": [1, 1], "service.on-time": [1, 1], "service.missed": [1, 0],
                "cases.opened": [1, 1], "cases.closed": [1, 0], "cases.open-new": [1, 0], "cases.open-counseling-planned": [0, 1],
                "repeats.served": [1, 1], "repeats.again": [0, 1]
            ])
        let homeroom = try await working("t-hr-1-1")
        XCTAssertEqual(
            homeroom,
            [
                "service.owed": [1, 1], "service.served": [1, 1], "service.on-time": [1, 1], "service.missed": [0, 0],
                "cases.opened": [0, 1], "cases.closed": [1, 0], "cases.open-counseling-planned": [0, 1],
                "repeats.served": [1, 1], "repeats.again": [0, 1]
            ], "1학년 1반: 가가 only")
    }

    func testAWeekStartsOnMondayAndAMonthComparesTheSameDaysOfTheMonthBefore() {
        let week = OverviewHandlers.periods("week", date: "2026-12-03", today: "2026-12-04")
        XCTAssertEqual(week?.current, .init(from: "2026-11-30", to: "2026-12-04"), "this week up to today")
        XCTAssertEqual(week?.previous, .init(from: "2026-11-23", to: "2026-11-27"), "the same days of the week before")
        XCTAssertEqual(week?.chart, .init(from: "2026-11-07", to: "2026-12-04"))
        XCTAssertEqual(week?.baseline, .init(from: "2026-11-02", to: "2026-11-29"), "the four weeks before, for the rises")
        let month = OverviewHandlers.periods("month", date: "2026-03-31", today: "2026-12-04")
        XCTAssertEqual(month?.current, .init(from: "2026-03-01", to: "2026-03-31"))
        XCTAssertEqual(month?.previous, .init(from: "2026-02-01", to: "2026-02-28"), "February has no 29th–31st")
        XCTAssertEqual(
            OverviewHandlers.periods("month", date: "2026-12-04", today: "2026-12-04")?.previous,
            .init(from: "2026-11-01", to: "2026-11-04"))
    }
}
