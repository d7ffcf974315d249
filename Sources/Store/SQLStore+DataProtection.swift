import Common
import Crypto
import Foundation
import Guidance

/// What a purge removed (or, dry, would remove), by table.
package struct PurgeReport: Sendable, Equatable {
    package var removed: [String: Int] = [:]
    /// Statements that deleted rows, each in its own short transaction.
    package var batches = 0
    /// The longest any batch held the writer, in milliseconds.
    package var longestBatchMilliseconds = 0.0

    package init() {}
}

/// One school's cut: days before `firstKeptDay` (`YYYY-MM-DD`, school-local)
/// go, and tombstones and access records from before `before` (seconds).
package struct PurgeCut: Sendable, Equatable {
    package let school: String
    package let firstKeptDay: String
    package let before: Double
    package let accessLogBefore: Double

    package init(school: String, firstKeptDay: String, before: Double, accessLogBefore: Double) {
        self.school = school
        self.firstKeptDay = firstKeptDay
        self.before = before
        self.accessLogBefore = accessLogBefore
    }
}

/// Everything the store holds about one student, for an export.
package struct StudentRecords: Sendable, Equatable {
    package struct Guidance: Sendable, Equatable {
        package let record: GuidanceRecord
        package let deletedBy: String?
        package let deletedAt: String?
    }

    /// A digest that named the student, and how.
    package struct Appearance: Sendable, Equatable {
        package let digestId: String
        package let teacherId: String
        package let date: String
        package let revision: Int
        package let guidanceId: String
        package let change: DigestEntry.Change
    }

    /// A service record (봉사), withdrawn ones with who took them back.
    package struct CommunityService: Sendable, Equatable {
        package let record: CommunityServiceRecord
        package let withdrawnBy: String?
        package let withdrawnAt: String?
    }

    package let guidances: [Guidance]
    package let digests: [Appearance]
    package var services: [CommunityService] = []
    /// The school rules the student crossed, withdrawn ones too.
    package var crossings: [RuleCrossing] = []
    /// The sessions of 교내봉사 their guidances owe, as scheduled (cancelled ones left out).
    package var duties: [CommunityServiceDuty] = []
    /// Their cases, closed ones too, and every step of them.
    package var cases: [GuidanceCase] = []
    package var caseSteps: [SQLStore.CaseHistoryLine] = []

    /// The student's volunteer service: what the active guidances owe, what
    /// the service records not withdrawn served and closed.
    package var standing: CommunityServiceStanding {
        func sessions(_ outcome: CommunityServiceRecord.Outcome) -> Int {
            services.filter { $0.withdrawnAt == nil && $0.record.outcome == outcome }.map(\.record.sessions).reduce(0, +)
        }
        return CommunityServiceStanding(
            owed: guidances.filter { $0.deletedAt == nil }.map(\.record.serviceSessions).reduce(0, +), served: sessions(.served),
            closed: sessions(.closed))
    }

    /// Whether anything is stored about the student.
    package var isEmpty: Bool { guidances.isEmpty && digests.isEmpty && services.isEmpty && crossings.isEmpty && cases.isEmpty }
}

extension SQLStore {
    /// Version 7: the access log, the lookup of a digest's deliveries (the
    /// purge removes them with their digest), and one purge a day across
    /// replicas.
    static let dataProtection = """
        CREATE TABLE IF NOT EXISTS access_log (
            access_id TEXT PRIMARY KEY,
            at_ms BIGINT NOT NULL,
            school_id TEXT NOT NULL,
            teacher_id TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            client TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS access_log_by_school ON access_log(school_id, at_ms);
        CREATE INDEX IF NOT EXISTS deliveries_by_digest ON deliveries(digest_id);
        CREATE TABLE IF NOT EXISTS purge_runs (
            day TEXT PRIMARY KEY,
            started_at TEXT NOT NULL
        );
        """

    /// Version 10: students erased, by school and the SHA-256 of their id
    /// (not the id), so that an access record in flight at the erasure
    /// (a look-up, the admin's own export) is stored naming `(erased)`.
    static let erasedStudents = """
        CREATE TABLE IF NOT EXISTS erased_students (
            school_id TEXT NOT NULL,
            student_hash TEXT NOT NULL,
            erased_at_ms BIGINT NOT NULL,
            PRIMARY KEY (school_id, student_hash)
        );
        """

    /// How an erased student's id is kept: its SHA-256, with the school.
    static func erasedKey(school: String, student: String) -> String {
        school + "\n" + SHA256.hex(SHA256.hash(utf8: student))
    }

    // MARK: - Access log

    /// Inserts access records; one naming an erased student names
    /// `(erased)` instead, however late it arrived (the erasure and this run
    /// under the same writer lock, so one is wholly before the other).
    static func insert(_ records: [AccessRecord], in database: any SQLDatabase) throws(StoreError) {
        guard !records.isEmpty else { return }
        let erased = Set(
            try database.query("SELECT school_id, student_hash FROM erased_students", []).compactMap { row -> String? in
                guard let school = row.first?.text, let hash = row.dropFirst().first?.text else { return nil }
                return school + "\n" + hash
            })
        let rows = records.map { record -> [SQLValue] in
            let target =
                !erased.isEmpty && erased.contains(erasedKey(school: record.schoolId, student: record.target)) ? erasedID : record.target
            return [
                .text(record.accessId), .integer(Int64(((Timestamp.parse(record.at) ?? 0) * 1000).rounded())), .text(record.schoolId),
                .text(record.teacherId), .text(record.action.rawValue), .text(target), .text(record.client)
            ]
        }
        for statement in database.inserts(
            "INSERT INTO access_log (access_id, at_ms, school_id, teacher_id, action, target, client) VALUES ",
            rows: rows, perStatement: database.rowsPerStatement, then: "ON CONFLICT (access_id) DO NOTHING")
        {
            try database.run(statement.sql, statement.parameters)
        }
    }

    /// A school's access records from `from` up to `to` (seconds), newest
    /// first, at most `limit`, and how many match in all; of one teacher,
    /// one kind, or some students (ids; an empty list matches nothing) when given.
    package func accessLog(
        school: String, from: Double, to: Double, teacher: String?, action: AccessRecord.Action? = nil, students: [String]? = nil,
        limit: Int
    ) throws(StoreError) -> (records: [AccessRecord], total: Int) {
        if students?.isEmpty == true { return ([], 0) }
        // Only the conditions asked for, each a plain comparison.
        var parameters: [SQLValue] = [.text(school), .integer(milliseconds(from)), .integer(milliseconds(to))]
        var conditions = "school_id = $1 AND at_ms >= $2 AND at_ms < $3"
        func condition(_ column: String, _ value: String?) {
            guard let value else { return }
            parameters.append(.text(value))
            conditions += " AND \(column) = $\(parameters.count)"
        }
        condition("teacher_id", teacher)
        condition("action", action?.rawValue)
        if let students {
            let first = parameters.count + 1
            parameters += students.map { .text($0) }
            conditions += " AND target IN (" + (first..<first + students.count).map { "$\($0)" }.joined(separator: ", ") + ")"
            // A student's id is the target of these; an inbox's is a teacher's.
            conditions += " AND action IN (" + AccessRecord.Action.studentTargets.map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"
        }
        let counted = parameters
        parameters.append(.integer(Int64(limit)))
        return try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            let records = try database.query(
                """
                SELECT access_id, at_ms, school_id, teacher_id, action, target, client FROM access_log
                WHERE \(conditions)
                ORDER BY at_ms DESC, access_id LIMIT $\(parameters.count)
                """, parameters
            ) { row in
                AccessRecord(
                    accessId: row[0].string ?? "", at: Timestamp.format(Double(row[1].int ?? 0) / 1000), schoolId: row[2].string ?? "",
                    teacherId: row[3].string ?? "", action: AccessRecord.Action(rawValue: row[4].string ?? "") ?? .list,
                    target: row[5].string ?? "", client: row[6].string ?? "")
            }
            // The count only when the page is not already all of them.
            guard records.count == limit else { return (records, records.count) }
            let total = try database.query("SELECT count(*) FROM access_log WHERE \(conditions)", counted) { Int($0[0].int ?? 0) }
            return (records, total.first ?? records.count)
        }
    }

    // MARK: - Purge

    /// Every school the store holds anything of, so that a school gone from
    /// the roster is purged too.
    package func schoolsStored() throws(StoreError) -> [String] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(
                """
                SELECT school_id FROM guidances GROUP BY school_id
                UNION SELECT school_id FROM digests GROUP BY school_id
                UNION SELECT school_id FROM access_log GROUP BY school_id
                """, []
            ) { $0[0].string ?? "" }
        }
    }

    /// Whether this replica is the first to purge on `day` (UTC); one purge
    /// a day, whichever replica gets there first.
    package func claimPurge(day: String, now: Double) throws(StoreError) -> Bool {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            try database.transaction { () throws(StoreError) -> Bool in
                try database.run("DELETE FROM purge_runs WHERE day < $1", [.text(day)])
                return try database.run(
                    "INSERT INTO purge_runs (day, started_at) VALUES ($1, $2) ON CONFLICT (day) DO NOTHING",
                    [.text(day), .text(Timestamp.format(now))]) == 1
            }
        }
    }

    /// The purge's deletions, in the order foreign keys need: a digest's
    /// deliveries before the digest. Each takes at most `$3` rows found
    /// through an index that starts with the school.
    private static let purgeSteps: [(table: String, key: String, select: String, count: String)] = [
        (
            "deliveries", "delivery_id",
            "SELECT d.delivery_id FROM digests g JOIN deliveries d ON d.digest_id = g.digest_id WHERE g.school_id = $1 AND g.date < $2",
            "SELECT COUNT(*) FROM digests g JOIN deliveries d ON d.digest_id = g.digest_id WHERE g.school_id = $1 AND g.date < $2"
        ),
        (
            "digests", "digest_id", "SELECT digest_id FROM digests WHERE school_id = $1 AND date < $2",
            "SELECT COUNT(*) FROM digests WHERE school_id = $1 AND date < $2"
        ),
        (
            "guidances", "guidance_id", "SELECT guidance_id FROM guidances WHERE school_id = $1 AND local_date < $2",
            "SELECT COUNT(*) FROM guidances WHERE school_id = $1 AND local_date < $2"
        ),
        (
            "service_records", "service_id", "SELECT service_id FROM service_records WHERE school_id = $1 AND local_date < $2",
            "SELECT COUNT(*) FROM service_records WHERE school_id = $1 AND local_date < $2"
        ),
        (
            "service_duties", "", "DELETE FROM service_duties WHERE school_id = $1 AND guidance_date < $2",
            "SELECT COUNT(*) FROM service_duties WHERE school_id = $1 AND guidance_date < $2"
        ),
        (
            "digest_runs", "", "DELETE FROM digest_runs WHERE school_id = $1 AND date < $2",
            "SELECT COUNT(*) FROM digest_runs WHERE school_id = $1 AND date < $2"
        ),
        (
            "rule_crossings", "", "DELETE FROM rule_crossings WHERE school_id = $1 AND date < $2",
            "SELECT COUNT(*) FROM rule_crossings WHERE school_id = $1 AND date < $2"
        ),
        (
            "pending_amendments", "", "DELETE FROM pending_amendments WHERE school_id = $1 AND date < $2",
            "SELECT COUNT(*) FROM pending_amendments WHERE school_id = $1 AND date < $2"
        ),
        // A case goes once it is closed and its last change is past the
        // retention; an open one is work still to do and stays.
        (
            "cases", "", "DELETE FROM cases WHERE school_id = $1 AND state IN ('closed', 'withdrawn') AND substr(changed_at, 1, 10) < $2",
            "SELECT COUNT(*) FROM cases WHERE school_id = $1 AND state IN ('closed', 'withdrawn') AND substr(changed_at, 1, 10) < $2"
        ),
        (
            "case_steps", "",
            "DELETE FROM case_steps WHERE school_id = $1 AND substr(at, 1, 10) < $2 AND case_id NOT IN (SELECT case_id FROM cases WHERE school_id = $1)",
            "SELECT COUNT(*) FROM case_steps WHERE school_id = $1 AND substr(at, 1, 10) < $2 AND case_id NOT IN (SELECT case_id FROM cases WHERE school_id = $1)"
        )
    ]

    /// Removes what `cuts` say is past its retention, in batches that each
    /// hold the writer briefly (the batch size adapts to stay within 5–20 ms, a
    /// pause between batches lets events and runs in); `dryRun` counts
    /// instead. Safe to stop and run again: each batch commits on its own.
    package func purge(_ cuts: [PurgeCut], dryRun: Bool = false) throws(StoreError) -> PurgeReport {
        var report = PurgeReport()
        var limit = 200
        for cut in cuts {
            let day: [SQLValue] = [.text(cut.school), .text(cut.firstKeptDay)]
            var steps = SQLStore.purgeSteps.map { ($0.table, $0.key, $0.select, $0.count, day) }
            // Tombstones (deletions whose registration never came or was purged) have no day: by time.
            steps.append(
                (
                    "guidances", "guidance_id",
                    "SELECT guidance_id FROM guidances WHERE school_id = $1 AND local_date IS NULL AND deleted_at < $2",
                    "SELECT COUNT(*) FROM guidances WHERE school_id = $1 AND local_date IS NULL AND deleted_at < $2",
                    [.text(cut.school), .text(Timestamp.format(cut.before))]
                ))
            steps.append(
                (
                    "service_records", "service_id",
                    "SELECT service_id FROM service_records WHERE school_id = $1 AND local_date IS NULL AND withdrawn_at < $2",
                    "SELECT COUNT(*) FROM service_records WHERE school_id = $1 AND local_date IS NULL AND withdrawn_at < $2",
                    [.text(cut.school), .text(Timestamp.format(cut.before))]
                ))
            steps.append(
                (
                    "access_log", "access_id", "SELECT access_id FROM access_log WHERE school_id = $1 AND at_ms < $2",
                    "SELECT COUNT(*) FROM access_log WHERE school_id = $1 AND at_ms < $2",
                    [.text(cut.school), .integer(milliseconds(cut.accessLogBefore))]
                ))
            for (table, key, select, count, parameters) in steps {
                if dryRun {
                    let rows = try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
                        try database.query(count, parameters)
                    }
                    let count = rows.first?.first?.int ?? 0
                    if count > 0 { report.removed[table, default: 0] += count }
                    continue
                }
                let sql = key.isEmpty ? select : "DELETE FROM \(table) WHERE \(key) IN (\(select) LIMIT $3)"
                while true {
                    let asked = limit
                    // Timed inside the lock: how long the batch held the writer, not how long it waited for it.
                    let (removed, held) = try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) -> (Int, Double) in
                        let started = Uptime()
                        let removed = try database.transaction { () throws(StoreError) -> Int in
                            try database.run(sql, key.isEmpty ? parameters : parameters + [.integer(Int64(asked))])
                        }
                        return (removed, started.now.seconds * 1000)
                    }
                    report.longestBatchMilliseconds = max(report.longestBatchMilliseconds, held)
                    guard removed > 0 else { break }
                    report.batches += 1
                    report.removed[table, default: 0] += removed
                    limit = held > 20 ? max(20, limit / 2) : (held < 5 ? min(5_000, limit * 2) : limit)
                    if key.isEmpty || removed < asked { break }
                    // A sleep, and meant: between batches the writer is free, and
                    // events and runs waiting for it (the lock is not fair) go first.
                    usleep(2_000)
                }
            }
        }
        return report
    }

    // MARK: - Export and erasure

    /// Everything stored about a student of `school`: guidances (deleted
    /// ones with who deleted them), each digest entry naming them, service
    /// records and rule crossings.
    package func records(school: String, student: String) throws(StoreError) -> StudentRecords {
        // One snapshot: an export is one moment of what is stored.
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.snapshot { () throws(StoreError) -> StudentRecords in
                let guidances = try database.query(
                    """
                    SELECT \(SQLStore.recordColumns), g.deleted_by, g.deleted_at FROM guidances g
                    WHERE g.school_id = $1 AND g.student_id = $2 AND g.registered = 1 ORDER BY g.occurred_at, g.guidance_id
                    """, [.text(school), .text(student)]
                ) { row in
                    StudentRecords.Guidance(record: SQLStore.record(row[...]), deletedBy: row[14].string, deletedAt: row[15].string)
                }
                var appearances: [StudentRecords.Appearance] = []
                try SQLStore.digestsNaming(student, school: school, in: database) { digest in
                    for entry in digest.entries where entry.student.studentId == student {
                        appearances.append(
                            StudentRecords.Appearance(
                                digestId: digest.digestId, teacherId: digest.teacherId, date: digest.date, revision: digest.revision,
                                guidanceId: entry.guidanceId, change: entry.change))
                    }
                }
                let services = try database.query(
                    """
                    SELECT \(SQLStore.communityServiceRecordColumns), withdrawn_by, withdrawn_at FROM service_records
                    WHERE school_id = $1 AND student_id = $2 AND recorded = 1 ORDER BY local_date, recorded_at, service_id
                    """, [.text(school), .text(student)]
                ) { row in
                    StudentRecords.CommunityService(
                        record: SQLStore.communityServiceRecord(row), withdrawnBy: row[11].string, withdrawnAt: row[12].string)
                }
                var records = StudentRecords(
                    guidances: guidances, digests: appearances, services: services,
                    crossings: try SQLStore.crossings(school: school, student: student, in: database))
                records.duties = try database.query(
                    """
                    SELECT \(SQLStore.dutyColumns) FROM service_duties d
                    WHERE d.school_id = $1 AND d.student_id = $2 AND d.cancelled = 0 ORDER BY d.due_date, d.duty_id
                    """, [.text(school), .text(student)]
                ) { SQLStore.duty($0[...]) }
                records.cases = try database.query(
                    "SELECT \(SQLStore.caseColumns) FROM cases WHERE school_id = $1 AND student_id = $2 ORDER BY opened_at, case_id",
                    [.text(school), .text(student)], as: SQLStore.guidanceCase)
                records.caseSteps = SQLStore.inTimeOrder(
                    try database.query(
                        "SELECT \(SQLStore.stepColumns) FROM case_steps WHERE school_id = $1 AND student_id = $2 ORDER BY at, step_id",
                        [.text(school), .text(student)], as: SQLStore.historyLine),
                    at: \.at, id: \.stepId)
                return records
            }
        }
    }

    /// The digests of `school` whose entries name `student`.
    private static func digestsNaming(
        _ student: String, school: String, in database: any SQLDatabase, _ body: (Digest) throws(StoreError) -> Void
    ) throws(StoreError) {
        var quoted: [UInt8] = []
        JSONWriter.append(quoted: student, to: &quoted)
        // LIKE's own wildcards in an id would widen the match; the entries are checked after.
        let pattern = "%\"studentId\":" + String(decoding: quoted, as: UTF8.self) + "%"
        let rows = try database.query(
            "SELECT \(digestColumns) FROM digests WHERE school_id = $1 AND entries LIKE $2 ORDER BY date, digest_id",
            [.text(school), .text(pattern)])
        for row in rows { try body(try digest(row[...])) }
    }

    /// What an erased student becomes in stored digests.
    package static let erasedName = "(삭제된 학생)"
    package static let erasedID = "(erased)"

    /// Erases a student of `school` from the store in one transaction: their
    /// guidances, service records and rule crossings go; in every digest naming them the name and id become
    /// neutral marks (`rewrite` renders the digest's subject and text again
    /// from the changed entries); access records naming their id name
    /// `(erased)`. Returns how many guidances and digests it changed.
    package func erase(
        school: String, student: String, rewrite: @Sendable (Digest) -> (subject: String, text: String)
    ) throws(StoreError) -> (guidances: Int, digests: Int) {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            try database.transaction { () throws(StoreError) -> (guidances: Int, digests: Int) in
                let guidances = try database.run(
                    "DELETE FROM guidances WHERE school_id = $1 AND student_id = $2", [.text(school), .text(student)])
                try database.run("DELETE FROM service_records WHERE school_id = $1 AND student_id = $2", [.text(school), .text(student)])
                try database.run("DELETE FROM service_duties WHERE school_id = $1 AND student_id = $2", [.text(school), .text(student)])
                try database.run("DELETE FROM rule_crossings WHERE school_id = $1 AND student_id = $2", [.text(school), .text(student)])
                try database.run("DELETE FROM rule_notices_told WHERE school_id = $1 AND student_id = $2", [.text(school), .text(student)])
                try database.run("DELETE FROM cases WHERE school_id = $1 AND student_id = $2", [.text(school), .text(student)])
                try database.run("DELETE FROM case_steps WHERE school_id = $1 AND student_id = $2", [.text(school), .text(student)])
                var changed: [Digest] = []
                try SQLStore.digestsNaming(student, school: school, in: database) { digest in
                    let neutral = digest.entries.map { entry in
                        guard entry.student.studentId == student else { return entry }
                        let seat = entry.student
                        return DigestEntry(
                            guidanceId: entry.guidanceId,
                            student: StudentRef(
                                studentId: SQLStore.erasedID, grade: seat.grade, classNumber: seat.classNumber, number: seat.number,
                                name: SQLStore.erasedName),
                            reason: entry.reason, occurredAt: entry.occurredAt, change: entry.change, frequency: entry.frequency,
                            service: entry.service,
                            overdue: entry.overdue.map {
                                CommunityServiceDuty(
                                    dutyId: $0.dutyId, studentId: SQLStore.erasedID, guidanceId: $0.guidanceId, dueDate: $0.dueDate,
                                    slot: $0.slot, servedOn: $0.servedOn, serviceId: $0.serviceId, misses: $0.misses)
                            })
                    }
                    changed.append(
                        Digest(
                            digestId: digest.digestId, teacherId: digest.teacherId, schoolId: digest.schoolId, date: digest.date,
                            scope: digest.scope,
                            grade: digest.grade, classNumber: digest.classNumber, revision: digest.revision, createdAt: digest.createdAt,
                            read: digest.read, subject: digest.subject, text: digest.text, entries: neutral, counts: digest.counts))
                }
                for digest in changed {
                    let (subject, text) = rewrite(digest)
                    try database.run(
                        "UPDATE digests SET entries = $2, subject = $3, text = $4 WHERE digest_id = $1",
                        [.text(digest.digestId), .text(DigestColumns.entries(digest.entries)), .text(subject), .text(text)])
                }
                try database.run(
                    "UPDATE access_log SET target = $3 WHERE school_id = $1 AND target = $2",
                    [.text(school), .text(student), .text(SQLStore.erasedID)])
                // Records still on their way name it too: they are stored as `(erased)`.
                try database.run(
                    "INSERT INTO erased_students (school_id, student_hash, erased_at_ms) VALUES ($1, $2, $3) ON CONFLICT (school_id, student_hash) DO NOTHING",
                    [.text(school), .text(SHA256.hex(SHA256.hash(utf8: student))), .integer(Int64((clock() * 1000).rounded()))])
                return (guidances, changed.count)
            }
        }
    }
}
