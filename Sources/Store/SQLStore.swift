import Common
import Foundation
import Guidance
import Synchronization

/// The store over SQL, written once for SQLite and PostgreSQL: a writer
/// connection for events and digest runs, a small pool of readers for the
/// HTTP queries (`ReadPool`), and an outbox connection for the dispatcher,
/// so that sending never waits behind a batch of events. Writers that could race across replicas (a digest run and the
/// events of its day) serialise on a lock per school and date. Every call
/// blocks: call it from the store's own threads (`blocking`), never from
/// Swift's cooperative pool.
package final class SQLStore: Sendable {
    /// The store's threads: one per connection, so that a call that runs
    /// always finds its connection free, and a store that stopped answering
    /// holds these threads and no others.
    package let executor = BlockingExecutor("store", threads: SQLStore.readerCount + 2)
    let writer: Mutex<any SQLDatabase>
    let readers: ReadPool
    let outbox: Mutex<any SQLDatabase>
    /// Rung after a commit that changed a rule crossing: its teachers are
    /// told now (`tellCrossings`), not at the next check.
    package let crossingsChanged = Doorbell()
    /// The service's clock: when a crossing was decided, a student erased.
    let clock: @Sendable () -> Double

    /// Readers per store: enough that a stalled session or a slow export
    /// leaves lists and inboxes served, few enough for a server's connection
    /// limit with several replicas (each holds 2 + this many).
    static let readerCount = 4

    /// How long a read may wait for PostgreSQL: a list answers 503 within
    /// it when the server stopped answering (writers keep their 5 s: a
    /// batch's commit is worth waiting for), and a read that did not
    /// answer pauses the others as long (`ReadPool`).
    static let readDeadline: Duration = .seconds(4)

    /// `body`, calls of this store, run on the store's threads and awaited.
    package func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await executor.run(body)
    }

    /// One SQLite file in WAL mode (its readers do not block one another).
    package static func sqlite(path: String, clock: @escaping @Sendable () -> Double) throws(StoreError) -> SQLStore {
        try SQLStore(writer: SQLiteConnection(path: path), outbox: SQLiteConnection(path: path), clock: clock) {
            () throws(StoreError) -> any SQLDatabase in
            try SQLiteConnection(path: path)
        }
    }

    /// A PostgreSQL database; the schema is created by whichever replica
    /// gets there first.
    /// What libpq reads from a `postgres://` URL, or why it cannot read it.
    package static func postgresOptions(_ url: String) -> Result<[String: String], StoreError> {
        PostgresConnection.options(of: url)
    }

    package static func postgres(url: String, clock: @escaping @Sendable () -> Double) throws(StoreError) -> SQLStore {
        try SQLStore(writer: PostgresConnection(url: url), outbox: PostgresConnection(url: url), clock: clock) {
            () throws(StoreError) -> any SQLDatabase in
            try PostgresConnection(url: url, timeout: SQLStore.readDeadline)
        }
    }

    private init(
        writer writing: sending any SQLDatabase, outbox sending: sending any SQLDatabase, clock: @escaping @Sendable () -> Double,
        reader open: () throws(StoreError) -> any SQLDatabase
    ) throws(StoreError) {
        self.clock = clock
        try SQLStore.migrate(writing, now: clock())
        writer = Mutex(writing)
        readers = try ReadPool(count: SQLStore.readerCount, pause: SQLStore.readDeadline, open: open)
        outbox = Mutex(sending)
    }

    /// The schema, as numbered steps: version N is `migrations[N - 1]`. A
    /// release that changes the schema appends a step and never edits one.
    static func migrations(for database: any SQLDatabase) -> [String] {
        [
            schema, outboxSchema, dayIndex, itemsByDay(keyedTable: database.keyedTable), digestsByDay, noItems, dataProtection,
            volunteerService,
            teacherSettings, erasedStudents, ruleCrossings, serviceSchedule, quietHoursAndPush, claimOrder, ruleNoticesToday,
            toldOfDayOrder, cases, addedSittingsSchema
        ]
    }

    /// Brings the schema to the newest version, under the schema lock so
    /// that replicas starting together apply each step once. A store whose
    /// schema is newer than this release knows is refused: running an older
    /// release on it could misread what a newer one wrote.
    static func migrate(_ database: any SQLDatabase, migrations: [String]? = nil, now: Double) throws(StoreError) {
        let migrations = migrations ?? SQLStore.migrations(for: database)
        try database.transaction { () throws(StoreError) in
            try database.lock(["schema"], exclusive: true)
            try database.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
            let current = try database.query("SELECT MAX(version) FROM schema_migrations", []).first?.first?.int ?? 0
            guard current <= migrations.count else {
                throw StoreError(
                    .failed,
                    "the store's schema is version \(current), newer than this release knows (\(migrations.count)); run a newer release or restore a backup"
                )
            }
            for (index, step) in migrations.enumerated() where index + 1 > current {
                try database.execute(step)
                try database.run(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)",
                    [.integer(Int64(index + 1)), .text(Timestamp.format(now))])
            }
        }
    }

    /// Version 1. Stores made before numbered migrations have these tables
    /// already; every statement is IF NOT EXISTS, so they are recorded as
    /// version 1 without a change.
    static let schema = """
        CREATE TABLE IF NOT EXISTS guidances (
            guidance_id TEXT PRIMARY KEY,
            school_id TEXT NOT NULL,
            grade INTEGER NOT NULL,
            local_date TEXT,
            class_number INTEGER,
            number INTEGER,
            student_id TEXT,
            student_name TEXT,
            reason_code TEXT,
            reason_label TEXT,
            reason_detail TEXT,
            recorded_by TEXT,
            occurred_at TEXT,
            registered INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0,
            deleted_by TEXT,
            deleted_at TEXT
        );
        CREATE INDEX IF NOT EXISTS guidances_by_day ON guidances(school_id, local_date, grade, class_number, number, occurred_at);
        CREATE TABLE IF NOT EXISTS digest_runs (
            school_id TEXT NOT NULL,
            date TEXT NOT NULL,
            completed_at TEXT NOT NULL,
            digests INTEGER NOT NULL,
            PRIMARY KEY (school_id, date)
        );
        CREATE TABLE IF NOT EXISTS pending_amendments (
            school_id TEXT NOT NULL,
            date TEXT NOT NULL,
            PRIMARY KEY (school_id, date)
        );
        CREATE TABLE IF NOT EXISTS digests (
            digest_id TEXT PRIMARY KEY,
            teacher_id TEXT NOT NULL,
            school_id TEXT NOT NULL,
            date TEXT NOT NULL,
            scope TEXT NOT NULL,
            grade INTEGER NOT NULL,
            class_number INTEGER,
            revision INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            read INTEGER NOT NULL DEFAULT 0,
            subject TEXT NOT NULL,
            text TEXT NOT NULL,
            entries TEXT NOT NULL,
            counts TEXT NOT NULL,
            UNIQUE (teacher_id, school_id, date, scope, revision)
        );
        CREATE INDEX IF NOT EXISTS digests_by_teacher ON digests(teacher_id, created_at);
        CREATE TABLE IF NOT EXISTS digest_items (
            teacher_id TEXT NOT NULL,
            school_id TEXT NOT NULL,
            date TEXT NOT NULL,
            scope TEXT NOT NULL,
            guidance_id TEXT NOT NULL,
            active INTEGER NOT NULL,
            PRIMARY KEY (teacher_id, school_id, date, scope, guidance_id)
        );
        CREATE INDEX IF NOT EXISTS digest_items_by_day ON digest_items(school_id, date);
        """

    /// Version 2: the outbox, one row per digest revision and channel. Times
    /// are milliseconds since the epoch, so that both databases compare them
    /// as numbers.
    static let outboxSchema = """
        CREATE TABLE IF NOT EXISTS deliveries (
            delivery_id TEXT PRIMARY KEY,
            digest_id TEXT NOT NULL REFERENCES digests(digest_id),
            school_id TEXT NOT NULL,
            teacher_id TEXT NOT NULL,
            channel TEXT NOT NULL,
            target TEXT NOT NULL,
            status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            claims INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            created_ms BIGINT NOT NULL,
            queued_ms BIGINT NOT NULL,
            next_attempt_ms BIGINT NOT NULL,
            lease_owner TEXT,
            lease_until_ms BIGINT,
            sent_ms BIGINT
        );
        CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(channel, status, next_attempt_ms);
        CREATE INDEX IF NOT EXISTS deliveries_by_school ON deliveries(school_id, status, created_ms);
        """

    /// Version 3: the day index holds only what queries look a day up by
    /// (school and date; a day's rows are few and sorted after). Inserting
    /// into the six-column index was most of PostgreSQL's work per event:
    /// apply 27.3 / 23.1 / 26.3k -> 27.5 / 36.0 / 38.7k events/s.
    static let dayIndex = """
        DROP INDEX IF EXISTS guidances_by_day;
        CREATE INDEX IF NOT EXISTS guidances_by_school_date ON guidances(school_id, local_date);
        """

    /// Version 4: digest items keyed by school and date first, the only way
    /// they are looked up (a run reads what its day's recipients were told),
    /// so the key serves that lookup and the day index goes; on SQLite the
    /// rows live in the key's B-tree. Each item was three B-tree inserts and
    /// is one (two on PostgreSQL): district run, 200 schools, seven runs
    /// each, alternated, median 0.98 -> 0.88 s. The table is copied once, in
    /// the migration's transaction (about 11 s per million items on SQLite).
    static func itemsByDay(keyedTable: String) -> String {
        """
        CREATE TABLE digest_items_next (
            school_id TEXT NOT NULL,
            date TEXT NOT NULL,
            teacher_id TEXT NOT NULL,
            scope TEXT NOT NULL,
            guidance_id TEXT NOT NULL,
            active INTEGER NOT NULL,
            CONSTRAINT digest_items_key PRIMARY KEY (school_id, date, teacher_id, scope, guidance_id)
        )\(keyedTable);
        INSERT INTO digest_items_next (school_id, date, teacher_id, scope, guidance_id, active)
            SELECT school_id, date, teacher_id, scope, guidance_id, active FROM digest_items;
        DROP TABLE digest_items;
        ALTER TABLE digest_items_next RENAME TO digest_items;
        """
    }

    /// Version 5: digests found by school and date. A run asks for each
    /// recipient's newest revision of its day, and without this index read
    /// every digest ever written to answer: with a school year's 1,064,000
    /// digests, 156 ms a school (31 s for a 200-school district run, under
    /// the writer's lock), 0.1 ms with it.
    static let digestsByDay = """
        CREATE INDEX IF NOT EXISTS digests_by_day ON digests(school_id, date);
        """

    /// Version 6: what a recipient was told is read from its digests'
    /// entries (each revision's added and removed), which hold it already;
    /// the items that repeated it row by row go. A district run wrote 40,000
    /// of them: on PostgreSQL 160 of the run's 300 ms of server time.
    static let noItems = """
        DROP TABLE IF EXISTS digest_items;
        """

    /// Applies a batch of events in one transaction. Replays change nothing;
    /// a deletion wins over its registration whatever the order. A guidance
    /// id belongs to the school that first registered it, with the content
    /// it was first registered with: events that contradict that change
    /// nothing and come back as rejections, for the dead-letter topic. The
    /// students whose records changed are counted against their school's
    /// `rules` in the same transaction (`decideCrossings`).
    package func apply(_ events: [StoredEvent], rules: [String: [SchoolRule]] = [:], schools: [String: School] = [:]) throws(StoreError)
        -> [Rejection]
    {
        var crossings = 0
        defer { if crossings > 0 { crossingsChanged.ring() } }
        return try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) -> [Rejection] in
            try database.transaction { () throws(StoreError) -> [Rejection] in
                // The registrations' school days are locked, and checked for
                // amendments, once per batch and in a few statements, not
                // once per event.
                var days: [Day] = []
                var seen: Set<Day> = []
                for case .registered(let record) in events where seen.insert(Day(school: record.schoolId, date: record.date)).inserted {
                    days.append(Day(school: record.schoolId, date: record.date))
                }
                for chunk in days.chunks(of: database.rowsPerStatement) {
                    try database.lock(chunk.map { SQLStore.dayKey($0.school, $0.date) }, exclusive: false)
                }
                var rejections: [Rejection] = []
                var accessed: [AccessRecord] = []
                // The earliest day each school's accounts changed on, for its weekly lists.
                var changed: [String: String] = [:]
                for day in days { changed[day.school] = min(changed[day.school] ?? day.date, day.date) }
                // Students whose records may have changed, for the rules; of
                // them, those a deletion of this batch touched.
                var students: Set<StudentKey> = []
                var deletedFrom: [StudentKey: String] = [:]
                // For the 교내봉사 schedule.
                var duties = DutyChanges()
                // Students whose 불참 the batch recorded or took back, for their cases.
                var missed: [StudentKey: String] = [:]
                var index = 0
                while index < events.count {
                    switch events[index] {
                    case .accessed(let records):
                        accessed += records
                    case .deleted(let guidanceId, let schoolId, let grade, let deletedBy, let occurredAt):
                        switch try SQLStore.delete(
                            guidanceId: guidanceId, schoolId: schoolId, grade: grade, deletedBy: deletedBy, occurredAt: occurredAt,
                            in: database)
                        {
                        case .failure(let rejected): rejections.append(Rejection(index: index, reason: rejected.reason))
                        case .success(let deleted?):
                            duties.deleted.append(guidanceId)
                            changed[schoolId] = min(changed[schoolId] ?? deleted.date, deleted.date)
                            students.insert(StudentKey(school: schoolId, student: deleted.student))
                            deletedFrom[StudentKey(school: schoolId, student: deleted.student)] = occurredAt
                        case .success(nil): break
                        }
                    case .communityServiceRecorded(let service):
                        if let reason = try SQLStore.record(service, in: database) {
                            rejections.append(Rejection(index: index, reason: reason))
                        } else {
                            duties.recorded.append((service.serviceId, service.schoolId))
                            changed[service.schoolId] = min(changed[service.schoolId] ?? service.date, service.date)
                            if service.outcome == .missed {
                                missed[StudentKey(school: service.schoolId, student: service.studentId)] = service.recordedAt
                            }
                        }
                    case .communityServiceWithdrawn(let serviceId, let schoolId, let grade, let studentId, let by, let at):
                        switch try SQLStore.withdraw(
                            serviceId: serviceId, schoolId: schoolId, grade: grade, studentId: studentId, by: by, at: at, in: database)
                        {
                        case .failure(let rejected): rejections.append(Rejection(index: index, reason: rejected.reason))
                        case .success(let date?):
                            duties.withdrawn.append((serviceId, schoolId))
                            changed[schoolId] = min(changed[schoolId] ?? date, date)
                            missed[StudentKey(school: schoolId, student: studentId)] = at
                        case .success(nil): break
                        }
                    case .sittingAdded(let sitting):
                        let (added, refused) = try SQLStore.add(sitting, in: database)
                        if let refused { rejections.append(Rejection(index: index, reason: refused)) }
                        if added { duties.sittings.append(sitting) }
                    case .caseStep(let step):
                        if let reason = try SQLStore.record(step, in: database) {
                            rejections.append(Rejection(index: index, reason: reason))
                        }
                    case .guardianNotice(let step, let notice):
                        if let reason = try SQLStore.record(step, notice: notice, in: database) {
                            rejections.append(Rejection(index: index, reason: reason))
                        }
                    case .registered:
                        break
                    }
                    guard case .registered = events[index] else {
                        index += 1
                        continue
                    }
                    // A run of registrations with distinct ids is one statement.
                    var run: [(index: Int, record: GuidanceRecord)] = []
                    var ids: Set<String> = []
                    while index < events.count, run.count < database.rowsPerStatement,
                        case .registered(let record) = events[index], ids.insert(record.guidanceId).inserted
                    {
                        run.append((index, record))
                        students.insert(StudentKey(school: record.schoolId, student: record.student.studentId))
                        index += 1
                    }
                    let refused = try SQLStore.register(run, in: database)
                    rejections += refused
                    let out = Set(refused.map(\.index))
                    duties.registered += run.filter { !out.contains($0.index) }.map(\.record)
                }
                for chunk in days.chunks(of: database.rowsPerStatement) {
                    try SQLStore.markAmendments(chunk, in: database)
                }
                try SQLStore.markWeeklyAmendments(changed, in: database)
                try SQLStore.keepDuties(duties, schools: schools, in: database)
                try SQLStore.decideMissedCases(missed, in: database)
                try SQLStore.insert(accessed, in: database)
                crossings = try SQLStore.decideCrossings(
                    of: students, deletedFrom: deletedFrom, rules: rules, at: Timestamp.format(clock()), in: database)
                return rejections
            }
        }
    }

    /// Inserts registrations in one statement, or completes tombstones that
    /// arrived first. A tombstone of another school (a deletion naming an id
    /// that school never registered) does not hold the id: the registration
    /// takes the row, undeleted. Returns why any was kept out.
    private static func register(_ run: [(index: Int, record: GuidanceRecord)], in database: any SQLDatabase) throws(StoreError)
        -> [Rejection]
    {
        var parameters: [SQLValue] = []
        parameters.reserveCapacity(run.count * 14)
        for (_, record) in run {
            parameters += [
                .text(record.guidanceId), .text(record.schoolId), .integer(Int64(record.student.grade)), .text(record.date),
                .integer(Int64(record.student.classNumber)), .integer(Int64(record.student.number)), .text(record.student.studentId),
                .text(record.student.name), .text(record.reason.code), .text(record.reason.label), record.reason.detail.sql,
                .text(record.recordedBy), .text(record.occurredAt), .integer(Int64(record.serviceSessions))
            ]
        }
        let sql = run.count < registerStatements.count ? registerStatements[run.count] : registerStatement(rows: run.count)
        let written = try database.run(sql, parameters)
        // Each row inserted or completed counts once; when some did not, each
        // is compared with what is stored (a row just written matches itself).
        guard written < run.count else { return [] }
        var rejections: [Rejection] = []
        for (index, record) in run {
            if let reason = try conflict(record, in: database) { rejections.append(Rejection(index: index, reason: reason)) }
        }
        return rejections
    }

    /// The upsert of `register` for 0...64 rows, written once rather than
    /// built again for every run of registrations (for SQLite, every event).
    private static let registerStatements = (0...64).map { registerStatement(rows: $0) }

    /// `($1, …, $width), ($width+1, …)`: `rows` rows of numbered parameters.
    static func placeholders(rows: Int, width: Int, extra: String = "") -> String {
        (0..<rows).map { row in "(" + (1...width).map { "$\(row * width + $0)" }.joined(separator: ", ") + extra + ")" }.joined(
            separator: ", ")
    }

    private static func registerStatement(rows count: Int) -> String {
        """
        INSERT INTO guidances (guidance_id, school_id, grade, local_date, class_number, number, student_id, student_name,
                               reason_code, reason_label, reason_detail, recorded_by, occurred_at, service_sessions, registered)
        VALUES \(placeholders(rows: count, width: 14, extra: ", 1"))
        ON CONFLICT (guidance_id) DO UPDATE SET
            grade = excluded.grade, local_date = excluded.local_date,
            class_number = excluded.class_number, number = excluded.number, student_id = excluded.student_id,
            student_name = excluded.student_name, reason_code = excluded.reason_code, reason_label = excluded.reason_label,
            reason_detail = excluded.reason_detail, recorded_by = excluded.recorded_by, occurred_at = excluded.occurred_at,
            service_sessions = excluded.service_sessions, registered = 1,
            deleted = CASE WHEN guidances.school_id = excluded.school_id THEN guidances.deleted ELSE 0 END,
            deleted_by = CASE WHEN guidances.school_id = excluded.school_id THEN guidances.deleted_by END,
            deleted_at = CASE WHEN guidances.school_id = excluded.school_id THEN guidances.deleted_at END,
            school_id = excluded.school_id
        WHERE guidances.registered = 0
        """
    }

    /// For a registration whose id was registered before: a replay or retry
    /// of the same guidance is a no-op (its time and recorder stay the first
    /// ones); anything else is kept out, with the reason.
    private static func conflict(_ record: GuidanceRecord, in database: any SQLDatabase) throws(StoreError) -> String? {
        let rows = try database.query(
            "SELECT school_id, student_id, reason_code, reason_detail FROM guidances WHERE guidance_id = $1", [.text(record.guidanceId)])
        guard let row = rows.first else { return nil }
        if row[0].string != record.schoolId {
            return "foreign: guidance \(record.guidanceId) belongs to another school"
        }
        if row[1].string != record.student.studentId || row[2].string != record.reason.code || row[3].string != record.reason.detail {
            return "conflict: guidance \(record.guidanceId) is already registered for another student or reason"
        }
        return nil
    }

    /// Applies a deletion; returns why it was kept out, or the day and
    /// student of the guidance it deleted (nil when it is not registered yet).
    private static func delete(
        guidanceId: String, schoolId: String, grade: Int, deletedBy: String, occurredAt: String, in database: any SQLDatabase
    ) throws(StoreError) -> Result<(date: String, student: String)?, Rejected> {
        let written = try database.run(
            """
            INSERT INTO guidances (guidance_id, school_id, grade, deleted, deleted_by, deleted_at)
            VALUES ($1, $2, $3, 1, $4, $5)
            ON CONFLICT (guidance_id) DO UPDATE SET deleted = 1, deleted_by = excluded.deleted_by, deleted_at = excluded.deleted_at
            WHERE guidances.school_id = excluded.school_id
            """, [.text(guidanceId), .text(schoolId), .integer(Int64(grade)), .text(deletedBy), .text(occurredAt)])
        guard written > 0 else { return .failure(Rejected(reason: "foreign: guidance \(guidanceId) belongs to another school")) }
        let rows = try database.query(
            "SELECT local_date, student_id FROM guidances WHERE guidance_id = $1 AND registered = 1", [.text(guidanceId)])
        guard let row = rows.first, let date = row[0].string else { return .success(nil) }
        try database.lock([dayKey(schoolId, date)], exclusive: false)
        try markAmendments([Day(school: schoolId, date: date)], in: database)
        return .success((date, row[1].string ?? ""))
    }

    private struct Day: Hashable {
        let school: String
        let date: String
    }

    /// The lock of a school's day. Event writes hold it shared and digest runs
    /// exclusively, so a change either is seen by a run or, committed after
    /// it, finds the run and marks an amendment; never neither.
    private static func dayKey(_ school: String, _ date: String) -> String { "day/\(school)/\(date)" }

    /// A change to a date whose digests went out waits for the amendment tick.
    private static func markAmendments(_ days: [Day], in database: any SQLDatabase) throws(StoreError) {
        let pairs = (0..<days.count).map { "(school_id = $\($0 * 2 + 1) AND date = $\($0 * 2 + 2))" }.joined(separator: " OR ")
        try database.run(
            """
            INSERT INTO pending_amendments (school_id, date)
            SELECT school_id, date FROM digest_runs WHERE \(pairs)
            ON CONFLICT (school_id, date) DO NOTHING
            """, days.flatMap { [SQLValue.text($0.school), .text($0.date)] })
    }

    static let recordColumns = """
        g.guidance_id, g.school_id, g.local_date, g.student_id, g.grade, g.class_number, g.number, g.student_name,
        g.reason_code, g.reason_label, g.reason_detail, g.occurred_at, g.recorded_by, g.service_sessions
        """

    static func record(_ row: ArraySlice<SQLValue>) -> GuidanceRecord {
        let values = Array(row)
        return GuidanceRecord(
            guidanceId: values[0].string ?? "", schoolId: values[1].string ?? "", date: values[2].string ?? "",
            student: StudentRef(
                studentId: values[3].string ?? "", grade: values[4].int ?? 0, classNumber: values[5].int ?? 0,
                number: values[6].int ?? 0, name: values[7].string ?? ""),
            reason: ReasonRef(code: values[8].string ?? "", label: values[9].string ?? "", detail: values[10].string),
            occurredAt: values[11].string ?? "", recordedBy: values[12].string ?? "", serviceSessions: values[13].int ?? 1)
    }

    /// Active guidances of a school-local date, ordered by grade, class,
    /// number and time.
    package func guidances(school: String, date: String, grade: Int?, classNumber: Int?) throws(StoreError) -> [GuidanceRecord] {
        try guidances(school: school, from: date, to: date, grade: grade, classNumber: classNumber)
    }

    /// Active guidances of the school-local days `from` through `to`, in the
    /// same order (a student's of several days by time).
    package func guidances(school: String, from: String, to: String, grade: Int?, classNumber: Int?) throws(StoreError)
        -> [GuidanceRecord]
    {
        let statement = SQLStore.activeGuidancesStatement(school: school, from: from, to: to, grade: grade, classNumber: classNumber)
        return try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(statement.sql, statement.parameters) { SQLStore.record($0[...]) }
        }
    }

    private static func activeGuidancesStatement(school: String, from: String, to: String, grade: Int?, classNumber: Int?)
        -> SQLStatement
    {
        SQLStatement(
            """
            SELECT \(recordColumns) FROM guidances g
            WHERE g.school_id = $1 AND g.local_date >= $2 AND g.local_date <= $5 AND g.registered = 1 AND g.deleted = 0
              AND (CAST($3 AS INTEGER) IS NULL OR g.grade = CAST($3 AS INTEGER))
              AND (CAST($4 AS INTEGER) IS NULL OR g.class_number = CAST($4 AS INTEGER))
            ORDER BY g.grade, g.class_number, g.number, g.occurred_at, g.guidance_id
            """, [.text(school), .text(from), grade.sql, classNumber.sql, .text(to)])
    }

    /// Each student's `Frequency` as of `date`, by student id, for the
    /// students seated in the grade and class given (nil: all); students
    /// without an active guidance in the window are absent.
    package func frequencies(school: String, date: String, grade: Int?, classNumber: Int?) throws(StoreError) -> [String: Frequency] {
        guard let statement = SQLStore.frequenciesStatement(school: school, date: date, grade: grade, classNumber: classNumber) else {
            return [:]
        }
        return try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            var frequencies: [String: Frequency] = [:]
            try database.forEachRow(statement.sql, statement.parameters) { row in SQLStore.addFrequency(row, to: &frequencies) }
            return frequencies
        }
    }

    /// Each student's active guidances counted by day, over `from`'s 30-day
    /// window through `to`: what `Frequency(asOf:byDay:)` needs for every row
    /// of a week's or month's list, in one query of small rows.
    package func guidanceDays(school: String, from: String, to: String, grade: Int?, classNumber: Int?) throws(StoreError) -> [String: [(
        date: String, count: Int
    )]] {
        guard let (_, start) = Frequency.window(of: from) else { return [:] }
        return try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            var days: [String: [(date: String, count: Int)]] = [:]
            try database.forEachRow(
                """
                SELECT g.student_id, g.local_date, COUNT(*) FROM guidances g
                WHERE g.school_id = $1 AND g.local_date >= $2 AND g.local_date <= $3 AND g.registered = 1 AND g.deleted = 0
                  AND (CAST($4 AS INTEGER) IS NULL OR g.grade = CAST($4 AS INTEGER))
                  AND (CAST($5 AS INTEGER) IS NULL OR g.class_number = CAST($5 AS INTEGER))
                GROUP BY g.student_id, g.local_date
                """, [.text(school), .text(start), .text(to), grade.sql, classNumber.sql]
            ) { row in
                days[row[0].string ?? "", default: []].append((row[1].string ?? "", row[2].int ?? 0))
            }
            return days
        }
    }

    /// Counts by student over the days of `Frequency.window`, through the
    /// day index (a month of a school's days, not its whole history).
    private static func frequenciesStatement(school: String, date: String, grade: Int?, classNumber: Int?) -> SQLStatement? {
        guard let (last7Start, last30Start) = Frequency.window(of: date) else { return nil }
        return SQLStatement(
            """
            SELECT g.student_id,
                   SUM(CASE WHEN g.local_date >= $3 THEN 1 ELSE 0 END),
                   SUM(CASE WHEN g.local_date >= $4 THEN 1 ELSE 0 END)
            FROM guidances g
            WHERE g.school_id = $1 AND g.local_date >= $2 AND g.local_date <= $5 AND g.registered = 1 AND g.deleted = 0
              AND (CAST($6 AS INTEGER) IS NULL OR g.grade = CAST($6 AS INTEGER))
              AND (CAST($7 AS INTEGER) IS NULL OR g.class_number = CAST($7 AS INTEGER))
            GROUP BY g.student_id
            """, [.text(school), .text(last30Start), .text(last7Start), .text(last30Start), .text(date), grade.sql, classNumber.sql])
    }

    private static func addFrequency(_ row: [SQLValue], to frequencies: inout [String: Frequency]) {
        guard let student = row[0].string else { return }
        frequencies[student] = Frequency(last7Days: row[1].int ?? 0, last30Days: row[2].int ?? 0)
    }

    /// For each run, all or nothing: reads the delivery state of its school
    /// and date, lets `plan` turn it into new digests, writes them with what
    /// they reported and one pending delivery per target `targets` names
    /// (the outbox), and records the run. The runs share one commit (one
    /// disk flush for many schools); a run that fails on its own leaves the
    /// others written. Returns each run's digests (their entries and text
    /// left out: the inbox reads them) or its error, in order;
    /// throws, with none written, when the database is busy or lost.
    package func writeDigests(_ runs: [DeliveryRun]) throws(StoreError) -> [Result<[Digest], StoreError>] {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            try database.transaction { () throws(StoreError) -> [Result<[Digest], StoreError>] in
                // Every run's state first, each under its day lock (one
                // replica runs a day at a time; the next sees its digests).
                var states: [(DeliveryRun, Result<DeliveryState, StoreError>)] = []
                for run in runs {
                    states.append(
                        (
                            run,
                            try SQLStore.ownFailure { () throws(StoreError) in
                                try SQLStore.deliveryState(of: run, in: database)
                            }
                        ))
                }
                // Then the digests are rendered on every core, most of a
                // run's CPU, while this thread writes them in order: each
                // run's up to `renderedAhead` entries; a big school's lists
                // past that are made, rendered and written here one at a
                // time. A state (a school's day of records) goes once its
                // last list is made, and a list's entries once written as
                // JSON: the day is not held as records, entries and JSON at once.
                var results: [Result<[Digest], StoreError>] = []
                try (consume states).forEach(transformedBy: { run, state in
                    (
                        run,
                        state.map { state in
                            var drafts = run.drafts(state)[...]
                            var rendered: [RenderedDigest] = []
                            var room = SQLStore.renderedAhead
                            while room > 0, let draft = drafts.popFirst() {
                                guard let digest = draft() else { continue }
                                room -= digest.entries.count
                                rendered.append(RenderedDigest(digest, of: run))
                            }
                            return (rendered, Array(drafts))
                        }
                    )
                }) { (run: DeliveryRun, made: Result<([RenderedDigest], [DeliveryRun.Draft]), StoreError>) throws(StoreError) in
                    results.append(
                        try SQLStore.ownFailure { () throws(StoreError) in
                            let (rendered, drafts) = try made.get()
                            return try SQLStore.write(run, rendered, then: drafts, in: database)
                        })
                }
                return results
            }
        }
    }

    /// `body`'s value, or its own failure (another replica wrote the same
    /// revision, say), which its savepoint has rolled back alone. A busy or
    /// lost database is thrown: it fails every run of the transaction.
    private static func ownFailure<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> Result<T, StoreError> {
        do throws(StoreError) {
            return .success(try body())
        } catch  where !error.isRetriable {
            return .failure(error)
        }
    }

    /// What a school's recipients have been told about a date, and what is
    /// active now: the day's lock and two queries, one pipeline in a
    /// savepoint. Each recipient's revisions of the day are folded in order:
    /// an entry added stands until a later revision removes it.
    private static func deliveryState(of run: DeliveryRun, in database: any SQLDatabase) throws(StoreError) -> DeliveryState {
        let (school, date) = (run.school, run.date)
        // The day's count first: its records' array is made at that size
        // (grown by doubling, a school's 40,000 took room for 65,536: 5 MB
        // of the run's peak).
        var statements = [
            SQLStatement(
                "SELECT COUNT(*) FROM guidances WHERE school_id = $1 AND local_date = $2 AND registered = 1 AND deleted = 0",
                [.text(school), .text(date)]),
            activeGuidancesStatement(school: school, from: date, to: date, grade: nil, classNumber: nil),
            SQLStatement(SQLStore.toldOfDay, [.text(school), .text(date)])
        ]
        // The day's students' accounts; on the week's first school day the school's, for the weekly lists.
        statements.append(accountsStatement(school: school, asOf: date, studentsOf: run.weekly ? nil : date))
        if let frequencies = frequenciesStatement(school: school, date: date, grade: nil, classNumber: nil) {
            statements.append(frequencies)
        }
        // A weekly list counts every earlier day: its run holds the schools'
        // service lock too (after the day's, as event batches take them).
        let keys = [SQLStore.dayKey(school, date)] + (run.weekly ? [communityServiceKey(school)] : [])
        var locks = [database.lockStatement(keys, exclusive: true)]
        // The overdue sessions: a batch that serves one late after this
        // commit finds the run and marks an amendment (`markDutyAmendments`).
        if run.overdueSince != nil { locks.append(database.lockStatement([dutiesKey(school)], exclusive: false)) }
        let first = locks.compactMap { $0 }.count
        statements.insert(contentsOf: locks.compactMap { $0 }, at: 0)
        var overdue: [(duty: CommunityServiceDuty, guidance: GuidanceRecord)] = []
        let overdueAt = statements.count - first
        if let since = run.overdueSince { statements.append(overdueStatement(school: school, since: since, before: date)) }
        var active: [GuidanceRecord] = []
        var told: [Recipient: Told] = [:]
        var activeIDs: Set<String>?
        var revisions: [Recipient: Int] = [:]
        var frequencies: [String: Frequency] = [:]
        var accounts: [String: CommunityServiceAccount] = [:]
        try database.savepoint(statements) { (index: Int, row: [SQLValue]) throws(StoreError) in
            switch index - first {
            case 0:
                active.reserveCapacity(row.first?.int ?? 0)
            case 1:
                active.append(SQLStore.record(row[...]))
            case 2:
                let recipient = Recipient(
                    teacherId: row[0].string ?? "", scope: DigestScope(rawValue: row[1].string ?? "") ?? .class,
                    grade: row[2].int ?? 0, classNumber: row[3].int)
                revisions[recipient] = max(revisions[recipient] ?? 0, row[4].int ?? 0)
                // The active guidances come first: a day list's told entry that one of them makes again is not kept.
                let active = activeIDs ?? Set(active.map(\.guidanceId))
                activeIDs = active
                var folded = told.removeValue(forKey: recipient) ?? Told()
                do throws(FieldError) {
                    try DigestColumns.forEachEntry(in: row[5].string ?? "[]") { entry in
                        folded.fold(entry, scope: recipient.scope) { active.contains($0) }
                    }
                } catch {
                    throw StoreError(.failed, "a digest of \(recipient.teacherId) for \(school) \(date) is unreadable: \(error)")
                }
                told[recipient] = folded
            case 3:
                let account = SQLStore.account(row)
                accounts[account.studentId] = account
            case overdueAt:
                overdue.append(SQLStore.overdueDuty(row))
            case 4:
                SQLStore.addFrequency(row, to: &frequencies)
            default:
                break
            }
        }
        var state = DeliveryState(
            active: active, reported: told, revisions: revisions, frequencies: frequencies,
            accounts: accounts)
        state.overdue = overdue
        return state
    }

    /// Every revision of a school's date, oldest first. Found through
    /// `digests_by_day`, not by reading every digest ever written (with a
    /// school year's 1,064,000 digests, 156 ms a school without it, 0.1 ms with).
    static let toldOfDay = """
        SELECT teacher_id, scope, grade, class_number, revision, entries FROM digests
        WHERE school_id = $1 AND date = $2 AND scope <> 'rule' ORDER BY revision
        """

    /// Version 16: `toldOfDay`'s rows in its order, without the day's rule
    /// notices. Sorting them made SQLite hold every list of the day, entries
    /// and all, in its sorter while the run read them (one school of 40,000
    /// records: 26 MB of entries, most of the notifier's peak memory).
    static let toldOfDayOrder = """
        CREATE INDEX IF NOT EXISTS digests_told_of_day ON digests(school_id, date, revision) WHERE scope <> 'rule';
        """

    /// A digest with its entries and counts in their columns' JSON and the
    /// targets to deliver it to: all a run's writes need.
    private struct RenderedDigest: Sendable {
        /// Without its entries, which `entries` holds as JSON, and its text:
        /// what a run returns needs neither (the inbox and the outbox read them).
        let digest: Digest
        let text: String
        let entries: String
        let counts: String
        let targets: [DeliveryTarget]

        init(_ digest: Digest, of run: DeliveryRun) {
            (entries, counts, targets) = (DigestColumns.entries(digest.entries), DigestColumns.counts(digest.counts), run.targets(digest))
            var written = digest
            (written.entries, written.text, text) = ([], "", digest.text)
            self.digest = written
        }
    }

    /// Entries of a run's lists rendered ahead, beside the other runs': a
    /// big school's day (80,000 entries, their JSON 25 MB) rendered at once
    /// was most of the notifier's peak memory.
    static let renderedAhead = 4_096

    /// A run's digests and their deliveries, each kind in multi-row
    /// statements, all of them (with the run record) sent as one pipeline in
    /// the run's savepoint: on PostgreSQL a school's run is one round trip,
    /// not three per digest (the district run's 5,706 digests were about
    /// 19,000 of them). `drafts`, a big school's lists past those rendered
    /// ahead, are made and written after them, one at a time, in the same
    /// savepoint.
    private static func write(
        _ run: DeliveryRun, _ rendered: [RenderedDigest], then drafts: [DeliveryRun.Draft], in database: any SQLDatabase
    ) throws(StoreError) -> [Digest] {
        guard !drafts.isEmpty else {
            try database.savepoint(statements(rendered, in: database) + record(run, digests: rendered.count))
            return rendered.map(\.digest)
        }
        return try database.savepoint { () throws(StoreError) -> [Digest] in
            var written = rendered.map(\.digest)
            try database.pipeline(statements(rendered, in: database)) { _, _ in }
            for draft in drafts {
                guard let digest = draft() else { continue }
                let one = RenderedDigest(digest, of: run)
                try database.pipeline(statements([one], in: database)) { _, _ in }
                written.append(one.digest)
            }
            try database.pipeline(record(run, digests: written.count)) { _, _ in }
            return written
        }
    }

    /// The digests' rows and their deliveries' (the outbox).
    private static func statements(_ digests: [RenderedDigest], in database: any SQLDatabase) -> [SQLStatement] {
        database.inserts(
            "INSERT INTO digests (digest_id, teacher_id, school_id, date, scope, grade, class_number, revision, created_at, read, subject, text, entries, counts) VALUES ",
            rows: digests.map { rendered in
                let digest = rendered.digest
                return [
                    .text(digest.digestId), .text(digest.teacherId), .text(digest.schoolId), .text(digest.date),
                    .text(digest.scope.rawValue),
                    .integer(Int64(digest.grade)), digest.classNumber.sql, .integer(Int64(digest.revision)), .text(digest.createdAt),
                    .integer(0), .text(digest.subject), .text(rendered.text), .text(rendered.entries), .text(rendered.counts)
                ]
            }, perStatement: database.rowsPerStatement)
            + SQLStore.enqueue(digests.map { ($0.digest, $0.targets) }, in: database)
    }

    /// The run's record, unless a teacher's own earlier list leaves the
    /// day's run to the school's time.
    private static func record(_ run: DeliveryRun, digests: Int) -> [SQLStatement] {
        guard run.recordsRun else { return [] }
        return [
            SQLStatement(
                """
                INSERT INTO digest_runs (school_id, date, completed_at, digests, weekly) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (school_id, date) DO UPDATE SET completed_at = excluded.completed_at, digests = digest_runs.digests + excluded.digests
                """,
                [.text(run.school), .text(run.date), .text(run.completedAt), .integer(Int64(digests)), .integer(run.weekly ? 1 : 0)]),
            SQLStatement("DELETE FROM pending_amendments WHERE school_id = $1 AND date = $2", [.text(run.school), .text(run.date)])
        ]
    }

    /// Whether a digest run for `school` and `date` completed.
    package func runCompleted(school: String, date: String) throws(StoreError) -> Bool {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try !database.query("SELECT 1 FROM digest_runs WHERE school_id = $1 AND date = $2", [.text(school), .text(date)]).isEmpty
        }
    }

    /// School and date pairs changed after their digests went out.
    package func pendingAmendments() throws(StoreError) -> [(school: String, date: String)] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query("SELECT school_id, date FROM pending_amendments ORDER BY date, school_id", []).map {
                (school: $0[0].string ?? "", date: $0[1].string ?? "")
            }
        }
    }

    /// Whether the store answers.
    package func ping() throws(StoreError) {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.probe()
        }
    }
}

extension SQLStore {
    /// One run alone: its digests, or its error.
    package func writeDigests(
        school: String, date: String, completedAt: String, plan: @escaping @Sendable (DeliveryState) -> [Digest],
        targets: @escaping @Sendable (Digest) -> [DeliveryTarget]
    ) throws(StoreError) -> [Digest] {
        try writeDigests([DeliveryRun(school: school, date: date, completedAt: completedAt, plan: plan, targets: targets)])[0].get()
    }
}
