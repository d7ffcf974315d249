import Foundation
import Guidance
import XCTest

@testable import Store

/// Retention, the access log, export and erasure, for every store (the
/// SQLite and PostgreSQL cases list them).
extension StoreSuite {
    private func digest(_ id: String, date: String, entries: [DigestEntry]) -> Digest {
        Digest(
            digestId: id, teacherId: "t-hr", schoolId: "sa", date: date, scope: .class, grade: 1, classNumber: 3, revision: 1,
            createdAt: date + "T00:00:00Z", read: false, subject: "s " + (entries.first?.student.name ?? ""),
            text: "t " + (entries.first?.student.name ?? ""),
            entries: entries, counts: [:])
    }

    private func entry(_ record: GuidanceRecord) -> DigestEntry {
        DigestEntry(
            guidanceId: record.guidanceId, student: record.student, reason: record.reason, occurredAt: record.occurredAt, change: .added)
    }

    private func access(
        _ id: String, at: String, teacher: String = "t-admin", action: AccessRecord.Action = .list, target: String = "date=2026-11-30"
    ) -> StoredEvent {
        .accessed([
            AccessRecord(
                accessId: "0b0d4c1e-0000-4000-8000-\(String(repeating: "0", count: 12 - id.count))\(id)", at: at, schoolId: "sa",
                teacherId: teacher,
                action: action, target: target, client: "127.0.0.1")
        ])
    }

    /// Days before the cut go from every table (a digest's deliveries with
    /// it); the cut's day and newer stay; tombstones and access records by
    /// their own times; a dry run counts the same and removes nothing.
    func purgeRemovesOldDaysAndKeepsNewerOnes() throws {
        let store = try makeStore()
        let old = record("g-old", date: "2026-10-01", at: "2026-09-30T23:00:00Z")
        let kept = record("g-kept", date: "2026-11-01", at: "2026-10-31T23:00:00Z")
        _ = try store.apply([
            .registered(old), .registered(kept), deletion("g-tomb"), access("1", at: "2024-01-01T00:00:00Z"),
            access("2", at: "2026-11-30T00:00:00Z")
        ])
        for (record, date) in [(old, "2026-10-01"), (kept, "2026-11-01")] {
            _ = try store.writeDigests(
                school: "sa", date: date, completedAt: date + "T01:00:00Z",
                plan: { _ in [self.digest("d-\(date)", date: date, entries: [self.entry(record)])] },
                targets: { _ in [DeliveryTarget(channel: .email, target: "hr@sa.example")] })
        }
        // An amendment pending for the old day.
        _ = try store.apply([.registered(record("g-late", date: "2026-10-01", at: "2026-09-30T23:30:00Z"))])
        let cut = PurgeCut(
            school: "sa", firstKeptDay: "2026-11-01", before: try XCTUnwrap(Timestamp.parse("2026-11-30T00:00:00Z")),
            accessLogBefore: try XCTUnwrap(Timestamp.parse("2025-01-01T00:00:00Z")))
        let dry = try store.purge([cut], dryRun: true)
        XCTAssertEqual(
            dry.removed, ["guidances": 3, "digests": 1, "deliveries": 1, "digest_runs": 1, "pending_amendments": 1, "access_log": 1],
            "tombstone included")
        XCTAssertEqual(
            try store.guidances(school: "sa", date: "2026-10-01", grade: nil, classNumber: nil).count, 2, "a dry run removes nothing")
        let report = try store.purge([cut], dryRun: false)
        XCTAssertEqual(report.removed, dry.removed)
        XCTAssertEqual(try store.guidances(school: "sa", date: "2026-10-01", grade: nil, classNumber: nil), [])
        XCTAssertEqual(try store.guidances(school: "sa", date: "2026-11-01", grade: nil, classNumber: nil).map(\.guidanceId), ["g-kept"])
        XCTAssertEqual(try store.inbox(teacher: "t-hr").map(\.digestId), ["d-2026-11-01"])
        XCTAssertEqual(try store.deliveries(school: "sa", status: nil, limit: 10).map(\.digestId), ["d-2026-11-01"])
        XCTAssertFalse(try store.runCompleted(school: "sa", date: "2026-10-01"))
        XCTAssertTrue(try store.runCompleted(school: "sa", date: "2026-11-01"))
        XCTAssertTrue(try store.pendingAmendments().isEmpty)
        XCTAssertEqual(
            try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: nil, action: nil, students: nil, limit: 10).records.map(\.at),
            ["2026-11-30T00:00:00Z"])
        XCTAssertEqual(try store.purge([cut], dryRun: false).removed, [:], "a second purge finds nothing")
        XCTAssertTrue(try store.claimPurge(day: "2026-11-30", now: 0))
        XCTAssertFalse(try store.claimPurge(day: "2026-11-30", now: 0), "one purge a day across replicas")
    }

    /// An access record replayed is stored once; reads filter by school,
    /// teacher and time, newest first.
    func accessRecordsAreStoredOnceAndFiltered() throws {
        let store = try makeStore()
        _ = try store.apply([
            access("1", at: "2026-11-30T00:00:00Z"),
            access("2", at: "2026-11-30T01:00:00Z", teacher: "t-hr", action: .photo, target: "s1312")
        ])
        _ = try store.apply([access("1", at: "2026-11-30T00:00:00Z")])
        let all = try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: nil, action: nil, students: nil, limit: 10).records
        XCTAssertEqual(all.map(\.teacherId), ["t-hr", "t-admin"])
        XCTAssertEqual(all.first?.action, .photo)
        XCTAssertEqual(all.first?.target, "s1312")
        XCTAssertEqual(
            try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: "t-admin", action: nil, students: nil, limit: 10).records.count, 1)
        XCTAssertEqual(
            try store.accessLog(school: "sb", from: 0, to: 2e9, teacher: nil, action: nil, students: nil, limit: 10).records.count, 0)
        let halfPast = try XCTUnwrap(Timestamp.parse("2026-11-30T00:30:00Z"))
        XCTAssertEqual(
            try store.accessLog(school: "sa", from: halfPast, to: 2e9, teacher: nil, action: nil, students: nil, limit: 10).records.count, 1
        )
        // By kind and by student: a photo of s1312, not the admin's list.
        XCTAssertEqual(
            try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: nil, action: .photo, students: nil, limit: 10).records.map(
                \.teacherId), ["t-hr"])
        XCTAssertEqual(
            try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: nil, action: nil, students: ["s1312"], limit: 10).records.map(
                \.action), [.photo])
        XCTAssertEqual(
            try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: "t-admin", action: nil, students: ["s1312"], limit: 10).records, []
        )
        // Several students at once (a name search), none (a name nobody has), and the count past the page.
        _ = try store.apply([
            access("3", at: "2026-11-30T02:00:00Z", teacher: "t-hr", action: .photo, target: "s1313"),
            access("4", at: "2026-11-30T03:00:00Z", teacher: "t-hr", action: .student, target: "s1313")
        ])
        let two = try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: nil, action: nil, students: ["s1312", "s1313"], limit: 2)
        XCTAssertEqual(two.records.map(\.action), [.student, .photo], "the newest two")
        XCTAssertEqual(two.total, 3, "of three in the period")
        XCTAssertEqual(try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: nil, action: nil, students: [], limit: 10).total, 0)
        XCTAssertEqual(try store.accessLog(school: "sa", from: 0, to: 2e9, teacher: nil, action: nil, students: nil, limit: 10).total, 4)
    }

    /// The export holds the student's guidances (a deleted one with who
    /// deleted it) and the digests naming them; after erasure no table holds
    /// the name or the id, and the digests read with a neutral mark.
    func exportAndErasureLeaveNoTrace(dump: () throws -> String) throws {
        let store = try makeStore()
        let mine = record("g-mine", number: 12, date: "2026-11-30")
        let gone = record("g-gone", number: 12, date: "2026-11-30", at: "2026-11-29T23:10:00Z")
        let other = record("g-other", number: 13, date: "2026-11-30")
        _ = try store.apply([
            .registered(mine), .registered(gone), .registered(other), deletion("g-gone"),
            access("3", at: "2026-11-30T02:00:00Z", action: .student, target: mine.student.studentId)
        ])
        _ = try store.writeDigests(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-30T01:00:00Z",
            plan: { _ in [self.digest("d-1", date: "2026-11-30", entries: [self.entry(mine), self.entry(other)])] }, targets: { _ in [] })
        let records = try store.records(school: "sa", student: mine.student.studentId)
        XCTAssertEqual(records.guidances.map(\.record.guidanceId), ["g-mine", "g-gone"], "by time")
        XCTAssertEqual(records.guidances.first { $0.record.guidanceId == "g-gone" }?.deletedBy, "t-gate-01")
        XCTAssertEqual(records.digests.map(\.guidanceId), ["g-mine"])
        let name = mine.student.name
        let id = mine.student.studentId
        XCTAssertTrue(try dump().contains(name))
        let erased = try store.erase(school: "sa", student: id) { digest in
            (
                "s " + digest.entries.map(\.student.name).joined(separator: ","),
                "t " + digest.entries.map(\.student.name).joined(separator: ",")
            )
        }
        XCTAssertEqual(erased.guidances, 2)
        XCTAssertEqual(erased.digests, 1)
        let everything = try dump()
        XCTAssertFalse(everything.contains(name), "the name is nowhere in the store")
        XCTAssertFalse(everything.contains(id), "the id is nowhere in the store")
        XCTAssertTrue(everything.contains(other.student.name), "other students stay")
        let digest = try XCTUnwrap(store.inbox(teacher: "t-hr").first)
        XCTAssertEqual(digest.entries.map(\.student.name), [SQLStore.erasedName, other.student.name])
        XCTAssertEqual(digest.text, "t \(SQLStore.erasedName),\(other.student.name)", "the text is rendered again from the changed entries")
        XCTAssertEqual(try store.records(school: "sa", student: id), StudentRecords(guidances: [], digests: []))
    }

    /// Every table's every value as text, for "no trace" checks.
    static func dumpEverything(_ database: any SQLDatabase, sqlite: Bool) throws -> String {
        let tables = try database.query(
            sqlite
                ? "SELECT name FROM sqlite_master WHERE type = 'table'"
                : "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
            []
        ).compactMap { $0.first?.string }
        XCTAssertTrue(tables.contains("access_log") && tables.contains("guidances"), "\(tables)")
        var text = ""
        for table in tables {
            try database.forEachRow("SELECT * FROM \(table)", []) { row in text += row.map { $0.text ?? "" }.joined(separator: "|") + "\n" }
        }
        return text
    }
}
