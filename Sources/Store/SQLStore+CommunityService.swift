import Common
import Guidance

/// Volunteer service (봉사): what each active guidance puts on a student's
/// account, the sessions served, and the weekly 봉사 명단 that Monday's run
/// writes. Service records follow the guidances' rules: the first record of
/// an id wins, a withdrawal is a tombstone that wins whatever the order, an
/// id belongs to its school.
extension SQLStore {
    /// Version 8: each guidance's sessions (stored guidances owed one), the
    /// service records, which runs wrote a weekly list (their Monday), and
    /// guidances found by student: a day's run reads the accounts of that
    /// day's students only, not the school's year (and export and erasure
    /// find a student's guidances without reading the school's).
    static let volunteerService = """
        ALTER TABLE guidances ADD COLUMN service_sessions INTEGER NOT NULL DEFAULT 1;
        CREATE INDEX IF NOT EXISTS guidances_by_student ON guidances(school_id, student_id);
        ALTER TABLE digest_runs ADD COLUMN weekly INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE IF NOT EXISTS service_records (
            service_id TEXT PRIMARY KEY,
            school_id TEXT NOT NULL,
            grade INTEGER NOT NULL,
            student_id TEXT NOT NULL,
            local_date TEXT,
            sessions INTEGER,
            note TEXT,
            recorded_by TEXT,
            recorded_at TEXT,
            recorded INTEGER NOT NULL DEFAULT 0,
            withdrawn INTEGER NOT NULL DEFAULT 0,
            withdrawn_by TEXT,
            withdrawn_at TEXT
        );
        CREATE INDEX IF NOT EXISTS service_records_by_student ON service_records(school_id, student_id);
        """

    /// The lock every event batch holds shared, after its days' locks, and a
    /// Monday's run exclusively: a weekly list counts every earlier day, so
    /// an event of any day either is in it or, committed after it, finds
    /// the run and marks an amendment.
    static func communityServiceKey(_ school: String) -> String { "service/\(school)" }

    // MARK: - Events

    /// Stores a service record, or completes the tombstone of a withdrawal
    /// that arrived first (of the same school and student: the grade may
    /// differ, a withdrawal sent after a grade change names the new one).
    /// Returns why it was kept out, or nil.
    static func record(_ entry: CommunityServiceRecord, in database: any SQLDatabase) throws(StoreError) -> String? {
        let written = try database.run(
            """
            INSERT INTO service_records (service_id, school_id, grade, student_id, local_date, sessions, note, recorded_by, recorded_at, recorded, outcome, duty_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $11)
            ON CONFLICT (service_id) DO UPDATE SET
                local_date = excluded.local_date, sessions = excluded.sessions, note = excluded.note,
                recorded_by = excluded.recorded_by, recorded_at = excluded.recorded_at, recorded = 1,
                grade = excluded.grade, outcome = excluded.outcome, duty_id = excluded.duty_id
            WHERE service_records.recorded = 0 AND service_records.school_id = excluded.school_id
              AND service_records.student_id = excluded.student_id
            """,
            [
                .text(entry.serviceId), .text(entry.schoolId), .integer(Int64(entry.grade)), .text(entry.studentId),
                .text(entry.date), .integer(Int64(entry.sessions)), entry.note.sql, .text(entry.recordedBy),
                .text(entry.recordedAt), .text(entry.outcome.rawValue), entry.dutyId.sql
            ])
        guard written == 0 else { return nil }
        let rows = try database.query(
            "SELECT school_id, student_id, local_date, sessions, note, outcome, duty_id FROM service_records WHERE service_id = $1",
            [.text(entry.serviceId)])
        guard let row = rows.first else { return nil }
        if row[0].string != entry.schoolId { return "foreign: service \(entry.serviceId) belongs to another school" }
        if row[1].string != entry.studentId || row[2].string != entry.date || row[3].int != entry.sessions
            || row[4].string != entry.note || row[5].string != entry.outcome.rawValue || row[6].string != entry.dutyId
        {
            return "conflict: service \(entry.serviceId) is already recorded for another student, day, number, note, outcome or session"
        }
        return nil
    }

    /// Applies a withdrawal to the record of its school and student, whatever
    /// grade either names; returns why it was kept out, or the day of the
    /// record it took back (nil when it is not recorded yet).
    static func withdraw(
        serviceId: String, schoolId: String, grade: Int, studentId: String, by: String, at: String, in database: any SQLDatabase
    ) throws(StoreError) -> Result<String?, Rejected> {
        let written = try database.run(
            """
            INSERT INTO service_records (service_id, school_id, grade, student_id, withdrawn, withdrawn_by, withdrawn_at)
            VALUES ($1, $2, $3, $4, 1, $5, $6)
            ON CONFLICT (service_id) DO UPDATE SET withdrawn = 1, withdrawn_by = excluded.withdrawn_by, withdrawn_at = excluded.withdrawn_at
            WHERE service_records.school_id = excluded.school_id AND service_records.student_id = excluded.student_id
            """, [.text(serviceId), .text(schoolId), .integer(Int64(grade)), .text(studentId), .text(by), .text(at)])
        guard written > 0 else { return .failure(Rejected(reason: "foreign: service \(serviceId) belongs to another school or student")) }
        let dates = try database.query("SELECT local_date FROM service_records WHERE service_id = $1 AND recorded = 1", [.text(serviceId)])
        return .success(dates.first?.first?.string)
    }

    struct Rejected: Error {
        let reason: String
    }

    /// After a batch changed guidances or service of `earliest` days (by
    /// school), under the schools' service locks: each weekly run on or
    /// after such a day is amended at the next tick.
    static func markWeeklyAmendments(_ earliest: [String: String], in database: any SQLDatabase) throws(StoreError) {
        guard !earliest.isEmpty else { return }
        let schools = earliest.keys.sorted()
        try database.lock(schools.map(communityServiceKey), exclusive: false)
        for chunk in schools.chunks(of: max(1, database.rowsPerStatement)) {
            let pairs = (0..<chunk.count).map { "(school_id = $\($0 * 2 + 1) AND date >= $\($0 * 2 + 2))" }.joined(separator: " OR ")
            try database.run(
                """
                INSERT INTO pending_amendments (school_id, date)
                SELECT school_id, date FROM digest_runs WHERE weekly = 1 AND (\(pairs))
                ON CONFLICT (school_id, date) DO NOTHING
                """, chunk.flatMap { [SQLValue.text($0), .text(earliest[$0] ?? "")] })
        }
    }

    // MARK: - Accounts

    /// Per student: sessions owed (by active guidances), served and closed
    /// (by active records), the newest guidance as `occurredAt reasonCode guidanceId`,
    /// the newest day served; grouped once, whatever grade each was recorded
    /// in (the student's grade is the roster's now). With `studentsOf`, only
    /// the students with a guidance (active or deleted) on that day, each
    /// found through the student indexes; without, the school's all.
    static func accountsStatement(school: String, asOf date: String?, studentsOf day: String? = nil) -> SQLStatement {
        // Only the conditions asked for, each a plain comparison: no `$n IS
        // NULL OR …`, which keeps PostgreSQL's generic plan of the prepared
        // statement from giving up the indexes.
        var parameters: [SQLValue] = [.text(school)]
        func parameter(_ value: SQLValue) -> String {
            parameters.append(value)
            return "$\(parameters.count)"
        }
        var guidances = "g.school_id = $1 AND g.registered = 1 AND g.deleted = 0 AND g.local_date IS NOT NULL"
        var records = "s.school_id = $1 AND s.recorded = 1 AND s.withdrawn = 0 AND s.outcome IN ('served', 'closed')"
        if let date {
            let value = parameter(.text(date))
            guidances += " AND g.local_date <= \(value)"
            records += " AND s.local_date <= \(value)"
        }
        if let day {
            let students =
                "IN (SELECT d.student_id FROM guidances d WHERE d.school_id = $1 AND d.local_date = \(parameter(.text(day))) AND d.registered = 1)"
            guidances += " AND g.student_id " + students
            records += " AND s.student_id " + students
        }
        return SQLStatement(
            """
            SELECT student_id, SUM(owed), SUM(served), SUM(closed), MAX(last_guidance), MAX(last_service) FROM (
                SELECT g.student_id AS student_id, SUM(g.service_sessions) AS owed, 0 AS served, 0 AS closed,
                       MAX(g.occurred_at || ' ' || g.reason_code || ' ' || g.guidance_id) AS last_guidance, NULL AS last_service
                FROM guidances g WHERE \(guidances)
                GROUP BY g.student_id
                UNION ALL
                SELECT s.student_id, 0, SUM(CASE WHEN s.outcome = 'served' THEN s.sessions ELSE 0 END),
                       SUM(CASE WHEN s.outcome = 'closed' THEN s.sessions ELSE 0 END), NULL,
                       MAX(CASE WHEN s.outcome = 'served' THEN s.local_date END)
                FROM service_records s WHERE \(records)
                GROUP BY s.student_id
            ) a GROUP BY student_id ORDER BY student_id
            """, parameters)
    }

    static func account(_ row: [SQLValue]) -> CommunityServiceAccount {
        let last = (row[4].string ?? "").split(separator: " ").map(String.init)
        return CommunityServiceAccount(
            studentId: row[0].string ?? "",
            standing: CommunityServiceStanding(owed: row[1].int ?? 0, served: row[2].int ?? 0, closed: row[3].int ?? 0),
            lastGuidance: last.count == 3 ? (guidanceId: last[2], occurredAt: last[0], reasonCode: last[1]) : nil,
            lastService: row[5].string)
    }

    /// Each student's volunteer-service account as of `date` (nil: all
    /// days), whatever grade its records name (the caller places the
    /// student by the roster), with their active service records; students
    /// with neither guidances nor service are absent.
    package func communityServiceAccounts(school: String, asOf date: String?) throws(StoreError) -> [CommunityServiceAccount] {
        // Totals and records from one snapshot: a withdrawal applied between
        // the two reads showed a record gone and still counted.
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.snapshot { () throws(StoreError) -> [CommunityServiceAccount] in
                let statement = SQLStore.accountsStatement(school: school, asOf: date)
                var accounts = try database.query(statement.sql, statement.parameters) { SQLStore.account($0) }
                var records: [String: [CommunityServiceRecord]] = [:]
                let listed = SQLStore.recordsStatement(school: school, asOf: date)
                try database.forEachRow(listed.sql, listed.parameters) { row in
                    let record = SQLStore.communityServiceRecord(row)
                    records[record.studentId, default: []].append(record)
                }
                for index in accounts.indices { accounts[index].records = records[accounts[index].studentId] ?? [] }
                return accounts
            }
        }
    }

    /// A school's active service records (완료 and 종결), up to a day when
    /// asked: only that condition, as in `accountsStatement`.
    static func recordsStatement(school: String, asOf date: String?) -> SQLStatement {
        var parameters: [SQLValue] = [.text(school)]
        var conditions = "school_id = $1 AND recorded = 1 AND withdrawn = 0 AND outcome IN ('served', 'closed')"
        if let date {
            parameters.append(.text(date))
            conditions += " AND local_date <= $\(parameters.count)"
        }
        return SQLStatement(
            "SELECT \(communityServiceRecordColumns) FROM service_records WHERE \(conditions) ORDER BY local_date, recorded_at, service_id",
            parameters)
    }

    static let communityServiceRecordColumns =
        "service_id, school_id, grade, student_id, local_date, sessions, note, recorded_by, recorded_at, outcome, duty_id"

    static func communityServiceRecord(_ row: [SQLValue]) -> CommunityServiceRecord {
        CommunityServiceRecord(
            serviceId: row[0].string ?? "", schoolId: row[1].string ?? "", grade: row[2].int ?? 0, studentId: row[3].string ?? "",
            date: row[4].string ?? "", sessions: row[5].int ?? 0, note: row[6].string, recordedBy: row[7].string ?? "",
            recordedAt: row[8].string ?? "", outcome: CommunityServiceRecord.Outcome(rawValue: row[9].string ?? "") ?? .served,
            dutyId: row[10].string)
    }
}
