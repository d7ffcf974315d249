import Foundation
import Guidance
import Kafka
import Store
import XCTest

@testable import Notifier

/// The pure parts of the notifier, without a broker or a store: who gets
/// which digest (DigestPlanner), what it says (DigestText), and which
/// messages become events (EventDecoder).
final class DigestPlannerTests: XCTestCase {
    private static let roster: Roster = {
        let schools = "school_id,name,timezone,digest_time\nsa,한빛고,Asia/Seoul,08:50\n"
        let students =
            "school_id,student_id,grade,class,number,name,photo_url\n"
            + "sa,s111,1,1,1,김민지,\nsa,s112,1,1,2,이서준,\nsa,s121,1,2,1,박지우,\nsa,s211,2,1,1,최하은,\n"
        let teachers =
            "school_id,teacher_id,name,email,role,grade,class\n"
            + "sa,hr11,담임11,,homeroom,1,1\nsa,hr12,담임12,,homeroom,1,2\nsa,hr21,담임21,,homeroom,2,1\n"
            + "sa,vd1,봉사1,,volunteer_duty,1,\nsa,g1,교문,,gate,,\n"
        return try! Roster.parse(schools: schools, students: students, teachers: teachers)
    }()

    private var school: School { DigestPlannerTests.roster.school("sa")! }

    /// A guidance of student `id` at `occurredAt` (UTC).
    private func record(
        _ id: String, _ student: String, _ code: String, detail: String? = nil, at occurredAt: String = "2026-11-29T22:52:00Z"
    ) -> GuidanceRecord {
        let seat = ["s111": (1, 1, 1), "s112": (1, 1, 2), "s121": (1, 2, 1), "s211": (2, 1, 1)][student]!
        let resident = DigestPlannerTests.roster.student(school: "sa", grade: seat.0, classNumber: seat.1, number: seat.2)!
        let reason = school.reason(code)!
        return GuidanceRecord(
            guidanceId: id, schoolId: "sa", date: "2026-11-30", student: StudentRef(resident),
            reason: ReasonRef(code: code, label: reason.label, detail: detail), occurredAt: occurredAt, recordedBy: "g1")
    }

    /// A guidance as a digest told it.
    private func told(_ record: GuidanceRecord) -> DigestEntry {
        DigestEntry(
            guidanceId: record.guidanceId, student: record.student, reason: record.reason, occurredAt: record.occurredAt, change: .added)
    }

    private func plan(
        active: [GuidanceRecord], reported: [Recipient: [GuidanceRecord]] = [:], revisions: [Recipient: Int] = [:],
        frequencies: [String: Frequency] = [:]
    ) -> [String: Digest] {
        let digests = DigestPlanner(roster: DigestPlannerTests.roster).plan(
            school: school, date: "2026-11-30",
            state: DeliveryState(
                active: active, reported: reported.mapValues { Told($0.map(told), scope: .class) }, revisions: revisions,
                frequencies: frequencies),
            createdAt: "2026-11-30T00:00:00Z")
        return Dictionary(uniqueKeysWithValues: digests.map { ($0.teacherId, $0) })
    }

    func testTheFirstRevisionGivesEachTeacherTheirScopeAndNobodyAnEmptyDigest() {
        let a = record("a", "s112", "noShoes")
        let b = record("b", "s111", "others", detail: "껌")
        let c = record("c", "s121", "wrongClothes")
        let digests = plan(active: [a, b, c])
        XCTAssertEqual(Set(digests.keys), ["hr11", "hr12", "vd1"], "hr21's class has nothing: no digest")
        let class11 = digests["hr11"]!
        XCTAssertEqual(class11.entries.map(\.guidanceId), ["b", "a"], "ordered by number")
        XCTAssertEqual(class11.revision, 1)
        XCTAssertEqual(class11.scope, .class)
        XCTAssertEqual(class11.counts, ["others": 1, "noShoes": 1])
        XCTAssertEqual(class11.digestId, Digest.id(school: "sa", date: "2026-11-30", recipient: class11.recipient, revision: 1))
        XCTAssertEqual(digests["vd1"]!.entries.map(\.guidanceId), ["b", "a", "c"], "the grade, by class then number")
        XCTAssertEqual(digests["vd1"]!.classNumber, nil)
        XCTAssertTrue(digests.values.allSatisfy { $0.entries.allSatisfy { $0.change == .added } })
    }

    func testTheDigestJSONNamesEveryFieldOfTheContractWithANullClassForAGrade() throws {
        let digests = plan(active: [record("a", "s112", "noShoes")])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let grade = try XCTUnwrap(JSONSerialization.jsonObject(with: encoder.encode(DigestJSON(digests["vd1"]!))) as? [String: Any])
        XCTAssertEqual(
            grade.keys.sorted(),
            [
                "classNumber", "counts", "createdAt", "date", "digestId", "entries", "grade", "read", "revision", "schoolId", "scope",
                "subject", "teacherId", "text"
            ])
        XCTAssertTrue(grade["classNumber"] is NSNull, "a grade digest writes classNumber: null, not nothing")
        XCTAssertEqual(grade["scope"] as? String, "grade")
        let homeroom = try XCTUnwrap(JSONSerialization.jsonObject(with: encoder.encode(DigestJSON(digests["hr11"]!))) as? [String: Any])
        XCTAssertEqual(homeroom["classNumber"] as? Int, 1)
        XCTAssertEqual((homeroom["entries"] as? [[String: Any]])?.first?["guidanceId"] as? String, "a")
    }

    func testAnAmendmentCarriesOnlyWhatChangedForWhomItChanged() {
        let a = record("a", "s111", "noShoes")
        let b = record("b", "s112", "others", detail: "껌")
        let c = record("c", "s111", "trespassing")
        let class11 = Recipient(teacherId: "hr11", scope: .class, grade: 1, classNumber: 1)
        let class12 = Recipient(teacherId: "hr12", scope: .class, grade: 1, classNumber: 2)
        let digests = plan(
            active: [b, c], reported: [class11: [a, b], class12: []], revisions: [class11: 1, class12: 1])
        let amendment = digests["hr11"]!
        XCTAssertEqual(amendment.revision, 2)
        XCTAssertEqual(amendment.entries.map { "\($0.guidanceId) \($0.change.rawValue)" }, ["a removed", "c added"])
        XCTAssertEqual(amendment.counts, ["trespassing": 1], "counts are of what was added")
        XCTAssertNil(digests["hr12"], "nothing changed for class 1-2")
        XCTAssertEqual(digests["vd1"]?.revision, 1, "the grade's first digest lists everything active")
    }

    /// One vocabulary (docs/design.md, "Words"): 교문 지도 명단, `N차 정정`,
    /// 추가된 기록 / 삭제된 기록, `오전 7:52` on the school's clock, and how often
    /// the student was stopped in the last 7 and 30 days.
    func testTheTextNamesTheDayTheTimeAndHowOftenInTeachersWords() {
        let a = record("a", "s111", "others", detail: "길에 껌을 뱉음", at: "2026-11-29T22:52:00Z")
        let c = record("c", "s121", "noShoes", at: "2026-11-30T05:05:00Z")
        let frequencies = ["s111": Frequency(last7Days: 2, last30Days: 4), "s121": Frequency(last7Days: 1, last30Days: 1)]
        let grade = plan(active: [a, c], frequencies: frequencies)["vd1"]!
        XCTAssertEqual(grade.subject, "[한빛고] 11월 30일(월) 1학년 교문 지도 명단 2건")
        XCTAssertEqual(
            grade.text,
            """
            11월 30일(월) 1학년 교문 지도 명단입니다.
            아래 학생들을 봉사활동 명단에 올려 주세요.

            [1반]
            • 1번 김민지 — 기타 (길에 껌을 뱉음), 오전 7:52 · 최근 7일 2회 · 최근 30일 4회
            [2반]
            • 1번 박지우 — 실내화 없음, 오후 2:05 · 최근 7일 1회 · 최근 30일 1회

            사유별: 실내화 없음 1건 · 기타 1건
            """)
        XCTAssertEqual(grade.entries.map(\.frequency), [frequencies["s111"], frequencies["s121"]])
        let class11 = Recipient(teacherId: "hr11", scope: .class, grade: 1, classNumber: 1)
        // The guidance was deleted: the cancelled entry carries the counts without it.
        let amendment = plan(
            active: [], reported: [class11: [a]], revisions: [class11: 1], frequencies: ["s111": Frequency(last7Days: 1, last30Days: 3)])[
                "hr11"]!
        XCTAssertEqual(amendment.subject, "[한빛고] 11월 30일(월) 1학년 1반 교문 지도 명단 1차 정정: 삭제 1건")
        XCTAssertTrue(amendment.text.hasPrefix("11월 30일(월) 1학년 1반 교문 지도 명단의 1차 정정입니다."), amendment.text)
        XCTAssertTrue(
            amendment.text.contains("■ 삭제된 기록 1건 (교문에서 지운 기록)\n• 1번 김민지 — 기타 (길에 껌을 뱉음), 오전 7:52 · 최근 7일 1회 · 최근 30일 3회"), amendment.text)
        XCTAssertEqual(DigestText.amendmentName(revision: 3), "2차 정정")
    }

    /// The weekly 봉사 명단 line counts sessions closed (종결) beside those
    /// served, and says nothing of 종결 when there is none.
    func testTheWeeklyServiceLineCountsClosedSessions() {
        let last = record("a", "s111", "noShoes", at: "2026-11-27T00:10:00Z")
        let text = DigestText(
            school: school, date: "2026-11-30", recipient: Recipient(teacherId: "vd1", scope: .service, grade: 1, classNumber: nil),
            revision: 1, entries: [], counts: [:])
        func line(_ standing: CommunityServiceStanding) -> String {
            text.line(
                DigestEntry(
                    guidanceId: last.guidanceId, student: last.student, reason: last.reason, occurredAt: last.occurredAt, change: .added,
                    service: standing))
        }
        XCTAssertEqual(
            line(CommunityServiceStanding(owed: 4, served: 1, closed: 2)),
            "1번 김민지 — 남은 봉사 1회 (봉사 4회 중 1회 완료, 2회 종결) · 최근 지도 11월 27일(금) 실내화 없음")
        XCTAssertEqual(
            line(CommunityServiceStanding(owed: 3, served: 1)), "1번 김민지 — 남은 봉사 2회 (봉사 3회 중 1회 완료) · 최근 지도 11월 27일(금) 실내화 없음")
    }

    func testClockTimesReadAsTeachersSayThem() throws {
        let seoul = try XCTUnwrap(TimeZone(identifier: "Asia/Seoul"))
        let cases = [
            "2026-11-29T15:05:00Z": "오전 12:05", "2026-11-29T23:18:00Z": "오전 8:18", "2026-11-30T03:00:00Z": "오후 12:00",
            "2026-11-30T05:28:00Z": "오후 2:28"
        ]
        for (instant, expected) in cases {
            XCTAssertEqual(Timestamp.koreanTime(try XCTUnwrap(Timestamp.parse(instant)), in: seoul), expected, instant)
        }
        XCTAssertEqual(Timestamp.koreanDay("2026-12-01"), "12월 1일(화)")
        XCTAssertEqual(Timestamp.koreanDay("not a day"), "not a day")
    }

    // MARK: - EventDecoder

    private let decoder = EventDecoder(roster: DigestPlannerTests.roster, topics: Topics(), now: Timestamp.now())

    private func message(_ value: [UInt8]?, topic: String = Topics().registered) -> ConsumedMessage {
        ConsumedMessage(topic: topic, partition: 0, offset: 0, key: nil, value: value, headers: [], timestampMilliseconds: nil)
    }

    private func registration(studentId: String = "s111", number: Int = 1, code: String = "others", detail: String? = "껌") -> [UInt8] {
        GuidanceRegistered(
            eventId: "0b0d4c1e-0000-4000-8000-000000000001", guidanceId: "0B0D4C1E-0000-4000-8000-00000000000A", schoolId: "sa",
            student: StudentRef(studentId: studentId, grade: 1, classNumber: 1, number: number, name: "김민지"),
            reason: ReasonRef(code: code, label: "기타", detail: detail), recordedBy: "g1",
            occurredAt: "2026-11-29T22:52:00Z", recordedAt: "2026-11-29T22:52:01Z"
        ).json
    }

    private func failure(_ message: ConsumedMessage) -> String? {
        guard case .failure(let failure) = decoder.decode(message) else { return nil }
        return failure.reason
    }

    private func awaitsRoster(_ message: ConsumedMessage) -> Bool {
        guard case .failure(let failure) = decoder.decode(message) else { return false }
        return failure.awaitingRoster
    }

    func testAValidRegistrationBecomesARecordOfTheSchoolsLocalDay() throws {
        guard case .success(.registered(let record)) = decoder.decode(message(registration())) else { return XCTFail("not decoded") }
        XCTAssertEqual(record.guidanceId, "0b0d4c1e-0000-4000-8000-00000000000a", "ids are kept lowercase")
        XCTAssertEqual(record.date, "2026-11-30", "22:52 UTC is the next morning in Seoul")
        XCTAssertEqual(record.reason, ReasonRef(code: "others", label: "기타", detail: "껌"), "the label comes from the roster")
        let deletion = GuidanceDeleted(
            eventId: "0b0d4c1e-0000-4000-8000-000000000002", guidanceId: "0b0d4c1e-0000-4000-8000-00000000000a", schoolId: "sa",
            grade: 1, deletedBy: "g1", occurredAt: "2026-11-29T23:00:00+09:00"
        ).json
        guard case .success(.deleted(_, _, let grade, _, let occurredAt)) = decoder.decode(message(deletion, topic: Topics().deleted))
        else {
            return XCTFail("deletion not decoded")
        }
        XCTAssertEqual(grade, 1)
        XCTAssertEqual(occurredAt, "2026-11-29T14:00:00Z")
    }

    func testEachKindOfBrokenMessageIsRefusedWithItsReason() throws {
        XCTAssertEqual(failure(message(nil)), "the message's value is null")
        XCTAssertEqual(failure(message([])), "the message's value is empty")
        XCTAssertTrue(failure(message(Array("{".utf8)))?.hasPrefix("not a guidance event") ?? false)
        let future = Array(
            String(decoding: registration(), as: UTF8.self).replacingOccurrences(of: "\"schemaVersion\":1", with: "\"schemaVersion\":2")
                .utf8)
        XCTAssertEqual(failure(message(future)), "unsupported schemaVersion 2 of guidance.registered")
        XCTAssertEqual(
            failure(message(registration(), topic: Topics().deleted)),
            "event type 'guidance.registered' does not belong on guidance.deleted")
        XCTAssertNotNil(failure(message(registration(code: "others", detail: nil))), "others needs a detail")
        XCTAssertFalse(awaitsRoster(message(registration(code: "others", detail: nil))), "a rule broken is not the roster's to mend")
        let deletion = GuidanceDeleted(
            eventId: "0b0d4c1e-0000-4000-8000-000000000002", guidanceId: "0b0d4c1e-0000-4000-8000-00000000000a", schoolId: "sa",
            grade: 7, deletedBy: "g1", occurredAt: "2026-11-29T23:00:00Z"
        ).json
        XCTAssertEqual(failure(message(deletion, topic: Topics().deleted)), "grade: school 'sa' has no grade 7")
    }

    /// Identity is checked, the seat is the event's: a student who moved
    /// class after ingest accepted the event is applied where the event put
    /// them, and an id the roster does not list yet waits for it.
    func testAMovedStudentKeepsTheRecordedSeatAndAnUnknownIdAwaitsTheRoster() throws {
        guard case .success(.registered(let moved)) = decoder.decode(message(registration(number: 9))) else {
            return XCTFail("a student at a seat the roster gives someone else (or no one) now was refused")
        }
        XCTAssertEqual(moved.student.studentId, "s111")
        XCTAssertEqual(moved.student.number, 9, "the seat the event recorded")
        XCTAssertEqual(moved.student.name, "김민지")

        XCTAssertEqual(failure(message(registration(studentId: "s999"))), "student no student 's999' at this school")
        XCTAssertTrue(awaitsRoster(message(registration(studentId: "s999"))))
        XCTAssertTrue(awaitsRoster(message(registration(code: "newReason", detail: nil))), "a reason code the school may add")
    }
}
