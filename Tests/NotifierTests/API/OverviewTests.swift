import Foundation
import Guidance
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
