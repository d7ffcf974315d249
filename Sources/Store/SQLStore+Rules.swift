import Common
import Guidance

/// The school's rules that flag repeats (`rules.csv`): where an event batch
/// is applied, each student it changed is counted against the rules and
/// each crossing kept, once, in `rule_crossings`; then their teachers are
/// told (`tellCrossings`), from any replica, once.
extension SQLStore {
    /// Version 11: the crossings. A crossing is the `ordinal`-th time a
    /// student crossed a rule (`SchoolRule.crossings`); `active` says
    /// whether the records still make it one, `told` what its teachers
    /// were last told, so a change not yet told is `active <> told`.
    static let ruleCrossings = """
        CREATE TABLE IF NOT EXISTS rule_crossings (
            school_id TEXT NOT NULL,
            student_id TEXT NOT NULL,
            rule_key TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            date TEXT NOT NULL,
            guidance_ids TEXT NOT NULL,
            label TEXT NOT NULL,
            notify TEXT NOT NULL,
            active INTEGER NOT NULL,
            told INTEGER NOT NULL DEFAULT 0,
            changed_at TEXT NOT NULL,
            PRIMARY KEY (school_id, student_id, rule_key, ordinal)
        );
        CREATE INDEX IF NOT EXISTS rule_crossings_untold ON rule_crossings(school_id) WHERE active <> told;
        """

    /// Version 15: what each teacher was last told of a student and rule
    /// (that it stands, or no longer does), on which day and in which
    /// notice: a later crossing of the same day saying the same is merged
    /// into that notice, not told again.
    static let ruleNoticesToday = """
        CREATE TABLE IF NOT EXISTS rule_notices_told (
            school_id TEXT NOT NULL,
            student_id TEXT NOT NULL,
            rule_key TEXT NOT NULL,
            teacher_id TEXT NOT NULL,
            day TEXT NOT NULL,
            active INTEGER NOT NULL,
            digest_id TEXT NOT NULL,
            PRIMARY KEY (school_id, student_id, rule_key, teacher_id)
        );
        """

    /// A student of a school whose records an event batch changed.
    struct StudentKey: Hashable, Comparable {
        let school: String
        let student: String

        static func < (a: StudentKey, b: StudentKey) -> Bool { (a.school, a.student) < (b.school, b.student) }
        var lockKey: String { "rules/\(school)/\(student)" }
    }

    /// Counts each student's active records against their school's rules
    /// and brings `rule_crossings` to what the records say: a new crossing
    /// active, one the records no longer make withdrawn (inactive). Each
    /// student's lock is held, so events of one student applied by two
    /// replicas at once (registrations and deletions are different topics)
    /// are counted one after the other. `deletedFrom`: the students whose
    /// record the batch deleted. Returns how many crossings changed.
    static func decideCrossings(
        of students: Set<StudentKey>, deletedFrom: [StudentKey: String], rules: [String: [SchoolRule]], at time: String,
        in database: any SQLDatabase
    ) throws(StoreError) -> Int {
        let students = students.filter { !(rules[$0.school] ?? []).isEmpty }.sorted()
        guard !students.isEmpty else { return 0 }
        // Sorted, so that two batches take their common keys in one order.
        for chunk in students.chunks(of: database.rowsPerStatement) { try database.lock(chunk.map(\.lockKey), exclusive: true) }
        let now = SQLValue.text(time)
        var changed = 0
        for (school, keys) in Dictionary(grouping: students, by: \.school).sorted(by: { $0.key < $1.key }) {
            let schoolRules = rules[school] ?? []
            let fewest = schoolRules.map(\.count).min() ?? Int.max
            // The records of 500 students a read (a replay's batch touches most of a school).
            var records: [String: [SchoolRule.Counted]] = [:]
            for (among, parameters) in SQLStore.students(keys.map(\.student), of: school) {
                try database.forEachRow(
                    """
                    SELECT student_id, guidance_id, local_date, reason_code, occurred_at FROM guidances
                    WHERE \(among) AND registered = 1 AND deleted = 0 ORDER BY student_id, local_date, occurred_at, guidance_id
                    """, parameters
                ) { row in
                    records[row[0].string ?? "", default: []].append(
                        SchoolRule.Counted(
                            guidanceId: row[1].string ?? "", date: row[2].string ?? "", reasonCode: row[3].string ?? "",
                            occurredAt: row[4].string ?? ""))
                }
            }
            // Fewer records than any rule counts cross nothing, and stood
            // crossed nowhere unless this batch deleted one of their records
            // (an earlier deletion withdrew what it undid then): most
            // students of a batch end here.
            let candidates = keys.filter { (records[$0.student]?.count ?? 0) >= fewest || deletedFrom[$0] != nil }.map(\.student)
            // Each candidate's stored crossings: rule key → ordinal → (active, records).
            var stored: [String: [String: [Int: (active: Bool, ids: String)]]] = [:]
            for (among, parameters) in SQLStore.students(candidates, of: school) {
                try database.forEachRow(
                    "SELECT student_id, rule_key, ordinal, active, guidance_ids FROM rule_crossings WHERE \(among)", parameters
                ) { row in
                    stored[row[0].string ?? "", default: [:]][row[1].string ?? "", default: [:]][row[2].int ?? 0] = (
                        row[3].int == 1, row[4].string ?? ""
                    )
                }
            }
            for student in candidates {
                for rule in schoolRules {
                    changed += try SQLStore.settle(
                        rule, crossings: rule.crossings(of: records[student] ?? []), stored: stored[student]?[rule.key] ?? [:],
                        school: school, student: student, now: now, deletedAt: deletedFrom[StudentKey(school: school, student: student)],
                        in: database)
                }
            }
        }
        return changed
    }

    /// `school_id = $1 AND student_id IN (…)` for each 500 of `students`, with its parameters.
    private static func students(_ students: [String], of school: String) -> [(sql: String, parameters: [SQLValue])] {
        students.chunks(of: 500).map { chunk in
            (
                "school_id = $1 AND student_id IN (" + (2...(chunk.count + 1)).map { "$\($0)" }.joined(separator: ", ") + ")",
                [SQLValue.text(school)] + chunk.map(SQLValue.text)
            )
        }
    }

    /// Writes what differs between a student's crossings of `rule` and what
    /// is `stored` of them (ordinal → active, records); how many crossings
    /// became active or inactive.
    private static func settle(
        _ rule: SchoolRule, crossings: [[SchoolRule.Counted]], stored: [Int: (active: Bool, ids: String)], school: String,
        student: String, now: SQLValue, deletedAt: String?, in database: any SQLDatabase
    ) throws(StoreError) -> Int {
        var changed = 0
        let key: [SQLValue] = [.text(school), .text(student), .text(rule.key)]
        for (index, counted) in crossings.enumerated() {
            let ids = counted.map(\.guidanceId).joined(separator: " ")
            let was = stored[index + 1]
            // A crossing that stands with other records is the same
            // crossing: its records change, its teachers hear nothing new.
            guard was?.active != true || was?.ids != ids else { continue }
            if was?.active != true { changed += 1 }
            try database.run(
                """
                INSERT INTO rule_crossings (school_id, student_id, rule_key, ordinal, date, guidance_ids, label, notify, active, changed_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9)
                ON CONFLICT (school_id, student_id, rule_key, ordinal) DO UPDATE SET
                    date = excluded.date, guidance_ids = excluded.guidance_ids, label = excluded.label, notify = excluded.notify,
                    changed_at = CASE WHEN rule_crossings.active = 1 THEN rule_crossings.changed_at ELSE excluded.changed_at END,
                    active = 1
                """,
                key + [
                    .integer(Int64(index + 1)), .text(counted.last?.date ?? ""), .text(ids), .text(rule.label), .text(rule.notifyText), now
                ])
            if was?.active != true {
                try openCase(
                    crossing: rule, ordinal: index + 1, guidanceIds: ids, school: school, student: student,
                    at: counted.map(\.occurredAt).max() ?? now.string ?? "", in: database)
            }
        }
        for (ordinal, was) in stored where was.active && ordinal > crossings.count {
            changed += try database.run(
                """
                UPDATE rule_crossings SET active = 0, changed_at = $5
                WHERE school_id = $1 AND student_id = $2 AND rule_key = $3 AND ordinal = $4 AND active = 1
                """, key + [.integer(Int64(ordinal)), now])
            try withdrawCase(
                rule: rule, ordinal: ordinal, school: school, student: student, at: deletedAt ?? now.string ?? "", in: database)
        }
        return changed
    }

    /// The columns `crossing` reads.
    private static let crossingColumns =
        "school_id, student_id, rule_key, ordinal, date, guidance_ids, label, notify, active, told, changed_at"

    /// The crossing of `row`; nil for a rule key this release cannot read.
    private static func crossing(_ row: [SQLValue], records: [String: GuidanceRecord]) -> RuleCrossing? {
        let ids = (row[5].string ?? "").split(separator: " ").map(String.init)
        let school = row[0].string ?? ""
        guard
            let rule = SchoolRule(schoolID: school, key: row[2].string ?? "", notifyText: row[7].string ?? "", label: row[6].string ?? "")
        else { return nil }
        return RuleCrossing(
            schoolId: school, studentId: row[1].string ?? "", rule: rule, ordinal: row[3].int ?? 0, date: row[4].string ?? "",
            active: row[8].int == 1, told: row[9].int == 1, changedAt: row[10].string ?? "", records: ids.compactMap { records[$0] })
    }

    /// The stored records of `ids`, deleted or not, by id.
    private static func records(_ ids: [String], in database: any SQLDatabase) throws(StoreError) -> [String: GuidanceRecord] {
        var records: [String: GuidanceRecord] = [:]
        for chunk in ids.chunks(of: 500) {
            let marks = (1...chunk.count).map { "$\($0)" }.joined(separator: ", ")
            try database.forEachRow(
                "SELECT \(recordColumns) FROM guidances g WHERE g.registered = 1 AND g.guidance_id IN (\(marks))", chunk.map { .text($0) }
            ) { row in
                let record = SQLStore.record(row[...])
                records[record.guidanceId] = record
            }
        }
        return records
    }

    /// The schools with a crossing whose change its teachers have not been
    /// told: a reader's look, which leaves the writer alone when there is none.
    package func untoldSchools() throws(StoreError) -> [String] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query("SELECT DISTINCT school_id FROM rule_crossings WHERE active <> told ORDER BY school_id", []) {
                $0[0].string ?? ""
            }
        }
    }

    /// Tells the teachers of every crossing of `schools` whose change they
    /// have not been told: `notices` words each one for its teachers (none:
    /// nobody is told, a crossing older than its rule's window, say), and
    /// each notice is written to the teacher's inbox, with deliveries to
    /// `targets`, and the crossing marked told, in one transaction under its
    /// school's lock: two replicas tell it once. A notice is a digest of
    /// scope `rule` whose revision counts the teacher's notices of that
    /// day. A teacher hears of a student and rule at most once a school day
    /// (`today`) that it stands, and once that it no longer does: a later
    /// crossing of the same day (a flood of back-dated records crosses the
    /// rule again and again) is merged into the day's notice, which shows its
    /// newest words as unread again, without a message of its own; a
    /// crossing withdrawn while another of the rule stands tells nothing.
    /// Returns the notices written.
    package func tellCrossings(
        schools: [String], createdAt: String, today: (_ school: String) -> String, notices: (RuleCrossing) -> [RuleNotice],
        targets: (Digest, RuleCrossing) -> [DeliveryTarget]
    ) throws(StoreError) -> [Digest] {
        let schools = Array(Set(schools)).sorted()
        guard !schools.isEmpty else { return [] }
        return try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) -> [Digest] in
            try database.transaction { () throws(StoreError) -> [Digest] in
                // Each school's lock alone, in order (`lock` takes one exclusive key at a time).
                for school in schools { try database.lock(["notices/\(school)"], exclusive: true) }
                // Read under the locks: another replica may have told some meanwhile.
                let rows = try database.query(
                    """
                    SELECT \(SQLStore.crossingColumns) FROM rule_crossings
                    WHERE active <> told AND school_id IN (\((1...schools.count).map { "$\($0)" }.joined(separator: ", ")))
                    ORDER BY school_id, changed_at, student_id, rule_key, ordinal
                    """, schools.map(SQLValue.text))
                let records = try SQLStore.records(
                    Array(Set(rows.flatMap { ($0[5].string ?? "").split(separator: " ").map(String.init) })), in: database)
                // What each teacher was last told of each student and rule of these
                // rows (whether it stands, on which day, in which notice), and
                // which still stand by any of their crossings.
                var told: [String: (active: Bool, day: String, digest: String)] = [:]
                var standing: Set<String> = []
                for (school, students) in Dictionary(grouping: rows, by: { $0[0].string ?? "" }).mapValues({ $0.map { $0[1].string ?? "" } }
                ) {
                    for (among, parameters) in SQLStore.students(Array(Set(students)).sorted(), of: school) {
                        try database.forEachRow(
                            "SELECT student_id, rule_key, teacher_id, active, day, digest_id FROM rule_notices_told WHERE \(among)",
                            parameters
                        ) { row in
                            let key = [school, row[0].string ?? "", row[1].string ?? "", row[2].string ?? ""].joined(separator: "\u{1}")
                            told[key] = (row[3].int == 1, row[4].string ?? "", row[5].string ?? "")
                        }
                        try database.forEachRow(
                            "SELECT DISTINCT student_id, rule_key FROM rule_crossings WHERE \(among) AND active = 1", parameters
                        ) { row in
                            standing.insert([school, row[0].string ?? "", row[1].string ?? ""].joined(separator: "\u{1}"))
                        }
                    }
                }
                var digests: [(digest: Digest, targets: [DeliveryTarget])] = []
                var merged: [String: RuleNotice] = [:]
                var revisions: [String: Int] = [:]
                for row in rows {
                    guard let crossing = SQLStore.crossing(row, records: records) else { continue }
                    let rule = [crossing.schoolId, crossing.studentId, crossing.ruleKey].joined(separator: "\u{1}")
                    // A crossing withdrawn while another of the rule still stands changes nothing the teachers know.
                    if !crossing.active && standing.contains(rule) {
                        try SQLStore.markTold(crossing, in: database)
                        continue
                    }
                    let today = today(crossing.schoolId)
                    for notice in notices(crossing) {
                        let key = rule + "\u{1}" + notice.teacherId
                        // Told the same today: this one is merged into that notice.
                        if let earlier = told[key], earlier.active == crossing.active, earlier.day == today {
                            if let index = digests.firstIndex(where: { $0.digest.digestId == earlier.digest }) {
                                digests[index].digest = digests[index].digest.replacing(with: notice)
                            } else {
                                merged[earlier.digest] = notice
                            }
                            continue
                        }
                        let day = "\(notice.teacherId)/\(crossing.date)"
                        let revision: Int
                        if let last = revisions[day] {
                            revision = last + 1
                        } else {
                            revision =
                                1
                                + (try database.query(
                                    "SELECT MAX(revision) FROM digests WHERE teacher_id = $1 AND school_id = $2 AND date = $3 AND scope = 'rule'",
                                    [.text(notice.teacherId), .text(crossing.schoolId), .text(crossing.date)]
                                ).first?.first?.int ?? 0)
                        }
                        revisions[day] = revision
                        let recipient = Recipient(
                            teacherId: notice.teacherId, scope: .rule, grade: notice.grade, classNumber: notice.classNumber)
                        let digest = Digest(
                            digestId: Digest.id(school: crossing.schoolId, date: crossing.date, recipient: recipient, revision: revision),
                            teacherId: notice.teacherId, schoolId: crossing.schoolId, date: crossing.date, scope: .rule,
                            grade: notice.grade,
                            classNumber: notice.classNumber, revision: revision, createdAt: createdAt, read: false, subject: notice.subject,
                            text: notice.text, entries: notice.entries, counts: notice.counts)
                        digests.append((digest, targets(digest, crossing)))
                        told[key] = (crossing.active, today, digest.digestId)
                        try database.run(
                            """
                            INSERT INTO rule_notices_told (school_id, student_id, rule_key, teacher_id, day, active, digest_id)
                            VALUES ($1, $2, $3, $4, $5, $6, $7)
                            ON CONFLICT (school_id, student_id, rule_key, teacher_id) DO UPDATE SET
                                day = excluded.day, active = excluded.active, digest_id = excluded.digest_id
                            """,
                            [
                                .text(crossing.schoolId), .text(crossing.studentId), .text(crossing.ruleKey), .text(notice.teacherId),
                                .text(today), .integer(crossing.active ? 1 : 0), .text(digest.digestId)
                            ])
                    }
                    try SQLStore.markTold(crossing, in: database)
                }
                // The notices' rows a statement's worth at a time: a flood of
                // crossings (a day of back-dated records) made thousands of
                // notices, and every one's entries as JSON at once was the
                // notifier's peak (heaptrack, `scripts/memory-day`).
                for chunk in digests.chunks(of: database.rowsPerStatement) {
                    let rows = chunk.map { digest, _ -> [SQLValue] in
                        [
                            .text(digest.digestId), .text(digest.teacherId), .text(digest.schoolId), .text(digest.date),
                            .text(digest.scope.rawValue), .integer(Int64(digest.grade)), digest.classNumber.sql,
                            .integer(Int64(digest.revision)), .text(digest.createdAt), .integer(0), .text(digest.subject),
                            .text(digest.text),
                            .text(DigestColumns.entries(digest.entries)), .text(DigestColumns.counts(digest.counts))
                        ]
                    }
                    try database.pipeline(
                        database.inserts(
                            "INSERT INTO digests (digest_id, teacher_id, school_id, date, scope, grade, class_number, revision, created_at, read, subject, text, entries, counts) VALUES ",
                            rows: rows, perStatement: database.rowsPerStatement)
                    ) { _, _ in }
                }
                try database.pipeline(SQLStore.enqueue(digests, in: database)) { _, _ in }
                // Notices of earlier batches today, with their newest words: unread again, no message of their own.
                for chunk in merged.sorted(by: { $0.key < $1.key }).chunks(of: 64) {
                    try database.pipeline(
                        chunk.map { digestID, notice in
                            SQLStatement(
                                "UPDATE digests SET subject = $2, text = $3, entries = $4, counts = $5, read = 0 WHERE digest_id = $1",
                                [
                                    .text(digestID), .text(notice.subject), .text(notice.text),
                                    .text(DigestColumns.entries(notice.entries)), .text(DigestColumns.counts(notice.counts))
                                ])
                        }
                    ) { _, _ in }
                }
                return digests.map(\.digest)
            }
        }
    }

    /// Marks what `crossing`'s teachers know of it as what it is now.
    private static func markTold(_ crossing: RuleCrossing, in database: any SQLDatabase) throws(StoreError) {
        try database.run(
            """
            UPDATE rule_crossings SET told = $5
            WHERE school_id = $1 AND student_id = $2 AND rule_key = $3 AND ordinal = $4
            """,
            [
                .text(crossing.schoolId), .text(crossing.studentId), .text(crossing.ruleKey), .integer(Int64(crossing.ordinal)),
                .integer(crossing.active ? 1 : 0)
            ])
    }

    /// A student's crossings, oldest first, withdrawn ones too: for the
    /// student's record.
    package func crossings(school: String, student: String) throws(StoreError) -> [RuleCrossing] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.snapshot { () throws(StoreError) -> [RuleCrossing] in
                try SQLStore.crossings(school: school, student: student, in: database)
            }
        }
    }

    static func crossings(school: String, student: String, in database: any SQLDatabase) throws(StoreError) -> [RuleCrossing] {
        let rows = try database.query(
            "SELECT \(SQLStore.crossingColumns) FROM rule_crossings WHERE school_id = $1 AND student_id = $2 ORDER BY date, rule_key, ordinal",
            [.text(school), .text(student)])
        let records = try SQLStore.records(
            Array(Set(rows.flatMap { ($0[5].string ?? "").split(separator: " ").map(String.init) })), in: database)
        return rows.compactMap { SQLStore.crossing($0, records: records) }
    }
}

extension Digest {
    /// The same notice with `notice`'s words and records: a later crossing
    /// merged into the day's notice.
    fileprivate func replacing(with notice: RuleNotice) -> Digest {
        Digest(
            digestId: digestId, teacherId: teacherId, schoolId: schoolId, date: date, scope: scope, grade: grade,
            classNumber: classNumber, revision: revision, createdAt: createdAt, read: read, subject: notice.subject, text: notice.text,
            entries: notice.entries, counts: notice.counts)
    }
}
