import Guidance
import XCTest

@testable import Store

extension StoreSuite {
    /// A rule crossing opens one case however often its events come; a
    /// teacher's steps fold into it once each, in time order, a step the
    /// state does not allow kept as refused; a deletion that undoes the
    /// crossing withdraws it (철회), and a step that came before its case is
    /// folded in when the case opens; the student's erasure takes it all.
    func casesFollowTheirCrossingsAndSteps() throws {
        let store = try makeStore()
        let rules = ["sa": [SchoolRule(schoolID: "sa", reason: nil, count: 2, days: 7, notify: [.homeroom, .admin], label: "두 번")]]
        let first = GuidanceCase.id(school: "sa", student: "s1312", ruleKey: "*/2/7", ordinal: 1)
        let second = GuidanceCase.id(school: "sa", student: "s1312", ruleKey: "*/2/7", ordinal: 2)
        func step(_ id: String, _ action: CaseStep.Action, case caseId: String = first, at: String, note: String? = nil) -> StoredEvent {
            .caseStep(
                CaseStep(
                    eventId: id, caseId: caseId, schoolId: "sa", grade: 1, studentId: "s1312", action: action, note: note, by: "t-hr",
                    at: at))
        }
        func states() throws -> [String] {
            try store.cases(school: "sa", closedToo: true).map { "\($0.caseId == first ? "first" : "other") \($0.state.rawValue)" }
        }

        _ = try store.apply([.registered(record("g1", date: "2026-11-29")), .registered(record("g2", date: "2026-11-30"))], rules: rules)
        _ = try store.apply([.registered(record("g2", date: "2026-11-30")), .registered(record("g1", date: "2026-11-29"))], rules: rules)
        let opened = try store.cases(school: "sa")
        XCTAssertEqual(opened.map(\.caseId), [first], "one case, however often its events come")
        XCTAssertEqual(opened.first?.roles, [.homeroom, .admin])
        XCTAssertEqual(opened.first?.label, "두 번")
        XCTAssertEqual(opened.first?.state, .new)

        let planned = step("e1", .move(.counselingPlanned, nextDate: "2026-12-02"), at: "2026-11-29T22:55:00Z", note: "점심시간")
        _ = try store.apply([planned], rules: rules)
        _ = try store.apply([planned], rules: rules)
        var file = try XCTUnwrap(store.guidanceCase(school: "sa", id: first))
        XCTAssertEqual(file.0.state, .counselingPlanned)
        XCTAssertEqual(file.0.nextDate, "2026-12-02")
        XCTAssertEqual(file.1, ["g1", "g2"], "the records it counts")
        XCTAssertEqual(file.2.map { "\($0.action) \($0.by) \($0.note ?? "")" }, ["move t-hr 점심시간"], "a replayed step is one line")
        XCTAssertNil(try store.guidanceCase(school: "sb", id: first), "another school's id")

        // A deletion undoes the crossing: 철회, and a later move is refused.
        _ = try store.apply([deletion("g1")], rules: rules)
        XCTAssertEqual(try states(), ["first withdrawn"])
        XCTAssertEqual(try store.cases(school: "sa"), [], "a withdrawn case is nobody's to do")
        _ = try store.apply([step("e2", .move(.counseled, nextDate: nil), at: "2026-11-29T23:30:00Z")], rules: rules)
        file = try XCTUnwrap(store.guidanceCase(school: "sa", id: first))
        XCTAssertEqual(file.0.state, .withdrawn)
        XCTAssertEqual(file.2.map(\.action), ["move", "withdraw", "move"])
        XCTAssertEqual(file.2.last?.refused, "the case is 철회 (withdrawn) already")

        // Records that make it again open it again; a step for the second
        // crossing, taken before the records made it here, is folded in when they do.
        _ = try store.apply([step("e3", .move(.referred, nextDate: nil), case: second, at: "2026-12-01T00:00:00Z")], rules: rules)
        XCTAssertNil(try store.guidanceCase(school: "sa", id: second))
        _ = try store.apply(
            [
                .registered(record("g3", date: "2026-12-01", at: "2026-11-30T23:00:00Z")),
                .registered(record("g4", date: "2026-12-01", at: "2026-11-30T23:10:00Z")),
                .registered(record("g5", date: "2026-12-01", at: "2026-11-30T23:20:00Z"))
            ], rules: rules)
        XCTAssertEqual(Set(try states()), ["first new", "other referred"])

        // A case opened by hand is its opener's.
        let own = "0b8e0f7c-3f7a-4f3e-9d64-4a3c8f2e7b10"
        _ = try store.apply([step("e4", .open, case: own, at: "2026-12-01T03:00:00Z", note: "교우 관계")], rules: rules)
        let byHand = try XCTUnwrap(store.guidanceCase(school: "sa", id: own))
        XCTAssertEqual(byHand.0.origin, .teacher)
        XCTAssertEqual(byHand.0.holder, "t-hr")
        XCTAssertEqual(byHand.0.label, "교우 관계")
        // Another student's step on it changes nothing and is refused.
        let rejections = try store.apply(
            [
                .caseStep(
                    CaseStep(
                        eventId: "e5", caseId: own, schoolId: "sa", grade: 1, studentId: "s1399", action: .note, note: "x", by: "t-hr",
                        at: "2026-12-01T04:00:00Z"))
            ], rules: rules)
        XCTAssertEqual(rejections.count, 1)

        // Two steps of one second, the first on the whole second (written
        // `…:00Z`, which sorts after `…:00.341Z` as text): folded, and listed,
        // in the order they were taken.
        _ = try store.apply(
            [
                step("e6", .move(.counseled, nextDate: nil), case: own, at: "2026-12-01T05:00:00Z"),
                step("e7", .move(.guardianCounseling, nextDate: nil), case: own, at: "2026-12-01T05:00:00.341Z")
            ], rules: rules)
        let ordered = try XCTUnwrap(store.guidanceCase(school: "sa", id: own))
        XCTAssertEqual(ordered.0.state, .guardianCounseling, "the later step stands")
        XCTAssertEqual(ordered.2.suffix(2).map(\.stepId), ["e6", "e7"])

        let records = try store.records(school: "sa", student: "s1312")
        XCTAssertEqual(records.cases.count, 3)
        XCTAssertEqual(records.caseSteps.count, 8)
        XCTAssertEqual(records.caseSteps.suffix(2).map(\.stepId), ["e6", "e7"], "the export in the order taken")
        _ = try store.erase(school: "sa", student: "s1312") { ($0.subject, $0.text) }
        XCTAssertEqual(try store.cases(school: "sa", closedToo: true), [])
        XCTAssertEqual(try store.records(school: "sa", student: "s1312").caseSteps, [])
    }
}

extension StoreSuite {
    /// A second 불참 of 교내봉사 opens one case for the grade's volunteer-duty
    /// teacher and the admins, however often its records come; taking one
    /// back (되돌리기) withdraws it.
    func aSecondMissedSittingOpensOneCase() throws {
        let store = try makeStore()
        func missed(_ id: String, date: String) -> CommunityServiceRecord {
            CommunityServiceRecord(
                serviceId: id, schoolId: "sa", grade: 1, studentId: "s1312", date: date, sessions: 1, note: nil, recordedBy: "t-vd",
                recordedAt: date + "T07:30:00Z", outcome: .missed, dutyId: "g1/1")
        }
        _ = try store.apply([.communityServiceRecorded(missed("m1", date: "2026-11-24"))])
        XCTAssertEqual(try store.cases(school: "sa"), [], "one 불참 opens nothing")
        _ = try store.apply([.communityServiceRecorded(missed("m2", date: "2026-11-26"))])
        _ = try store.apply([
            .communityServiceRecorded(missed("m2", date: "2026-11-26")), .communityServiceRecorded(missed("m1", date: "2026-11-24"))
        ])
        let opened = try store.cases(school: "sa")
        XCTAssertEqual(opened.count, 1, "the second opens one case, however often the records come")
        XCTAssertEqual(opened.first?.origin, .service)
        XCTAssertEqual(opened.first?.roles, [.volunteerDuty, .admin])
        XCTAssertEqual(opened.first?.label, "교내봉사 불참 2회")
        XCTAssertEqual(opened.first?.openedAt, "2026-11-26T07:30:00Z", "opened at the second 불참's time")
        let file = try XCTUnwrap(store.guidanceCase(school: "sa", id: XCTUnwrap(opened.first?.caseId)))
        XCTAssertEqual(file.1, ["m1", "m2"], "the 불참 it counts")

        _ = try store.apply([
            .communityServiceWithdrawn(
                serviceId: "m1", schoolId: "sa", grade: 1, studentId: "s1312", withdrawnBy: "t-vd", occurredAt: "2026-11-26T08:00:00Z")
        ])
        XCTAssertEqual(try store.cases(school: "sa"), [], "taken back, the case is withdrawn")
        XCTAssertEqual(try store.cases(school: "sa", closedToo: true).map(\.state), [.withdrawn])
    }
}
