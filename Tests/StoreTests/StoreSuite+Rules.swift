import Guidance
import XCTest

@testable import Store

extension StoreSuite {
    /// Crossings are decided where events are applied: once however often
    /// the events come, withdrawn by a deletion that undoes them, told once,
    /// and gone with the student's erasure.
    func rulesAreCrossedOnceToldOnceAndWithdrawn() throws {
        let store = try makeStore()
        let rules = ["sa": [SchoolRule(schoolID: "sa", reason: nil, count: 2, days: 7, notify: [.admin], label: "두 번")]]
        var told: [String] = []
        func tell() throws -> [Digest] {
            try store.tellCrossings(schools: store.untoldSchools(), createdAt: "2026-12-01T00:00:00Z", today: { _ in "2026-12-01" }) {
                crossing in
                told.append("\(crossing.ruleKey) \(crossing.ordinal) \(crossing.active) \(crossing.records.map(\.guidanceId))")
                return ["t-admin", "t-hr"].map {
                    RuleNotice(
                        teacherId: $0, grade: 1, classNumber: 3, subject: crossing.active ? "notice" : "withdrawn", text: "",
                        entries: [], counts: [:])
                }
            } targets: { _, _ in
                []
            }
        }
        _ = try store.apply([.registered(record("g1", date: "2026-11-29"))], rules: rules)
        XCTAssertEqual(try store.crossings(school: "sa", student: "s1312"), [])
        let rings = store.crossingsChanged.rings
        _ = try store.apply([.registered(record("g2", date: "2026-11-30")), .registered(record("o1", number: 7))], rules: rules)
        XCTAssertGreaterThan(store.crossingsChanged.rings, rings, "the commit rang")
        // Again, and the same events in another batch: nothing new.
        _ = try store.apply([.registered(record("g2", date: "2026-11-30")), .registered(record("g1", date: "2026-11-29"))], rules: rules)
        let crossings = try store.crossings(school: "sa", student: "s1312")
        XCTAssertEqual(crossings.map { "\($0.ruleKey) \($0.date) \($0.active) \($0.told)" }, ["*/2/7 2026-11-30 true false"])
        XCTAssertEqual(crossings.first?.records.map(\.guidanceId), ["g1", "g2"])

        let notices = try tell()
        XCTAssertEqual(notices.map(\.digestId), ["sa.2026-11-30.t-admin.rule.r1", "sa.2026-11-30.t-hr.rule.r1"])
        XCTAssertEqual(Set(notices.map(\.scope)), [.rule])
        XCTAssertEqual(try tell(), [], "told once")
        XCTAssertEqual(told, ["*/2/7 1 true [\"g1\", \"g2\"]"])
        // The day's digest run does not take a notice for one of its revisions.
        let run = try store.writeDigests(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-30T00:00:00Z",
            plan: { state in
                XCTAssertNil(state.revisions.keys.first { $0.scope == .rule })
                return []
            }, targets: { _ in [] })
        XCTAssertEqual(run, [])

        // A deletion undoes it; the next crossing of the day is the teacher's second notice.
        _ = try store.apply([deletion("g1")], rules: rules)
        XCTAssertEqual(try tell().map(\.subject), ["withdrawn", "withdrawn"])
        _ = try store.apply([.registered(record("g3", date: "2026-11-30"))], rules: rules)
        XCTAssertEqual(try tell().map(\.digestId), ["sa.2026-11-30.t-admin.rule.r3", "sa.2026-11-30.t-hr.rule.r3"])
        XCTAssertEqual(try store.inbox(teacher: "t-admin").map(\.subject).sorted(), ["notice", "notice", "withdrawn"])

        _ = try store.erase(school: "sa", student: "s1312") { ($0.subject, $0.text) }
        XCTAssertEqual(try store.crossings(school: "sa", student: "s1312"), [])
    }
}

extension StoreSuite {
    /// A flood of back-dated records crosses a rule again and again: each
    /// teacher hears of the student and rule once a school day, the day's
    /// notice showing the newest crossing (unread again), in one batch or
    /// in several; the next day is a new notice.
    func aFloodOfCrossingsIsOneNoticeADay() throws {
        let store = try makeStore()
        let rules = ["sa": [SchoolRule(schoolID: "sa", reason: nil, count: 2, days: 7, notify: [.admin], label: "두 번")]]
        func tell(on day: String) throws -> [Digest] {
            try store.tellCrossings(schools: store.untoldSchools(), createdAt: day + "T01:00:00Z", today: { _ in day }) { crossing in
                [
                    RuleNotice(
                        teacherId: "t-admin", grade: 1, classNumber: 3, subject: "crossing \(crossing.ordinal)", text: "", entries: [],
                        counts: [:])
                ]
            } targets: { _, _ in
                [DeliveryTarget(channel: .email, target: "admin@school.example", heldUntil: nil)]
            }
        }
        // 40 records of one student over 40 days: 20 crossings of "two in 7 days", told in one batch.
        let days = (1...40).map { Timestamp.dateString(civil: Timestamp.civilDay("2026-10-20")! + $0) }
        _ = try store.apply(days.enumerated().map { .registered(record("f\($0.offset)", date: $0.element)) }, rules: rules)
        let first = try tell(on: "2026-12-01")
        XCTAssertEqual(first.count, 1, "one notice for the student and rule: \(first.map(\.subject))")
        XCTAssertEqual(first.first?.subject, "crossing 20", "showing the newest crossing")
        XCTAssertEqual(try store.deliveries(school: "sa", status: nil, limit: 100).count, 1, "one e-mail")
        _ = try store.markRead(teacher: "t-admin", digestId: try XCTUnwrap(first.first?.digestId))

        // More, in later batches of the same day: merged into that notice, which is unread again; no new message.
        for batch in 0..<3 {
            _ = try store.apply(
                [.registered(record("m\(batch)a", date: "2026-11-30")), .registered(record("m\(batch)b", date: "2026-11-30"))], rules: rules
            )
            XCTAssertEqual(try tell(on: "2026-12-01"), [], "batch \(batch): nothing new is told")
        }
        let inbox = try store.inbox(teacher: "t-admin")
        XCTAssertEqual(inbox.map(\.subject), ["crossing 23"])
        XCTAssertEqual(inbox.first?.read, false, "the merged notice is unread again")
        XCTAssertEqual(try store.deliveries(school: "sa", status: nil, limit: 100).count, 1)

        // The next school day, the next crossing is told again.
        _ = try store.apply([.registered(record("n1", date: "2026-12-01")), .registered(record("n2", date: "2026-12-01"))], rules: rules)
        XCTAssertEqual(try tell(on: "2026-12-02").map(\.subject), ["crossing 24"])
        XCTAssertEqual(try store.deliveries(school: "sa", status: nil, limit: 100).count, 2)

        // A record deleted: the last crossing is withdrawn, but 23 others still stand: nothing to tell.
        _ = try store.apply([deletion("n2")], rules: rules)
        XCTAssertEqual(try store.crossings(school: "sa", student: "s1312").filter(\.active).count, 23)
        XCTAssertEqual(try tell(on: "2026-12-02"), [], "the student still stands crossed")
        XCTAssertEqual(try store.crossings(school: "sa", student: "s1312").filter { $0.active != $0.told }, [], "and it is marked told")
    }
}

extension StoreSuite {
    /// Held deliveries (quiet hours) of one teacher, channel and kind: the
    /// newest goes and counts the others, whether they came in one batch
    /// (two notices at once) or in two.
    func heldDeliveriesOfAKindBecomeOne() throws {
        let store = try makeStore()
        let rules = ["sa": [SchoolRule(schoolID: "sa", reason: nil, count: 2, days: 7, notify: [.homeroom], label: "두 번")]]
        let createdAt = "2026-11-30T13:00:00Z"
        let release = Timestamp.parse("2026-11-30T22:00:00Z")!
        func tell() throws -> [Digest] {
            try store.tellCrossings(schools: store.untoldSchools(), createdAt: createdAt, today: { _ in "2026-11-30" }) { crossing in
                [RuleNotice(teacherId: "t-hr", grade: 1, classNumber: 3, subject: crossing.studentId, text: "", entries: [], counts: [:])]
            } targets: { _, _ in
                [DeliveryTarget(channel: .push, target: "devices", heldUntil: release)]
            }
        }
        // Two students of one class cross the rule in one batch: two notices at once.
        _ = try store.apply(
            [
                .registered(record("a1", number: 1)), .registered(record("a2", number: 1)), .registered(record("b1", number: 2)),
                .registered(record("b2", number: 2))
            ], rules: rules)
        XCTAssertEqual(try tell().count, 2)
        let now = Timestamp.parse(createdAt)! + 1
        XCTAssertEqual(try store.claimDeliveries(channel: .push, limit: 10, owner: "A", now: now, leaseUntil: now + 60).count, 0, "held")
        let first = try store.deliveries(school: "sa", status: nil, limit: 10)
        XCTAssertEqual(first.map(\.status).sorted { $0.rawValue < $1.rawValue }, [.merged, .pending])
        XCTAssertEqual(first.first { $0.status == .merged }?.lastError, "replaced by sa.2026-11-30.t-hr.rule.r2.push")

        // A third, in a later batch, replaces the one waiting and stands for all three.
        _ = try store.apply([.registered(record("c1", number: 4)), .registered(record("c2", number: 4))], rules: rules)
        XCTAssertEqual(try tell().count, 1)
        let claimed = try store.claimDeliveries(channel: .push, limit: 10, owner: "A", now: release, leaseUntil: release + 60)
        XCTAssertEqual(claimed.map(\.delivery.deliveryId), ["sa.2026-11-30.t-hr.rule.r3.push"])
        XCTAssertEqual(claimed.first?.merged, 2)
        XCTAssertEqual(try store.deliveries(school: "sa", status: .merged, limit: 10).count, 2)
    }
}
