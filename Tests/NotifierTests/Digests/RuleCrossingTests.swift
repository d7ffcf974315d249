import DeadLetters
import Foundation
import Guidance
import Kafka
import Synchronization
import TestSupport
import XCTest

@testable import Notifier
@testable import Store

/// A school's rule (`rules.csv`) flags a student who keeps coming back: the
/// teachers it names hear of it within seconds, once, from replicas that
/// share a PostgreSQL store and a consumer group, through a replica's stop,
/// a restart and a dead letter replayed; a deletion withdraws it.
final class RuleCrossingTests: XCTestCase {
    var harness: NotifierHarness?

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    static let rules = """
        school_id,reason,count,days,notify,label
        sa,*,3,7,homeroom+admin,학생부장 상담 대상
        sa,noShoes,2,30,volunteer_duty,실내화 반복

        """

    func testTheThirdRecordInAWeekTellsTheHomeroomTeacherAndTheAdminOnceAndADeletionWithdrawsIt() async throws {
        let url = try NotifierHarness.postgresURL(schema: "rules")
        let harness = try await NotifierHarness(store: .postgres(url: url), rules: Self.rules)
        self.harness = harness
        let first = try XCTUnwrap(harness.notifier)
        let second = try await harness.startReplica(sharing: true)
        let store = try SQLStore.postgres(url: url, clock: Timestamp.now)
        let now = Date().timeIntervalSince1970
        let zone = try XCTUnwrap(TimeZone(identifier: "Asia/Seoul"))
        func day(_ secondsAgo: Double) -> String { Timestamp.localDate(now - secondsAgo, in: zone) }

        // Two records of 가가 (1학년 1반 1번) on two days of this week: no rule crossed yet.
        let records = [
            try await harness.register(grade: 1, classNumber: 1, number: 1, code: "noShoes", at: Timestamp.format(now - 2 * 86_400)),
            try await harness.register(grade: 1, classNumber: 1, number: 1, code: "wrongClothes", at: Timestamp.format(now - 86_400))
        ]
        for (record, secondsAgo) in zip(records, [2 * 86_400.0, 86_400]) {
            let listed = try await eventually {
                try store.guidances(school: "sa", date: day(secondsAgo), grade: 1, classNumber: 1).map(\.guidanceId)
            } until: {
                $0.contains(record)
            }
            XCTAssertTrue(listed.contains(record))
        }
        XCTAssertEqual(try store.crossings(school: "sa", student: "a111"), [])

        // One replica stops; the other takes its partitions.
        let partitions = first.assignedPartitions + second.assignedPartitions
        await harness.stopNotifier()
        let took = try await eventually(within: .seconds(60)) {
            second.assignedPartitions
        } until: {
            $0 == partitions
        }
        XCTAssertEqual(took, partitions, "the remaining replica took every partition")
        let other = "http://127.0.0.1:\(second.port)"

        // The third in seven days: both teachers the rule names hear of it, within 10 s.
        let third = try await harness.register(grade: 1, classNumber: 1, number: 1, code: "noShoes", at: Timestamp.format(now - 60))
        for teacher in ["t-hr-1-1", "t-admin"] {
            let notices = try await eventually(within: .seconds(10)) {
                try await Self.notices(of: teacher, at: other)
            } until: {
                $0.count == 1
            }
            XCTAssertEqual(notices.count, 1, "\(teacher) was told within 10 s")
            let notice = try XCTUnwrap(notices.first)
            XCTAssertEqual(notice["subject"]?.string, "[서울고] 학생부장 상담 대상: 1학년 1반 1번 (최근 7일 동안 지도 3회)")
            XCTAssertEqual(notice.entryChanges, (records + [third]).map { "\($0) added" }.sorted())
            XCTAssertFalse(notice["subject"]?.string?.contains("가가") ?? true, "the subject names no student")
        }
        // The second rule counts 실내화 없음 only: its two are the first and the third.
        let duty = try await eventually(within: .seconds(10)) {
            try await Self.notices(of: "t-vd-1", at: other)
        } until: {
            $0.count == 1
        }
        XCTAssertEqual(duty.first?["subject"]?.string, "[서울고] 실내화 반복: 1학년 1반 1번 (최근 30일 동안 실내화 없음 2회)")
        XCTAssertEqual(duty.first?.entryChanges, [records[0], third].map { "\($0) added" }.sorted())
        // Nobody else: 가가's homeroom is 1-1.
        try await assertEqualAsync(try await Self.notices(of: "t-hr-1-2", at: other).count, 0)

        // A restart, and the third registration again from the dead-letter topic: nothing new to tell.
        try await harness.startNotifier()
        let letter = GuidanceRegistered(
            eventId: RandomID.uuid(), guidanceId: third, schoolId: "sa",
            student: StudentRef(studentId: "a111", grade: 1, classNumber: 1, number: 1, name: "가가"),
            reason: ReasonRef(code: "noShoes", label: "실내화 없음", detail: nil), recordedBy: "t-gate",
            occurredAt: Timestamp.format(now - 60), recordedAt: Timestamp.format(now - 59))
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("dlq"))
        defer { producer.close() }
        _ = try await producer.send(
            OutgoingMessage(
                topic: harness.topics.deadLetters, key: "sa/1", value: letter.json,
                headers: [
                    ("event-type", "guidance.registered"), ("dlq-reason", "test: sent twice"),
                    ("dlq-source-topic", harness.topics.registered), ("dlq-source-partition", "0"), ("dlq-source-offset", "0")
                ]))
        let replay = DeadLetterReplay(
            kafka: KafkaConfig(bootstrapServers: harness.cluster.bootstrapServers), topics: harness.topics, logger: quietLogger("replay"))
        let replayed = try await replay.run(DeadLetterReplay.Selection(reasonContains: "sent twice"), dryRun: false)
        XCTAssertEqual(replayed.count, 1)
        // Applied once the group's commits reach the topic's end, the copy included.
        let offsets = try OffsetsReader(
            kafka: KafkaConfig(bootstrapServers: harness.cluster.bootstrapServers), groupID: harness.groupID, clientID: "rules-check",
            logger: quietLogger("check"))
        let ends = try offsets.endOffsets(of: [harness.topics.registered])
        XCTAssertEqual(ends.values.reduce(0, +), 4, "three registrations and the copy")
        let caughtUp = try await eventually(within: .seconds(30)) {
            try offsets.committedOffsets(Array(ends.keys))
        } until: { committed in
            ends.allSatisfy { partition, end in ((committed[partition] ?? nil) ?? 0) >= end }
        }
        XCTAssertTrue(ends.allSatisfy { ((caughtUp[$0.key] ?? nil) ?? 0) >= $0.value }, "the copy was applied: \(caughtUp) of \(ends)")
        let crossings = try store.crossings(school: "sa", student: "a111")
        XCTAssertEqual(
            crossings.map { "\($0.ruleKey) \($0.ordinal) \($0.active) \($0.told)" }, ["*/3/7 1 true true", "noShoes/2/30 1 true true"])
        for teacher in ["t-hr-1-1", "t-admin", "t-vd-1"] {
            try await assertEqualAsync(try await Self.notices(of: teacher, at: harness.notifierBase).count, 1, "\(teacher): one notice")
        }

        // A record deleted by mistake undoes both crossings: each teacher hears it is withdrawn.
        try await harness.delete(grade: 1, guidanceID: records[0])
        for teacher in ["t-hr-1-1", "t-admin", "t-vd-1"] {
            let notices = try await eventually(within: .seconds(10)) {
                try await Self.notices(of: teacher, at: other)
            } until: {
                $0.count == 2
            }
            XCTAssertEqual(
                notices.map { $0["subject"]?.string ?? "" }.first,
                "[서울고] 철회 — \(teacher == "t-vd-1" ? "실내화 반복" : "학생부장 상담 대상"): 1학년 1반 1번")
            XCTAssertEqual(notices.count, 2, "\(teacher): the notice and its withdrawal")
        }
        XCTAssertEqual(
            try store.crossings(school: "sa", student: "a111").map { "\($0.ruleKey) \($0.active) \($0.told)" },
            ["*/3/7 false false", "noShoes/2/30 false false"])
    }

    /// One gate token posts many back-dated records for one student: each
    /// crossing of a rule is stored, but a teacher hears of the student and
    /// rule once a school day, through the API; the next day, once more.
    func testAFloodOfBackDatedRecordsTellsEachTeacherOnceADay() async throws {
        let clock = Mutex(Timestamp.parse("2026-11-21T03:00:00Z")!)  // Saturday 12:00 in Seoul
        let harness = try await NotifierHarness(clock: { clock.withLock { $0 } }, rules: Self.rules)
        self.harness = harness
        let store = try SQLStore.sqlite(path: harness.directory.appendingPathComponent("notifier.db").path, clock: Timestamp.now)
        // Two records a day for the last seven days: four crossings of "3 in 7 days", seven of "실내화 2 in 30".
        for day in 15...21 {
            for hour in ["00", "01"] {
                try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-\(day - 1)T\(hour):10:00Z", as: "t-gate")
            }
        }
        let crossings = try await eventually(within: .seconds(30)) {
            try store.crossings(school: "sa", student: "a111")
        } until: {
            $0.count == 4 + 7 && $0.allSatisfy(\.told)
        }
        XCTAssertEqual(crossings.count, 11, "every crossing is kept")
        for teacher in ["t-hr-1-1", "t-admin", "t-vd-1"] {
            try await assertEqualAsync(try await Self.notices(of: teacher, at: harness.notifierBase).count, 1, "\(teacher): once today")
        }
        let today = try await Self.notices(of: "t-hr-1-1", at: harness.notifierBase)
        let notice = try XCTUnwrap(today.first)
        XCTAssertTrue(notice["subject"]?.string?.contains("지도") == true, "\(notice)")

        // Sunday: two more records cross the rule again, told once more.
        clock.withLock { $0 = Timestamp.parse("2026-11-22T03:00:00Z")! }
        for minute in 10...12 {
            try await harness.register(grade: 1, classNumber: 1, number: 1, at: "2026-11-22T00:\(minute):00Z", as: "t-gate")
        }
        let next = try await eventually(within: .seconds(30)) {
            try await Self.notices(of: "t-hr-1-1", at: harness.notifierBase)
        } until: {
            $0.count >= 2
        }
        XCTAssertEqual(next.count, 2, "one notice a day")
        // Two more turns of the notices' loop tell nothing more.
        let notices = try XCTUnwrap(harness.notifier?.notices)
        await notices.turn()
        await notices.turn()
        try await assertEqualAsync(try await Self.notices(of: "t-hr-1-1", at: harness.notifierBase).count, 2)
    }

    /// Whom a crossing tells: the teachers its rule names for the student's
    /// seat now, each once; nobody for a crossing older than the rule's
    /// window, nor for its withdrawal.
    func testACrossingTellsTheTeachersOfTheSeatAndNothingPastTheRulesWindow() throws {
        let roster = try Roster.parse(
            schools: NotifierHarness.schools, students: NotifierHarness.students, teachers: NotifierHarness.teachers)
        let now = try XCTUnwrap(Timestamp.parse("2026-12-04T01:00:00Z"))  // 10:00 in Seoul
        let record = GuidanceRecord(
            guidanceId: "g1", schoolId: "sa", date: "2026-11-30",
            student: StudentRef(studentId: "a111", grade: 1, classNumber: 1, number: 1, name: "가가"),
            reason: ReasonRef(code: "noShoes", label: "실내화 없음", detail: nil), occurredAt: "2026-11-29T23:00:00Z", recordedBy: "t-gate")
        func crossing(on date: String, active: Bool, notify: Set<Teacher.Role> = [.homeroom, .admin, .volunteerDuty]) -> RuleCrossing {
            RuleCrossing(
                schoolId: "sa", studentId: "a111",
                rule: SchoolRule(schoolID: "sa", reason: nil, count: 3, days: 7, notify: notify, label: "상담"), ordinal: 1, date: date,
                active: active, told: !active, changedAt: "", records: [record])
        }
        let told = RuleNotices.notices(of: crossing(on: "2026-11-28", active: true), roster: roster, now: now)
        XCTAssertEqual(Set(told.map(\.teacherId)), ["t-hr-1-1", "t-admin", "t-vd-1"], "the class's, the grade's and the admins")
        XCTAssertEqual(told.first?.subject, "[서울고] 상담: 1학년 1반 1번 (최근 7일 동안 지도 3회)")
        XCTAssertEqual(told.first?.entries.map(\.guidanceId), ["g1"])
        XCTAssertFalse(told.contains { $0.text.contains("가가") }, "no name in the words")
        let withdrawn = RuleNotices.notices(of: crossing(on: "2026-11-28", active: false, notify: [.admin]), roster: roster, now: now)
        XCTAssertEqual(withdrawn.map(\.teacherId), ["t-admin"])
        XCTAssertEqual(withdrawn.first?.subject, "[서울고] 철회 — 상담: 1학년 1반 1번")
        XCTAssertEqual(withdrawn.first?.entries, [])
        // 11-27 is the 8th day before 12-04: past a 7-day window, both ways.
        XCTAssertEqual(RuleNotices.notices(of: crossing(on: "2026-11-27", active: true), roster: roster, now: now).count, 0)
        XCTAssertEqual(RuleNotices.notices(of: crossing(on: "2026-11-27", active: false), roster: roster, now: now).count, 0)
    }

    /// The rule notices in a teacher's inbox, newest first.
    private static func notices(of teacher: String, at base: String) async throws -> [AnyCodable] {
        let reply = try await fetch("GET", "\(base)/v1/teachers/\(teacher)/inbox")
        guard case .array(let items) = reply.object["items"] else { return [] }
        return items.filter { $0["scope"]?.string == "rule" }
    }
}
