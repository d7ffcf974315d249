import Dispatch
import Foundation
import Guidance
import Synchronization
import XCTest

@testable import Store

/// The behaviour every store must have, shared by each store's test case
/// (Linux XCTest does not discover inherited test methods, so each case
/// lists them): SQLite always, PostgreSQL with `TEST_POSTGRES_URL`.
struct StoreSuite: Sendable {
    let makeStore: @Sendable () throws -> SQLStore

    func record(
        _ id: String, school: String = "sa", grade: Int = 1, classNumber: Int = 3, number: Int = 12, date: String = "2026-11-30",
        code: String = "noShoes", at time: String = "2026-11-29T22:52:10Z"
    ) -> GuidanceRecord {
        GuidanceRecord(
            guidanceId: id, schoolId: school, date: date,
            student: StudentRef(
                studentId: "s\(grade)\(classNumber)\(number)", grade: grade, classNumber: classNumber, number: number, name: "학생\(number)"),
            reason: ReasonRef(code: code, label: code, detail: nil), occurredAt: time, recordedBy: "t-gate-01")
    }

    func deletion(_ id: String, school: String = "sa", grade: Int = 1) -> StoredEvent {
        .deleted(guidanceId: id, schoolId: school, grade: grade, deletedBy: "t-gate-01", occurredAt: "2026-11-29T23:00:00Z")
    }

    /// A plan that gives one recipient every change, like the real planner.
    func simplePlan(_ state: DeliveryState, teacher: String = "t-hr", school: String = "sa") -> [Digest] {
        let recipient = Recipient(teacherId: teacher, scope: .class, grade: 1, classNumber: 3)
        let told = state.reported[recipient] ?? Told()
        let reported = told.keys
        let active = state.active.filter { $0.student.grade == 1 && $0.student.classNumber == 3 }
        let activeIDs = Set(active.map(\.guidanceId))
        let entries =
            active.filter { !reported.contains($0.guidanceId) }.map {
                DigestEntry(guidanceId: $0.guidanceId, student: $0.student, reason: $0.reason, occurredAt: $0.occurredAt, change: .added)
            }
            + reported.subtracting(activeIDs).compactMap { told.kept[$0] }.map {
                DigestEntry(guidanceId: $0.guidanceId, student: $0.student, reason: $0.reason, occurredAt: $0.occurredAt, change: .removed)
            }
        guard !entries.isEmpty else { return [] }
        let revision = (state.revisions[recipient] ?? 0) + 1
        return [
            Digest(
                digestId: "d-\(teacher)-r\(revision)", teacherId: teacher, schoolId: school, date: "2026-11-30", scope: .class, grade: 1,
                classNumber: 3, revision: revision, createdAt: "2026-11-29T23:50:0\(revision)Z", read: false, subject: "s\(revision)",
                text: "t", entries: entries, counts: [:])
        ]
    }

    func registrationsUpsertAndReplaysChangeNothing() throws {
        let store = try makeStore()
        _ = try store.apply([.registered(record("g1")), .registered(record("g2", number: 4))])
        _ = try store.apply([.registered(record("g1")), .registered(record("g1"))])
        let listed = try store.guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil)
        XCTAssertEqual(listed.map(\.guidanceId), ["g2", "g1"], "ordered by number")
        XCTAssertEqual(try store.guidances(school: "sa", date: "2026-11-30", grade: 1, classNumber: 3).count, 2)
        XCTAssertEqual(try store.guidances(school: "sa", date: "2026-11-30", grade: 2, classNumber: nil).count, 0)
        XCTAssertEqual(try store.guidances(school: "sa", date: "2026-12-01", grade: nil, classNumber: nil).count, 0)
    }

    /// How often a student was stopped, as of a day: the last 7 and the
    /// last 30 days through that day, active guidances only; the same counts
    /// reach a digest run's plan.
    func frequenciesCountTheLastSevenAndThirtyDays() throws {
        let store = try makeStore()
        // As of 2026-12-02: the 7 days from 11-26, the 30 from 11-03; 10-30 is in neither, 12-03 is after.
        let days = [
            "g0": "2026-10-30", "g1": "2026-11-20", "g2": "2026-11-27", "g3": "2026-11-30", "g4": "2026-12-02", "g5": "2026-12-02",
            "g6": "2026-12-03"
        ]
        _ = try store.apply(days.map { .registered(record($0.key, date: $0.value)) })
        _ = try store.apply([
            .registered(record("o1", number: 7, date: "2026-12-02")), .registered(record("x1", school: "sb", date: "2026-12-02"))
        ])
        let student = "s1312"
        XCTAssertEqual(
            try store.frequencies(school: "sa", date: "2026-12-02", grade: nil, classNumber: nil)[student],
            Frequency(last7Days: 4, last30Days: 5))
        // As of 11-26: the 7 days from 11-20, the 30 from 10-28.
        XCTAssertEqual(
            try store.frequencies(school: "sa", date: "2026-11-26", grade: 1, classNumber: 3)[student],
            Frequency(last7Days: 1, last30Days: 2))
        XCTAssertEqual(
            try store.frequencies(school: "sa", date: "2026-12-02", grade: nil, classNumber: nil)["s137"],
            Frequency(last7Days: 1, last30Days: 1))
        XCTAssertNil(
            try store.frequencies(school: "sa", date: "2026-12-02", grade: 2, classNumber: nil)[student], "outside the scope asked")
        _ = try store.apply([deletion("g4")])
        XCTAssertEqual(
            try store.frequencies(school: "sa", date: "2026-12-02", grade: nil, classNumber: nil)[student],
            Frequency(last7Days: 3, last30Days: 4), "a deletion lowers both")
        let seen = Mutex<[String: Frequency]>([:])
        _ = try store.writeDigests(
            school: "sa", date: "2026-12-02", completedAt: "2026-12-02T00:00:00Z",
            plan: { state in
                seen.withLock { $0 = state.frequencies }
                return []
            }, targets: { _ in [] })
        XCTAssertEqual(
            seen.withLock { $0 }, [student: Frequency(last7Days: 3, last30Days: 4), "s137": Frequency(last7Days: 1, last30Days: 1)])
    }

    func service(_ id: String, student: String = "s1312", date: String = "2026-11-30", sessions: Int = 1, school: String = "sa")
        -> StoredEvent
    {
        .communityServiceRecorded(
            CommunityServiceRecord(
                serviceId: id, schoolId: school, grade: 1, studentId: student, date: date, sessions: sessions, note: nil,
                recordedBy: "t-vd", recordedAt: "2026-11-30T06:00:00Z"))
    }

    func withdrawal(_ id: String, student: String = "s1312", school: String = "sa", grade: Int = 1) -> StoredEvent {
        .communityServiceWithdrawn(
            serviceId: id, schoolId: school, grade: grade, studentId: student, withdrawnBy: "t-vd", occurredAt: "2026-11-30T07:00:00Z")
    }

    /// Volunteer service: owed by active guidances (their sessions), served
    /// by records not taken back, whatever the order and however often
    /// each arrives; a record of another school's id is kept out. A
    /// Monday's run holds the service lock and is marked for amendment by a
    /// later change to any day up to it.
    func serviceAccountsAndWeeklyAmendments() throws {
        let store = try makeStore()
        var two = record("g2", code: "trespassing")
        two.serviceSessions = 2
        XCTAssertEqual(try store.apply([withdrawal("v2"), .registered(record("g1")), service("v1"), deletion("g3")]), [])
        XCTAssertEqual(
            try store.apply([.registered(two), service("v2"), service("v1"), .registered(record("g3")), .registered(record("g1"))]), [])
        XCTAssertEqual(
            try store.apply([service("v1", sessions: 3)]).map { String($0.reason.prefix(8)) }, ["conflict"],
            "other content under a record's id")
        XCTAssertEqual(try store.apply([service("v1", school: "sb")]).map { String($0.reason.prefix(7)) }, ["foreign"])
        let accounts = try store.communityServiceAccounts(school: "sa", asOf: nil)
        XCTAssertEqual(accounts.map(\.studentId), ["s1312"])
        XCTAssertEqual(accounts.first?.standing, CommunityServiceStanding(owed: 3, served: 1))
        XCTAssertEqual(accounts.first?.records.map(\.serviceId), ["v1"])
        XCTAssertEqual(accounts.first?.lastService, "2026-11-30")
        XCTAssertEqual(try store.communityServiceAccounts(school: "sa", asOf: "2026-11-29"), [], "nothing before the day")
        // Monday 2026-11-30: its run is a weekly one; a later record of that day marks it.
        let seen = Mutex<[String: CommunityServiceAccount]>([:])
        _ = try store.writeDigests(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-30T00:00:00Z",
            plan: { state in
                seen.withLock { $0 = state.accounts }
                return []
            }, targets: { _ in [] })
        XCTAssertEqual(seen.withLock { $0 }["s1312"]?.standing, CommunityServiceStanding(owed: 3, served: 1))
        XCTAssertTrue(try store.pendingAmendments().isEmpty)
        XCTAssertEqual(try store.apply([service("v3", date: "2026-11-27")]), [])
        XCTAssertEqual(try store.pendingAmendments().map(\.date), ["2026-11-30"], "an earlier day's record amends Monday's list")
        _ = try store.writeDigests(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-30T01:00:00Z", plan: { _ in [] }, targets: { _ in [] })
        XCTAssertEqual(try store.apply([service("v4", date: "2026-12-01")]), [])
        XCTAssertTrue(try store.pendingAmendments().isEmpty, "a later day's record leaves Monday's list alone")
        XCTAssertEqual(try store.apply([withdrawal("v3")]), [])
        XCTAssertEqual(try store.pendingAmendments().map(\.date), ["2026-11-30"], "so does taking an earlier one back")
        XCTAssertEqual(
            try store.communityServiceAccounts(school: "sa", asOf: nil).first?.standing, CommunityServiceStanding(owed: 3, served: 2))

        // A record belongs to its student, whatever grade each event names:
        // a withdrawal sent after a grade change (naming grade 2) takes back
        // a record made in grade 1, before or after the record arrives; one
        // naming another student takes back nothing.
        XCTAssertEqual(try store.apply([withdrawal("v4", grade: 2)]), [])
        XCTAssertEqual(try store.apply([withdrawal("v5", grade: 2), service("v5", date: "2026-12-01")]), [])
        XCTAssertEqual(try store.apply([withdrawal("v1", student: "s9999")]).map { String($0.reason.prefix(7)) }, ["foreign"])
        let held = try store.communityServiceAccounts(school: "sa", asOf: nil).first
        XCTAssertEqual(held?.standing, CommunityServiceStanding(owed: 3, served: 1), "v4 and v5 taken back")
        XCTAssertEqual(Set(held?.records.map(\.serviceId) ?? []), ["v1"])
    }

    /// The first registration of an id wins; a retry is a no-op; other
    /// content and other schools are kept out and reported.
    func aGuidanceIDBelongsToItsFirstRegistrationAndSchool() throws {
        let store = try makeStore()
        XCTAssertEqual(try store.apply([.registered(record("g1")), .registered(record("g1", at: "2026-11-29T23:10:00Z"))]), [])
        let rejected = try store.apply([
            .registered(record("g1", number: 13)), .registered(record("g1", code: "wrongClothes")),
            .registered(record("g1", school: "sb")), deletion("g1", school: "sb"), .registered(record("g2"))
        ])
        XCTAssertEqual(rejected.map(\.index), [0, 1, 2, 3])
        XCTAssertEqual(rejected.map { String($0.reason.prefix { $0 != ":" }) }, ["conflict", "conflict", "foreign", "foreign"])
        let listed = try store.guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil)
        XCTAssertEqual(listed.map(\.guidanceId), ["g1", "g2"])
        XCTAssertEqual(listed.first?.student.number, 12)
        XCTAssertEqual(listed.first?.occurredAt, "2026-11-29T22:52:10Z", "a retry moved the guidance")
        XCTAssertEqual(try store.guidances(school: "sb", date: "2026-11-30", grade: nil, classNumber: nil), [])

        // A deletion naming an id its school never registered does not hold
        // the id against the school that registers it.
        XCTAssertEqual(try store.apply([deletion("g3", school: "sb")]), [])
        XCTAssertEqual(try store.apply([.registered(record("g3", number: 5))]), [])
        XCTAssertEqual(
            try store.guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil).map(\.guidanceId), ["g3", "g1", "g2"])
    }

    /// Numbered steps, each applied once, in order, and a schema newer than
    /// the release refused.
    static func migrationsAreAppliedOnceAndANewerSchemaIsRefused(_ connect: () throws -> any SQLDatabase) throws {
        let database = try connect()
        try SQLStore.migrate(database, now: 0)
        try SQLStore.migrate(database, now: 0)
        let migrations = SQLStore.migrations(for: database)
        let versions = Array(1...migrations.count)
        XCTAssertEqual(try database.query("SELECT version FROM schema_migrations ORDER BY version", []).map { $0[0].int }, versions)
        // A next release adds a step; a step that is not idempotent shows it runs once.
        let next = migrations + ["CREATE TABLE migration_test (id INTEGER PRIMARY KEY)"]
        try SQLStore.migrate(database, migrations: next, now: 0)
        try SQLStore.migrate(try connect(), migrations: next, now: 0)
        XCTAssertEqual(
            try database.query("SELECT version FROM schema_migrations ORDER BY version", []).map { $0[0].int },
            versions + [versions.count + 1])
        XCTAssertThrowsError(try SQLStore.migrate(try connect(), now: 0)) { error in
            XCTAssertTrue(
                "\(error)".contains("schema is version \(versions.count + 1), newer than this release knows (\(versions.count))"),
                "\(error)")
        }
    }

    /// Step 4 re-keys digest items by day: what recipients were told before
    /// the upgrade is kept, so a run after it does not tell them again, and
    /// the new key still holds an item once. `connect` opens the store's database.
    /// What a recipient was told is read from its digests since step 6: a
    /// digest written before (at step 5, with the item row that repeated it)
    /// counts as told after the upgrade.
    func whatWasToldSurvivesTheUpgrade(_ connect: () throws -> any SQLDatabase) throws {
        let database = try connect()
        try SQLStore.migrate(database, migrations: Array(SQLStore.migrations(for: database).prefix(5)), now: 0)
        let told = DigestEntry(
            guidanceId: "g1", student: record("g1").student, reason: record("g1").reason, occurredAt: record("g1").occurredAt,
            change: .added)
        try database.run(
            """
            INSERT INTO digests (digest_id, teacher_id, school_id, date, scope, grade, class_number, revision, created_at, read, subject, text, entries, counts)
            VALUES ('d-t-hr-r1', 't-hr', 'sa', '2026-11-30', 'class', 1, 3, 1, '2026-11-29T23:50:01Z', 0, 's1', 't', $1, '{}')
            """, [.text(DigestColumns.entries([told]))])
        try database.run(
            """
            INSERT INTO digest_items (school_id, date, teacher_id, scope, guidance_id, active)
            VALUES ('sa', '2026-11-30', 't-hr', 'class', 'g1', 1)
            """)
        let store = try makeStore()
        XCTAssertThrowsError(try database.query("SELECT 1 FROM digest_items", []), "the items are gone")
        _ = try store.apply([.registered(record("g1")), .registered(record("g2", number: 4))])
        _ = try store.apply([deletion("g1")])
        let after = try store.writeDigests(school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:51:00Z") {
            simplePlan($0)
        } targets: { _ in
            []
        }
        XCTAssertEqual(after.first?.revision, 2)
        XCTAssertEqual(after.first?.entries, [], "written, a list's entries are read from the inbox")
        XCTAssertEqual(
            try store.inbox(teacher: "t-hr").first?.entries.map { "\($0.guidanceId) \($0.change.rawValue)" }.sorted(),
            ["g1 removed", "g2 added"], "g1 was told before the upgrade")
    }

    func deletionWinsInEitherOrder() throws {
        let store = try makeStore()
        _ = try store.apply([deletion("early")])
        _ = try store.apply([.registered(record("early")), .registered(record("late", number: 5))])
        _ = try store.apply([deletion("late"), .registered(record("late", number: 5))])
        // A deletion sent with another grade in its path travels on another
        // partition: it may come first or last, and wins either way.
        _ = try store.apply([deletion("other-grade-first", grade: 2)])
        _ = try store.apply([.registered(record("other-grade-first")), .registered(record("other-grade-last", number: 6))])
        _ = try store.apply([deletion("other-grade-last", grade: 3)])
        XCTAssertEqual(try store.guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil), [])
    }

    /// A constraint is the data's fault: not retriable, narrowed down to
    /// its event. `refuseWrites` makes the database itself refuse (full,
    /// read-only): retriable, never an event's fault.
    static func onlyTheStoresOwnFailuresAreRetriable(_ database: any SQLDatabase, refuseWrites: (any SQLDatabase) throws -> Void) throws {
        try database.execute("CREATE TABLE retriable_check (k TEXT PRIMARY KEY, v TEXT)")
        try database.run("INSERT INTO retriable_check (k, v) VALUES ('a', 'x')", [])
        XCTAssertThrowsError(try database.run("INSERT INTO retriable_check (k, v) VALUES ('a', 'y')", [])) { error in
            let error = error as? StoreError
            XCTAssertEqual(error?.code, .conflict, "\(String(describing: error))")
            XCTAssertEqual(error?.isRetriable, false)
            XCTAssertEqual(error?.isDataError, true)
        }
        try refuseWrites(database)
        XCTAssertThrowsError(
            try database.run(
                "INSERT INTO retriable_check (k, v) VALUES ($1, $2)", [.text("b"), .text(String(repeating: "v", count: 200_000))])
        ) { error in
            let error = error as? StoreError
            XCTAssertEqual(error?.code, .unavailable, "\(String(describing: error))")
            XCTAssertEqual(error?.isRetriable, true)
            XCTAssertEqual(error?.isDataError, false)
        }
    }

    func digestRunsWriteOnceAndAmendOnlyChanges() throws {
        let store = try makeStore()
        _ = try store.apply([.registered(record("g1")), .registered(record("g2", number: 4))])
        let first = try store.writeDigests(school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z") {
            simplePlan($0)
        } targets: { _ in
            []
        }
        XCTAssertEqual(first.map(\.revision), [1])
        XCTAssertEqual(Set(try store.inbox(teacher: "t-hr")[0].entries.map(\.guidanceId)), ["g1", "g2"])
        XCTAssertTrue(try store.runCompleted(school: "sa", date: "2026-11-30"))

        let again = try store.writeDigests(school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:51:00Z") {
            simplePlan($0)
        } targets: { _ in
            []
        }
        XCTAssertEqual(again, [], "a second run repeated a digest")
        XCTAssertTrue(try store.pendingAmendments().isEmpty)

        _ = try store.apply([.registered(record("g3", number: 7)), deletion("g1")])
        XCTAssertEqual(try store.pendingAmendments().map { "\($0.school) \($0.date)" }, ["sa 2026-11-30"])
        let amendment = try store.writeDigests(school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:52:00Z") {
            simplePlan($0)
        } targets: { _ in
            []
        }
        XCTAssertEqual(amendment.map(\.revision), [2])
        XCTAssertEqual(
            try store.inbox(teacher: "t-hr")[0].entries.map { "\($0.guidanceId) \($0.change)" }.sorted(), ["g1 removed", "g3 added"])
        XCTAssertTrue(try store.pendingAmendments().isEmpty)

        let inbox = try store.inbox(teacher: "t-hr")
        XCTAssertEqual(inbox.map(\.revision), [2, 1], "newest first")
        XCTAssertEqual(inbox.last?.entries.count, 2)
    }

    func aFailedRunWritesNothingSoTheRerunDeliversExactlyOnce() throws {
        let store = try makeStore()
        _ = try store.apply([.registered(record("g1"))])
        // Two digests with the same identity: the second write fails after the
        // first succeeded, as a crash between writing and recording would.
        let email: @Sendable (Digest) -> [DeliveryTarget] = { _ in [DeliveryTarget(channel: .email, target: "hr@school.example")] }
        XCTAssertThrowsError(
            try store.writeDigests(
                school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z",
                plan: { state in
                    let digests = self.simplePlan(state)
                    return digests + digests
                }, targets: email))
        XCTAssertEqual(try store.inbox(teacher: "t-hr"), [])
        XCTAssertEqual(try store.deliveries(school: "sa", status: nil, limit: 10), [], "a delivery outlived its digest's failed write")
        XCTAssertFalse(try store.runCompleted(school: "sa", date: "2026-11-30"))
        let rerun = try store.writeDigests(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:51:00Z", plan: { simplePlan($0) }, targets: email)
        XCTAssertEqual(rerun.count, 1)
        XCTAssertEqual(try store.inbox(teacher: "t-hr").count, 1)
        XCTAssertEqual(try store.deliveries(school: "sa", status: .pending, limit: 10).map(\.digestId), [rerun[0].digestId])
    }
}

extension StoreSuite {
    /// A run whose lists hold more entries than are rendered ahead: the
    /// rest are made and written one at a time in the run's savepoint, in
    /// order, and a failure among them undoes the whole run.
    func aBigRunsListsPastThoseRenderedAheadAreWrittenOneAtATime() throws {
        let store = try makeStore()
        let given = record("g1")
        _ = try store.apply([.registered(given)])
        let size = SQLStore.renderedAhead / 2 + 1
        @Sendable func draft(_ teacher: String, id: String? = nil) -> DeliveryRun.Draft {
            let entries = (0..<size).map {
                DigestEntry(
                    guidanceId: "\(teacher)-\($0)", student: given.student, reason: given.reason, occurredAt: given.occurredAt,
                    change: .added)
            }
            return {
                Digest(
                    digestId: id ?? "d-\(teacher)", teacherId: teacher, schoolId: "sa", date: "2026-11-30", scope: .class, grade: 1,
                    classNumber: 3, revision: 1, createdAt: "2026-11-29T23:50:00Z", read: false, subject: teacher, text: "t",
                    entries: entries, counts: [:])
            }
        }
        let failing = DeliveryRun(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z",
            drafts: { _ in [draft("t-a"), draft("t-b"), draft("t-c", id: "d-t-a")] }, targets: { _ in [] })
        XCTAssertThrowsError(try store.writeDigests([failing])[0].get(), "the third list repeats the first's identity")
        XCTAssertEqual(try store.inbox(teacher: "t-a"), [], "the lists written before the failure were undone")
        XCTAssertFalse(try store.runCompleted(school: "sa", date: "2026-11-30"))

        let run = DeliveryRun(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:51:00Z",
            drafts: { _ in [draft("t-a"), { nil }, draft("t-b"), draft("t-c"), draft("t-d")] }, targets: { _ in [] })
        let written = try store.writeDigests([run])[0].get()
        XCTAssertEqual(written.map(\.teacherId), ["t-a", "t-b", "t-c", "t-d"], "in order, the empty one left out")
        XCTAssertTrue(written.allSatisfy(\.entries.isEmpty), "returned without their entries")
        for teacher in ["t-a", "t-d"] {
            XCTAssertEqual(try store.inbox(teacher: teacher).first?.entries.count, size, teacher)
        }
        XCTAssertTrue(try store.runCompleted(school: "sa", date: "2026-11-30"))
    }

    /// Reads inside `snapshot` see one moment: a row another connection
    /// commits meanwhile shows only after the snapshot ends (the service
    /// list read its totals and its records that way).
    static func aSnapshotReadsOneMoment(reader: any SQLDatabase, writer: any SQLDatabase) throws {
        try writer.execute("CREATE TABLE snapshot_probe (n INTEGER)")
        try writer.run("INSERT INTO snapshot_probe VALUES (1)")
        let count = { () throws(StoreError) -> Int in try reader.query("SELECT COUNT(*) FROM snapshot_probe", [])[0][0].int ?? -1 }
        let (before, after) = try reader.snapshot { () throws(StoreError) -> (Int, Int) in
            let before = try count()
            try writer.run("INSERT INTO snapshot_probe VALUES (2)")
            return (before, try count())
        }
        XCTAssertEqual(before, 1)
        XCTAssertEqual(after, 1, "the second read of a snapshot saw a row committed after its first")
        XCTAssertEqual(try count(), 2, "after the snapshot, the newest rows")
    }
}

final class SQLiteStoreTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    var suite: StoreSuite {
        let path = directory.appendingPathComponent("test.db").path
        return StoreSuite { try SQLStore.sqlite(path: path, clock: Timestamp.now) }
    }

    func testExportAndErasureLeaveNoTrace() throws {
        let path = directory.appendingPathComponent("test.db").path
        try suite.exportAndErasureLeaveNoTrace { try StoreSuite.dumpEverything(SQLiteConnection(path: path), sqlite: true) }
    }

    func testMigrationsAreAppliedOnceAndANewerSchemaIsRefused() throws {
        let path = directory.appendingPathComponent("migrations.db").path
        try StoreSuite.migrationsAreAppliedOnceAndANewerSchemaIsRefused { try SQLiteConnection(path: path) }
    }

    func testWhatWasToldSurvivesTheUpgrade() throws {
        let path = directory.appendingPathComponent("test.db").path
        try suite.whatWasToldSurvivesTheUpgrade { try SQLiteConnection(path: path) }
    }

    /// A full database: `max_page_count` at its current size gives the
    /// same `SQLITE_FULL` as a full disk.
    func testOnlyTheStoresOwnFailuresAreRetriable() throws {
        let connection = try SQLiteConnection(path: directory.appendingPathComponent("retriable.db").path)
        try StoreSuite.onlyTheStoresOwnFailuresAreRetriable(connection) { database in
            let pages = try XCTUnwrap(database.query("PRAGMA page_count", []).first?.first?.int)
            _ = try database.query("PRAGMA max_page_count = \(pages)", [])
        }
    }

    func testRegistrationsUpsertAndReplaysChangeNothing() throws { try suite.registrationsUpsertAndReplaysChangeNothing() }
    func testAGuidanceIDBelongsToItsFirstRegistrationAndSchool() throws { try suite.aGuidanceIDBelongsToItsFirstRegistrationAndSchool() }
    func testDeletionWinsInEitherOrder() throws { try suite.deletionWinsInEitherOrder() }
    func testDigestRunsWriteOnceAndAmendOnlyChanges() throws { try suite.digestRunsWriteOnceAndAmendOnlyChanges() }
    func testABigRunsListsPastThoseRenderedAheadAreWrittenOneAtATime() throws {
        try suite.aBigRunsListsPastThoseRenderedAheadAreWrittenOneAtATime()
    }
    func testAFailedRunWritesNothingSoTheRerunDeliversExactlyOnce() throws {
        try suite.aFailedRunWritesNothingSoTheRerunDeliversExactlyOnce()
    }
    func testAFailedRunInABatchLeavesTheOthersWritten() throws { try suite.aFailedRunInABatchLeavesTheOthersWritten() }
    func testInboxReadState() throws { try suite.inboxReadState() }
    func testFrequenciesCountTheLastSevenAndThirtyDays() throws { try suite.frequenciesCountTheLastSevenAndThirtyDays() }
    func testServiceAccountsAndWeeklyAmendments() throws { try suite.serviceAccountsAndWeeklyAmendments() }
    func testPurgeRemovesOldDaysAndKeepsNewerOnes() throws { try suite.purgeRemovesOldDaysAndKeepsNewerOnes() }
    func testAccessRecordsAreStoredOnceAndFiltered() throws { try suite.accessRecordsAreStoredOnceAndFiltered() }
    func testOutboxLeasesRetriesAndRequeues() throws { try suite.outboxLeasesRetriesAndRequeues() }
    func testPushSubscriptionsAreBoundAndCapped() throws { try suite.pushSubscriptionsAreBoundAndCapped() }
    func testRulesAreCrossedOnceToldOnceAndWithdrawn() throws { try suite.rulesAreCrossedOnceToldOnceAndWithdrawn() }
    func testCasesFollowTheirCrossingsAndSteps() throws { try suite.casesFollowTheirCrossingsAndSteps() }
    func testASecondMissedSittingOpensOneCase() throws { try suite.aSecondMissedSittingOpensOneCase() }
    func testAFloodOfCrossingsIsOneNoticeADay() throws { try suite.aFloodOfCrossingsIsOneNoticeADay() }
    func testHeldDeliveriesOfAKindBecomeOne() throws { try suite.heldDeliveriesOfAKindBecomeOne() }

    /// What a digest run and the dispatcher look up by day or channel is
    /// found through an index: a scan would read a school year's digests
    /// for every school of every run.
    func testDayAndChannelLookupsScanNoTable() throws {
        _ = try suite.makeStore()
        let database = try SQLiteConnection(path: directory.appendingPathComponent("test.db").path)
        let lookups: [(String, [SQLValue])] = [
            (SQLStore.toldOfDay, [.text("sa"), .text("2026-11-30")]),
            (SQLStore.pendingOfChannel, [.text(Channel.email.rawValue)])
        ]
        for (sql, parameters) in lookups {
            let plan = try database.query("EXPLAIN QUERY PLAN " + sql, parameters).compactMap { $0.last?.string }
            XCTAssertFalse(plan.isEmpty)
            XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN") }, "\(sql): \(plan)")
        }
    }

    /// A claim reads the due deliveries in the index's order: no sort of
    /// the whole backlog for the first few.
    func testAClaimReadsTheDueIndexInOrder() throws {
        _ = try suite.makeStore()
        let database = try SQLiteConnection(path: directory.appendingPathComponent("test.db").path)
        let sql = SQLStore.due(channel: "'email'", now: "1000", limit: "64")
        let plan = try database.query("EXPLAIN QUERY PLAN " + sql, []).compactMap { $0.last?.string }
        XCTAssertTrue(plan.contains { $0.contains("deliveries_due") }, "\(plan)")
        XCTAssertFalse(plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }

    /// A run reads what its day's recipients were told in revision order
    /// from an index: sorting made SQLite hold every list of the day,
    /// entries and all (the notifier's peak memory on a big school's day).
    func testWhatADayWasToldIsReadInOrderWithoutASort() throws {
        _ = try suite.makeStore()
        let database = try SQLiteConnection(path: directory.appendingPathComponent("test.db").path)
        let plan = try database.query("EXPLAIN QUERY PLAN " + SQLStore.toldOfDay, [.text("sa"), .text("2026-11-30")]).compactMap {
            $0.last?.string
        }
        XCTAssertTrue(plan.contains { $0.contains("digests_told_of_day") }, "\(plan)")
        XCTAssertFalse(plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }

    func testASnapshotReadsOneMoment() throws {
        _ = try suite.makeStore()
        let path = directory.appendingPathComponent("test.db").path
        try StoreSuite.aSnapshotReadsOneMoment(reader: SQLiteConnection(path: path), writer: SQLiteConnection(path: path))
    }

    func testDataSurvivesReopening() throws {
        _ = try suite.makeStore().apply([.registered(suite.record("g1"))])
        XCTAssertEqual(
            try suite.makeStore().guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil).map(\.guidanceId), ["g1"])
    }
}

/// The same suite against PostgreSQL, each test in a schema of its own.
/// `scripts/test` starts a server and sets `TEST_POSTGRES_URL`.
final class PostgresStoreTests: XCTestCase {
    var url = ""

    override func setUpWithError() throws {
        guard let base = ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"] else {
            throw XCTSkip("TEST_POSTGRES_URL is not set (scripts/test sets it)")
        }
        let schema = "test_\(UUID().uuidString.prefix(8).lowercased())"
        try PostgresConnection(url: base).execute("CREATE SCHEMA \(schema)")
        url = base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
    }

    var suite: StoreSuite {
        let url = self.url
        return StoreSuite { try SQLStore.postgres(url: url, clock: Timestamp.now) }
    }

    func testExportAndErasureLeaveNoTrace() throws {
        let url = self.url
        try suite.exportAndErasureLeaveNoTrace { try StoreSuite.dumpEverything(PostgresConnection(url: url), sqlite: false) }
    }

    func testMigrationsAreAppliedOnceAndANewerSchemaIsRefused() throws {
        let url = self.url
        try StoreSuite.migrationsAreAppliedOnceAndANewerSchemaIsRefused { try PostgresConnection(url: url) }
    }

    func testASnapshotReadsOneMoment() throws {
        try StoreSuite.aSnapshotReadsOneMoment(reader: PostgresConnection(url: url), writer: PostgresConnection(url: url))
    }

    /// A claim reads `deliveries_due` in order and stops at its limit, even
    /// when the statistics are older than the backlog: a digest wave's
    /// pending deliveries, in a table the last ANALYZE saw all sent. With
    /// the index ending at `next_attempt_ms` (before `claimOrder`) this
    /// plan sorted every pending delivery for each claim.
    func testAClaimReadsTheDueIndexInOrderWhateverTheStatistics() throws {
        _ = try suite.makeStore()
        let database = try PostgresConnection(url: url)
        try database.execute(
            """
            INSERT INTO digests (digest_id, teacher_id, school_id, date, scope, grade, class_number, revision, created_at, read, subject, text, entries, counts)
            VALUES ('d-t-hr-r1', 't-hr', 'sa', '2026-11-30', 'class', 1, 3, 1, '2026-11-29T23:50:01Z', 0, 's1', 't', '[]', '{}');
            INSERT INTO deliveries (delivery_id, digest_id, school_id, teacher_id, channel, target, status, created_ms, queued_ms, next_attempt_ms)
            SELECT 'e' || n, 'd-t-hr-r1', 'sa', 't-hr', 'email', 't-hr@school.example', 'sent', n / 25, n / 25, n / 25
            FROM generate_series(1, 20000) AS n;
            ANALYZE deliveries;
            UPDATE deliveries SET status = 'pending';
            """)
        let sql = SQLStore.due(channel: "'email'", now: "100000", limit: "64")
        let plan = try database.query("EXPLAIN " + sql, []).compactMap { $0.first?.string }
        XCTAssertTrue(plan.contains { $0.contains("deliveries_due") }, plan.joined(separator: "\n"))
        XCTAssertFalse(plan.contains { $0.contains("Sort") }, plan.joined(separator: "\n"))
    }

    /// A read session that stalls (here a 3 s `pg_sleep`, as a lock wait or
    /// a server that stopped answering would) holds one reader: inboxes and
    /// lists are served meanwhile by the others. With one reader connection
    /// (before the pool) each read below waited the 3 s out.
    func testAStalledReadSessionLeavesOtherReadsServed() throws {
        let store = try SQLStore.postgres(url: url, clock: Timestamp.now)
        _ = try store.apply([.registered(suite.record("g1"))])
        let stalled = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? store.readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) -> Int in
                stalled.signal()
                return try database.query("SELECT pg_sleep(3)", []).count
            }
            done.signal()
        }
        stalled.wait()
        for _ in 0..<5 {
            XCTAssertEqual(try store.guidances(school: "sa", date: "2026-11-30", grade: nil, classNumber: nil).count, 1)
            XCTAssertEqual(try store.inbox(teacher: "t-hr"), [])
        }
        // Served while the stall still holds its reader: had a read waited
        // for it, the stall would have ended first.
        XCTAssertEqual(done.wait(timeout: .now()), .timedOut, "reads waited for the stalled session")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
    }

    func testWhatWasToldSurvivesTheUpgrade() throws {
        let url = self.url
        try suite.whatWasToldSurvivesTheUpgrade { try PostgresConnection(url: url) }
    }

    /// A read-only session answers `25006`, as a database set read-only does.
    func testOnlyTheStoresOwnFailuresAreRetriable() throws {
        try StoreSuite.onlyTheStoresOwnFailuresAreRetriable(try PostgresConnection(url: url)) { database in
            try database.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        }
        for (state, code) in [
            ("23505", StoreError.Code.conflict), ("22021", .invalidValue), ("53100", .unavailable), ("25006", .unavailable),
            ("57P01", .unavailable), ("08006", .unavailable), ("40001", .unavailable), ("58030", .unavailable),
            ("42P01", .failed)
        ] {
            XCTAssertEqual(PostgresConnection.code(ofState: state), code, state)
        }
    }

    func testRegistrationsUpsertAndReplaysChangeNothing() throws { try suite.registrationsUpsertAndReplaysChangeNothing() }
    func testAGuidanceIDBelongsToItsFirstRegistrationAndSchool() throws { try suite.aGuidanceIDBelongsToItsFirstRegistrationAndSchool() }
    func testDeletionWinsInEitherOrder() throws { try suite.deletionWinsInEitherOrder() }
    func testDigestRunsWriteOnceAndAmendOnlyChanges() throws { try suite.digestRunsWriteOnceAndAmendOnlyChanges() }
    func testABigRunsListsPastThoseRenderedAheadAreWrittenOneAtATime() throws {
        try suite.aBigRunsListsPastThoseRenderedAheadAreWrittenOneAtATime()
    }
    func testAFailedRunWritesNothingSoTheRerunDeliversExactlyOnce() throws {
        try suite.aFailedRunWritesNothingSoTheRerunDeliversExactlyOnce()
    }
    func testAFailedRunInABatchLeavesTheOthersWritten() throws { try suite.aFailedRunInABatchLeavesTheOthersWritten() }
    func testInboxReadState() throws { try suite.inboxReadState() }
    func testFrequenciesCountTheLastSevenAndThirtyDays() throws { try suite.frequenciesCountTheLastSevenAndThirtyDays() }
    func testServiceAccountsAndWeeklyAmendments() throws { try suite.serviceAccountsAndWeeklyAmendments() }
    func testPurgeRemovesOldDaysAndKeepsNewerOnes() throws { try suite.purgeRemovesOldDaysAndKeepsNewerOnes() }
    func testAccessRecordsAreStoredOnceAndFiltered() throws { try suite.accessRecordsAreStoredOnceAndFiltered() }
    func testOutboxLeasesRetriesAndRequeues() throws { try suite.outboxLeasesRetriesAndRequeues() }
    func testPushSubscriptionsAreBoundAndCapped() throws { try suite.pushSubscriptionsAreBoundAndCapped() }
    func testRulesAreCrossedOnceToldOnceAndWithdrawn() throws { try suite.rulesAreCrossedOnceToldOnceAndWithdrawn() }
    func testCasesFollowTheirCrossingsAndSteps() throws { try suite.casesFollowTheirCrossingsAndSteps() }
    func testASecondMissedSittingOpensOneCase() throws { try suite.aSecondMissedSittingOpensOneCase() }
    func testAFloodOfCrossingsIsOneNoticeADay() throws { try suite.aFloodOfCrossingsIsOneNoticeADay() }
    func testHeldDeliveriesOfAKindBecomeOne() throws { try suite.heldDeliveriesOfAKindBecomeOne() }

    /// Statements are prepared once per session; when the server ends the
    /// session (a restart, an operator's pg_terminate_backend), the next
    /// call reconnects and prepares again without failing.
    func testStatementsArePreparedAgainOnANewSession() throws {
        let connection = try PostgresConnection(url: url)
        XCTAssertEqual(try connection.query("SELECT $1::int + 1", [.integer(1)]), [[.text("2")]])
        let session = try XCTUnwrap(connection.query("SELECT pg_backend_pid()", []).first?.first)
        _ = try PostgresConnection(url: url).query("SELECT pg_terminate_backend($1::int)", [session])
        XCTAssertEqual(try connection.query("SELECT $1::int + 1", [.integer(2)]), [[.text("3")]])
        XCTAssertNotEqual(try connection.query("SELECT pg_backend_pid()", []).first?.first, session, "a new session")

        // Inside a transaction the loss is the caller's to retry: a
        // retriable error, never one that would dead-letter an event.
        try connection.begin()
        let inside = try XCTUnwrap(connection.query("SELECT pg_backend_pid()", []).first?.first)
        _ = try PostgresConnection(url: url).query("SELECT pg_terminate_backend($1::int)", [inside])
        XCTAssertThrowsError(try connection.query("SELECT $1::int + 1", [.integer(3)])) { error in
            XCTAssertTrue((error as? StoreError)?.isRetriable == true, "\(error)")
        }
        try connection.execute("ROLLBACK")
        XCTAssertEqual(try connection.query("SELECT $1::int + 1", [.integer(3)]), [[.text("4")]])

        // The session replaced while a new statement is prepared (the prepare
        // reconnects and is sent again): the next new statement's name must
        // not be one the new session has. It was (42P05, for good).
        let fresh = try PostgresConnection(url: url)
        XCTAssertEqual(try fresh.query("SELECT $1::int + 10", [.integer(1)]), [[.text("11")]])
        _ = try PostgresConnection(url: url).query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()", [])
        XCTAssertEqual(try fresh.query("SELECT $1::int + 20", [.integer(1)]), [[.text("21")]])
        XCTAssertEqual(try fresh.query("SELECT $1::int + 30", [.integer(1)]), [[.text("31")]])
    }

    func testReplicasStartingTogetherCreateTheSchemaOnce() throws {
        let url = self.url
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            do { _ = try SQLStore.postgres(url: url, clock: Timestamp.now) } catch { failures.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
    }

    func testConcurrentRunsOfOneDayWriteEachDigestOnce() throws {
        let url = self.url
        let suite = self.suite
        _ = try suite.makeStore().apply([.registered(suite.record("g1")), .registered(suite.record("g2", number: 4))])
        let written = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let store = try SQLStore.postgres(url: url, clock: Timestamp.now)
                let digests = try store.writeDigests(school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z") {
                    suite.simplePlan($0)
                } targets: { _ in
                    []
                }
                written.withLock { $0.append(digests.count) }
            } catch {
                written.withLock { $0.append(-1) }
            }
        }
        XCTAssertEqual(written.withLock { $0 }.sorted(), [0, 0, 0, 1], "exactly one replica wrote the digest")
        XCTAssertEqual(try suite.makeStore().inbox(teacher: "t-hr").count, 1)
    }
}
