import Common
import Guidance

/// The 교내봉사 schedule: each session a guidance owes, with its due date
/// and sitting, kept where events are applied. A session's sitting is chosen
/// once, when its guidance is stored (the first with room after the
/// guidance's day), and moves only by an event: 불참 to the next sitting
/// with room, its undoing back. A replay finds the sessions made and the
/// records applied, and changes nothing.
extension SQLStore {
    /// Version 12: the sessions, and what a service record did to one (a
    /// missed sitting keeps the sitting it missed, for its undoing).
    static let serviceSchedule = """
        CREATE TABLE IF NOT EXISTS service_duties (
            duty_id TEXT PRIMARY KEY,
            school_id TEXT NOT NULL,
            student_id TEXT NOT NULL,
            guidance_id TEXT NOT NULL,
            guidance_date TEXT NOT NULL,
            due_date TEXT,
            slot_date TEXT,
            slot_time TEXT,
            place TEXT,
            served_on TEXT,
            service_id TEXT,
            misses INTEGER NOT NULL DEFAULT 0,
            cancelled INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS service_duties_by_slot ON service_duties(school_id, slot_date, slot_time, cancelled);
        CREATE INDEX IF NOT EXISTS service_duties_by_student ON service_duties(school_id, student_id);
        ALTER TABLE service_records ADD COLUMN outcome TEXT NOT NULL DEFAULT 'served';
        ALTER TABLE service_records ADD COLUMN duty_id TEXT;
        ALTER TABLE service_records ADD COLUMN duty_applied INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE service_records ADD COLUMN missed_date TEXT;
        ALTER TABLE service_records ADD COLUMN missed_time TEXT;
        ALTER TABLE service_records ADD COLUMN missed_place TEXT;
        CREATE INDEX IF NOT EXISTS service_records_by_duty ON service_records(duty_id) WHERE duty_id IS NOT NULL;
        """

    /// Version 18: sittings a school added once (`CommunityServiceSittingAdded`),
    /// one per school, day and time.
    static let addedSittingsSchema = """
        CREATE TABLE IF NOT EXISTS service_sittings (
            sitting_id TEXT PRIMARY KEY,
            school_id TEXT NOT NULL,
            date TEXT NOT NULL,
            time TEXT NOT NULL,
            place TEXT NOT NULL,
            capacity INTEGER NOT NULL,
            added_by TEXT NOT NULL,
            added_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX IF NOT EXISTS service_sittings_by_time ON service_sittings(school_id, date, time);
        """

    /// Held exclusively by a batch that places or moves sessions (their
    /// sittings' room is counted), shared by a run that lists overdue ones.
    static func dutiesKey(_ school: String) -> String { "duties/\(school)" }

    /// What a batch did that the schedule follows.
    struct DutyChanges {
        /// Registrations stored (not refused), as applied.
        var registered: [GuidanceRecord] = []
        var deleted: [String] = []
        var recorded: [(id: String, school: String)] = []
        var withdrawn: [(id: String, school: String)] = []
        /// One-off sittings stored by the batch (not replayed ones).
        var sittings: [CommunityServiceSittingAdded] = []
    }

    /// A session's columns, the reason of the 종결 that closed it last
    /// (its record found by key).
    static let dutyColumns = """
        d.duty_id, d.student_id, d.guidance_id, d.due_date, d.slot_date, d.slot_time, d.place, d.served_on, d.service_id, d.misses, \
        (SELECT c.note FROM service_records c WHERE c.service_id = d.service_id AND c.outcome = 'closed')
        """

    /// Sessions closed (종결) leave their sitting: they take no room in it.
    static let notClosed = "NOT EXISTS (SELECT 1 FROM service_records c WHERE c.service_id = d.service_id AND c.outcome = 'closed')"

    static func duty(_ row: ArraySlice<SQLValue>) -> CommunityServiceDuty {
        let i = row.startIndex
        let slot = row[i + 4].string.map { SlotTime(date: $0, time: row[i + 5].string ?? "", place: row[i + 6].string ?? "") }
        return CommunityServiceDuty(
            dutyId: row[i].string ?? "", studentId: row[i + 1].string ?? "", guidanceId: row[i + 2].string ?? "",
            dueDate: row[i + 3].string,
            slot: slot, servedOn: row[i + 7].string, serviceId: row[i + 8].string, misses: row[i + 9].int ?? 0,
            closedReason: row[i + 10].string)
    }

    /// Follows a batch in the schedule of the schools with a policy: new
    /// guidances' sessions placed, deleted ones' cancelled, records applied
    /// to their sessions and undone; each overdue list a change touches is
    /// amended.
    static func keepDuties(_ changes: DutyChanges, schools: [String: School], in database: any SQLDatabase) throws(StoreError) {
        let scheduled = schools.filter { !$0.value.service.isEmpty }
        guard !scheduled.isEmpty else { return }
        // The schools whose sittings' room the batch counts or changes, all
        // locked at once in one order: two batches each holding one school
        // and waiting for the other's would deadlock.
        let counted =
            Set(
                changes.registered.map(\.schoolId) + changes.recorded.map(\.school) + changes.withdrawn.map(\.school)
                    + changes.sittings.map(\.schoolId)
            )
            .filter { scheduled[$0] != nil }.sorted()
        for chunk in counted.chunks(of: max(1, database.rowsPerStatement)) {
            try database.lock(chunk.map(dutiesKey), exclusive: true)
        }
        // Sessions whose standing (served, cancelled) changed, for the overdue lists that named them.
        var touched: [(school: String, due: String)] = []
        try cancel(guidances: changes.deleted, touched: &touched, in: database)
        try place(guidances: changes.registered, schools: scheduled, in: database)
        for sitting in changes.sittings where scheduled[sitting.schoolId] != nil { try seat(in: sitting, in: database) }
        try applyRecords(changes.recorded.map(\.id), schools: scheduled, touched: &touched, in: database)
        try undoRecords(changes.withdrawn.map(\.id), schools: scheduled, touched: &touched, in: database)
        try markDutyAmendments(touched, schools: scheduled, in: database)
    }

    private static func placeholders(_ count: Int, from first: Int = 1) -> String {
        (first..<first + count).map { "$\($0)" }.joined(separator: ", ")
    }

    private static func cancel(guidances ids: [String], touched: inout [(school: String, due: String)], in database: any SQLDatabase)
        throws(StoreError)
    {
        // By key: a guidance's sessions are `<id>/1` … `<id>/<n>`.
        let keys = ids.flatMap { id in
            (1...Reason.maxServiceSessions).map { SQLValue.text(CommunityServiceDuty.id(guidance: id, session: $0)) }
        }
        for chunk in keys.chunks(of: max(1, database.rowsPerStatement)) {
            let list = placeholders(chunk.count)
            let rows = try database.query(
                "SELECT school_id, due_date FROM service_duties WHERE duty_id IN (\(list)) AND cancelled = 0 AND due_date IS NOT NULL",
                Array(chunk))
            touched += rows.map { ($0[0].string ?? "", $0[1].string ?? "") }
            try database.run("UPDATE service_duties SET cancelled = 1 WHERE duty_id IN (\(list))", Array(chunk))
        }
    }

    /// How many sessions each sitting of `schools` holds after `date`, by school.
    private static func taken(schools: [String], after date: String, in database: any SQLDatabase) throws(StoreError) -> [String: [SlotTime:
        Int]]
    {
        var taken: [String: [SlotTime: Int]] = [:]
        for chunk in schools.chunks(of: max(1, database.rowsPerStatement)) {
            try database.forEachRow(
                """
                SELECT school_id, slot_date, slot_time, COUNT(*) FROM service_duties d
                WHERE school_id IN (\(placeholders(chunk.count, from: 2))) AND slot_date > $1 AND cancelled = 0 AND \(notClosed)
                GROUP BY school_id, slot_date, slot_time
                """, [.text(date)] + chunk.map { .text($0) }
            ) { row in
                taken[row[0].string ?? "", default: [:]][SlotTime(date: row[1].string ?? "", time: row[2].string ?? "", place: "")] =
                    row[3].int ?? 0
            }
        }
        return taken
    }

    /// The sittings after `date` the students of `schools` already have a
    /// seat in, as `seat(school, student, sitting)` keys: a student sits once
    /// in a sitting, whatever number of guidances owe sessions.
    private static func seats(schools: [String], after date: String, in database: any SQLDatabase) throws(StoreError) -> Set<String> {
        var seats: Set<String> = []
        for chunk in schools.chunks(of: max(1, database.rowsPerStatement)) {
            try database.forEachRow(
                """
                SELECT school_id, student_id, slot_date, slot_time FROM service_duties d
                WHERE school_id IN (\(placeholders(chunk.count, from: 2))) AND slot_date > $1 AND cancelled = 0 AND \(notClosed)
                """, [.text(date)] + chunk.map { .text($0) }
            ) { row in
                seats.insert(seat(row[0].string ?? "", row[1].string ?? "", date: row[2].string ?? "", time: row[3].string ?? ""))
            }
        }
        return seats
    }

    private static func seat(_ school: String, _ student: String, date: String, time: String) -> String {
        [school, student, date, time].joined(separator: "\u{1}")
    }

    /// Each newly stored guidance's sessions, in the order the guidances
    /// happened: the n-th due `service_due_days` school days after its day,
    /// at the first sitting with room after its day (after the one before).
    /// A batch's schools are counted and written together: a few
    /// statements a batch, not a few a school.
    private static func place(guidances stored: [GuidanceRecord], schools: [String: School], in database: any SQLDatabase)
        throws(StoreError)
    {
        var owed = stored.filter { $0.serviceSessions > 0 && schools[$0.schoolId] != nil }
        guard !owed.isEmpty else { return }
        // Left out: those a deletion came first for (their row is a completed
        // tombstone), and those placed before (a replay). Both by key.
        var skipped: Set<String> = []
        for chunk in owed.map(\.guidanceId).chunks(of: max(1, database.rowsPerStatement)) {
            let list = placeholders(chunk.count)
            skipped.formUnion(
                try database.query(
                    "SELECT guidance_id FROM guidances WHERE guidance_id IN (\(list)) AND deleted = 1", chunk.map { .text($0) }
                )
                .compactMap { $0[0].string })
            skipped.formUnion(
                try database.query(
                    "SELECT guidance_id FROM service_duties WHERE duty_id IN (\(list))",
                    chunk.map { .text(CommunityServiceDuty.id(guidance: $0, session: 1)) }
                ).compactMap { $0[0].string })
        }
        // In the order they happened, each once (a batch may hold a registration twice).
        owed = owed.filter { skipped.insert($0.guidanceId).inserted }.sorted {
            ($0.occurredAt, $0.guidanceId) < ($1.occurredAt, $1.guidanceId)
        }
        guard let earliest = owed.map(\.date).min() else { return }
        let schoolIDs = Set(owed.map(\.schoolId)).sorted()
        var taken = try taken(schools: schoolIDs, after: earliest, in: database)
        var seated = try seats(schools: schoolIDs, after: earliest, in: database)
        let added = try addedSittings(schools: schoolIDs, after: earliest, in: database)
        // Where a search after a day may start: the sittings before the last
        // one given were full, and stay full within the batch.
        var resume: [String: String] = [:]
        var dueDates: [String: String?] = [:]
        var rows: [[SQLValue]] = []
        for guidance in owed {
            guard let school = schools[guidance.schoolId] else { continue }
            // A day's guidances share their due date.
            let dueKey = guidance.schoolId + " " + guidance.date
            let due = dueDates[dueKey] ?? school.service.dueDays.flatMap { school.calendar.schoolDay($0, after: guidance.date) }
            dueDates[dueKey] = due
            var after = guidance.date
            let (schoolID, student) = (guidance.schoolId, guidance.student.studentId)
            for session in 1...guidance.serviceSessions {
                let key = schoolID + " " + after
                // A sitting the student already sits in is passed over, not full:
                // the day's resume point moves only past sittings that were full.
                var passedOver = false
                let slot = school.service.firstSitting(
                    after: max(after, resume[key] ?? after), calendar: school.calendar, added: added[schoolID] ?? [:]
                ) {
                    if seated.contains(seat(schoolID, student, date: $0.date, time: $0.time)) {
                        passedOver = true
                        return Int.max
                    }
                    return taken[schoolID]?[SlotTime(date: $0.date, time: $0.time, place: "")] ?? 0
                }
                if let slot {
                    taken[schoolID, default: [:]][SlotTime(date: slot.date, time: slot.time, place: ""), default: 0] += 1
                    seated.insert(seat(schoolID, student, date: slot.date, time: slot.time))
                    if !passedOver { resume[key] = Timestamp.civilDay(slot.date).map { Timestamp.dateString(civil: $0 - 1) } }
                    after = slot.date
                }
                rows.append([
                    .text(CommunityServiceDuty.id(guidance: guidance.guidanceId, session: session)), .text(guidance.schoolId),
                    .text(guidance.student.studentId), .text(guidance.guidanceId), .text(guidance.date), due.sql, slot.map(\.date).sql,
                    slot.map(\.time).sql, slot.map(\.place).sql
                ])
            }
        }
        try database.savepoint(
            database.inserts(
                "INSERT INTO service_duties (duty_id, school_id, student_id, guidance_id, guidance_date, due_date, slot_date, slot_time, place) VALUES ",
                rows: rows, perStatement: database.rowsPerStatement, then: " ON CONFLICT (duty_id) DO NOTHING"))
        // A 완료 for a session applied before its guidance (a replay into an
        // empty store reads the topics side by side).
        var early: [String] = []
        for chunk in rows.map({ $0[0] }).chunks(of: max(1, database.rowsPerStatement)) {
            early += try database.query(
                """
                SELECT service_id FROM service_records
                WHERE duty_id IN (\(placeholders(chunk.count))) AND recorded = 1 AND withdrawn = 0 AND duty_applied = 0
                """, Array(chunk)
            ).compactMap { $0[0].string }
        }
        var none: [(school: String, due: String)] = []
        try applyRecords(early, schools: schools, touched: &none, in: database)
    }

    /// Stores a one-off sitting: `added` when it is new; `refused` says why
    /// it was kept out (another sitting holds its day and time, or its id);
    /// a replay of itself is neither.
    static func add(_ sitting: CommunityServiceSittingAdded, in database: any SQLDatabase) throws(StoreError) -> (
        added: Bool, refused: String?
    ) {
        let slot = sitting.slot
        let written = try database.run(
            """
            INSERT INTO service_sittings (sitting_id, school_id, date, time, place, capacity, added_by, added_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING
            """,
            [
                .text(sitting.sittingId), .text(sitting.schoolId), .text(slot.date), .text(slot.time), .text(slot.place),
                .integer(Int64(sitting.capacity)), .text(sitting.addedBy), .text(sitting.addedAt)
            ])
        if written > 0 { return (true, nil) }
        let same = try database.query(
            "SELECT 1 FROM service_sittings WHERE sitting_id = $1 AND school_id = $2 AND date = $3 AND time = $4",
            [.text(sitting.sittingId), .text(sitting.schoolId), .text(slot.date), .text(slot.time)])
        return (false, same.isEmpty ? "a sitting of \(sitting.schoolId) on \(slot.date) at \(slot.time) exists already" : nil)
    }

    /// The one-off sittings of `schools` after `date` (up to `through`), by school and day.
    private static func addedSittings(
        schools: [String], after date: String, through last: String = "9999-12-31", in database: any SQLDatabase
    ) throws(StoreError) -> [String: CommunityServicePolicy.AddedSittings] {
        var added: [String: CommunityServicePolicy.AddedSittings] = [:]
        for chunk in schools.chunks(of: max(1, database.rowsPerStatement)) {
            try database.forEachRow(
                """
                SELECT school_id, date, time, place, capacity FROM service_sittings
                WHERE school_id IN (\(placeholders(chunk.count, from: 3))) AND date > $1 AND date <= $2
                """, [.text(date), .text(last)] + chunk.map { .text($0) }
            ) { row in
                let slot = SlotTime(date: row[1].string ?? "", time: row[2].string ?? "", place: row[3].string ?? "")
                added[row[0].string ?? "", default: [:]][slot.date, default: []].append((slot, capacity: row[4].int ?? 0))
            }
        }
        return added
    }

    /// Seats in a new sitting, in due order, the open sessions it brings
    /// nearer: those with no seat by their due date (none, or one after
    /// both the due date and the sitting) whose guidance came before it.
    /// A student sits once in it; it takes no more than its room.
    private static func seat(in sitting: CommunityServiceSittingAdded, in database: any SQLDatabase) throws(StoreError) {
        let slot = sitting.slot
        let school: SQLValue = .text(sitting.schoolId)
        var seated = Set(
            try database.query(
                "SELECT student_id FROM service_duties d WHERE school_id = $1 AND slot_date = $2 AND slot_time = $3 AND cancelled = 0 AND \(notClosed)",
                [school, .text(slot.date), .text(slot.time)]
            ).compactMap { $0[0].string })
        var room = sitting.capacity - seated.count
        guard room > 0 else { return }
        let waiting = try database.query(
            """
            SELECT duty_id, student_id FROM service_duties
            WHERE school_id = $1 AND cancelled = 0 AND served_on IS NULL AND due_date IS NOT NULL AND guidance_date < $2
              AND (slot_date IS NULL OR (slot_date > due_date AND slot_date > $2))
            ORDER BY due_date, guidance_date, duty_id
            """, [school, .text(slot.date)])
        for row in waiting where room > 0 {
            guard let student = row[1].string, seated.insert(student).inserted else { continue }
            try database.run(
                "UPDATE service_duties SET slot_date = $2, slot_time = $3, place = $4 WHERE duty_id = $1",
                [row[0], .text(slot.date), .text(slot.time), .text(slot.place)])
            room -= 1
        }
    }

    /// Service records applied to sessions: 완료 and 종결 to its session (or,
    /// without one, to the student's earliest open ones), 불참 moves its
    /// session to the next sitting with room after the missed one.
    private static func applyRecords(
        _ ids: [String], schools: [String: School], touched: inout [(school: String, due: String)], in database: any SQLDatabase
    ) throws(StoreError) {
        for chunk in ids.chunks(of: max(1, database.rowsPerStatement)) {
            let records = try database.query(
                """
                SELECT service_id, school_id, student_id, local_date, sessions, outcome, duty_id FROM service_records
                WHERE service_id IN (\(placeholders(chunk.count))) AND recorded = 1 AND withdrawn = 0 AND duty_applied = 0
                ORDER BY recorded_at, service_id
                """, chunk.map { .text($0) })
            for record in records {
                let (serviceID, schoolID, student, date) = (
                    record[0].string ?? "", record[1].string ?? "", record[2].string ?? "", record[3].string ?? ""
                )
                guard let school = schools[schoolID] else { continue }
                let owner: [SQLValue] = [.text(schoolID), .text(student)]
                if record[5].string == CommunityServiceRecord.Outcome.missed.rawValue {
                    guard let dutyID = record[6].string else { continue }
                    let found = try database.query(
                        """
                        SELECT slot_date, slot_time, place FROM service_duties
                        WHERE duty_id = $3 AND school_id = $1 AND student_id = $2 AND served_on IS NULL AND cancelled = 0
                        """, owner + [.text(dutyID)])
                    // Not yet placed (its guidance comes later), served or cancelled: nothing to move.
                    guard let missed = found.first else { continue }
                    let next = try nextSitting(at: school, for: student, after: max(date, missed[0].string ?? date), in: database)
                    try database.run(
                        """
                        UPDATE service_duties SET slot_date = $2, slot_time = $3, place = $4, misses = misses + 1 WHERE duty_id = $1
                        """, [.text(dutyID), next.map(\.date).sql, next.map(\.time).sql, next.map(\.place).sql])
                    try database.run(
                        """
                        UPDATE service_records SET duty_applied = 1, missed_date = $2, missed_time = $3, missed_place = $4 WHERE service_id = $1
                        """, [.text(serviceID), missed[0], missed[1], missed[2]])
                    // The day's list that names a 불참 (the next school day's) is amended when it was written already.
                    touched.append((schoolID, date))
                    continue
                }
                var sessions: [[SQLValue]]
                if let dutyID = record[6].string {
                    sessions = try database.query(
                        """
                        SELECT duty_id, due_date FROM service_duties
                        WHERE duty_id = $3 AND school_id = $1 AND student_id = $2 AND served_on IS NULL AND cancelled = 0
                        """, owner + [.text(dutyID)])
                    // Its session is not placed yet: applied when it is.
                    if sessions.isEmpty { continue }
                } else {
                    sessions = try database.query(
                        """
                        SELECT duty_id, due_date FROM service_duties
                        WHERE school_id = $1 AND student_id = $2 AND served_on IS NULL AND cancelled = 0
                        ORDER BY due_date, slot_date, duty_id LIMIT $3
                        """, owner + [.integer(Int64(record[4].int ?? 1))])
                }
                for session in sessions {
                    try database.run(
                        "UPDATE service_duties SET served_on = $2, service_id = $3 WHERE duty_id = $1",
                        [session[0], .text(date), .text(serviceID)])
                    if let due = session[1].string { touched.append((schoolID, due)) }
                }
                try database.run("UPDATE service_records SET duty_applied = 1 WHERE service_id = $1", [.text(serviceID)])
            }
        }
    }

    /// The first sitting of `school` after `date` with room, where
    /// `student` has no seat yet; nil when none is ahead.
    private static func nextSitting(at school: School, for student: String, after date: String, in database: any SQLDatabase)
        throws(StoreError) -> SlotTime?
    {
        let taken = try taken(schools: [school.id], after: date, in: database)[school.id] ?? [:]
        let seated = try seats(schools: [school.id], after: date, in: database)
        let added = try addedSittings(schools: [school.id], after: date, in: database)[school.id] ?? [:]
        return school.service.firstSitting(after: date, calendar: school.calendar, added: added) {
            seated.contains(seat(school.id, student, date: $0.date, time: $0.time))
                ? Int.max : taken[SlotTime(date: $0.date, time: $0.time, place: "")] ?? 0
        }
    }

    /// Withdrawn records undone on their sessions: a 완료 frees its
    /// sessions, a 불참 brings its session back to the sitting it missed, a
    /// 종결 opens its sessions again, each at the first sitting with room
    /// after the day it was taken back (the seat it left may have gone to
    /// another, or be past).
    private static func undoRecords(
        _ ids: [String], schools: [String: School], touched: inout [(school: String, due: String)], in database: any SQLDatabase
    ) throws(StoreError) {
        for chunk in ids.chunks(of: max(1, database.rowsPerStatement)) {
            let records = try database.query(
                """
                SELECT service_id, school_id, outcome, duty_id, missed_date, missed_time, missed_place, local_date, withdrawn_at FROM service_records
                WHERE service_id IN (\(placeholders(chunk.count))) AND withdrawn = 1 AND duty_applied = 1
                """, chunk.map { .text($0) })
            for record in records {
                if record[2].string == CommunityServiceRecord.Outcome.missed.rawValue {
                    if let school = record[1].string, let day = record[7].string { touched.append((school, day)) }
                    try database.run(
                        """
                        UPDATE service_duties SET slot_date = $2, slot_time = $3, place = $4, misses = misses - 1
                        WHERE duty_id = $1 AND served_on IS NULL
                        """, [record[3], record[4], record[5], record[6]])
                } else {
                    let sessions = try database.query(
                        "SELECT duty_id, school_id, student_id, due_date FROM service_duties WHERE service_id = $1 ORDER BY due_date, duty_id",
                        [record[0]])
                    touched += sessions.compactMap { row in row[3].string.map { (row[1].string ?? "", $0) } }
                    if record[2].string == CommunityServiceRecord.Outcome.closed.rawValue, let school = schools[record[1].string ?? ""] {
                        // From the later of the 종결's day and the school's day it was taken back.
                        let undone = record[8].string.flatMap(Timestamp.parse).map { Timestamp.localDate($0, in: school.timeZone) } ?? ""
                        let from = max(record[7].string ?? "", undone)
                        // One at a time: each seat taken counts for the next.
                        for session in sessions {
                            let next = try nextSitting(at: school, for: session[2].string ?? "", after: from, in: database)
                            try database.run(
                                """
                                UPDATE service_duties SET served_on = NULL, service_id = NULL, slot_date = $2, slot_time = $3, place = $4
                                WHERE duty_id = $1
                                """, [session[0], next.map(\.date).sql, next.map(\.time).sql, next.map(\.place).sql])
                        }
                    }
                    try database.run("UPDATE service_duties SET served_on = NULL, service_id = NULL WHERE service_id = $1", [record[0]])
                }
                try database.run("UPDATE service_records SET duty_applied = 2 WHERE service_id = $1", [record[0]])
            }
        }
    }

    /// The day whose run lists a session due on `due` as overdue: the next
    /// school day.
    static func overdueDay(due: String, calendar: SchoolCalendar) -> String? {
        calendar.schoolDay(1, after: due)
    }

    /// Each overdue list written that a change touched (`due`: a session's
    /// due date, or the day of a 불참) is amended at the next tick.
    private static func markDutyAmendments(
        _ touched: [(school: String, due: String)], schools: [String: School], in database: any SQLDatabase
    ) throws(StoreError) {
        var days: Set<[String]> = []
        for (school, due) in touched {
            guard let calendar = schools[school]?.calendar, let day = overdueDay(due: due, calendar: calendar) else { continue }
            days.insert([school, day])
        }
        for day in days.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            try database.run(
                """
                INSERT INTO pending_amendments (school_id, date)
                SELECT school_id, date FROM digest_runs WHERE school_id = $1 AND date = $2
                ON CONFLICT (school_id, date) DO NOTHING
                """, day.map { .text($0) })
        }
    }

    /// The sessions due on or after `since` and before `before` that were
    /// not served by their due date, those missed (불참, not taken back) on
    /// those days, and those of guidances of those days seated after their
    /// due date (기한 내 자리 없음), with their guidances: what the homeroom
    /// teacher hears of 교내봉사 in the day's run, not a message each.
    static func overdueStatement(school: String, since: String, before: String) -> SQLStatement {
        SQLStatement(
            """
            SELECT \(dutyColumns), \(recordColumns) FROM service_duties d JOIN guidances g ON g.guidance_id = d.guidance_id
            WHERE d.school_id = $1 AND d.cancelled = 0 AND \(notClosed)
              AND ((d.due_date >= $2 AND d.due_date < $3 AND (d.served_on IS NULL OR d.served_on > d.due_date))
                OR (d.guidance_date >= $2 AND d.guidance_date < $3 AND d.served_on IS NULL AND d.slot_date > d.due_date)
                OR d.duty_id IN (
                  SELECT r.duty_id FROM service_records r
                  WHERE r.school_id = $1 AND r.outcome = 'missed' AND r.recorded = 1 AND r.withdrawn = 0
                    AND r.local_date >= $2 AND r.local_date < $3))
            ORDER BY d.student_id, d.due_date, d.duty_id
            """, [.text(school), .text(since), .text(before)])
    }

    static func overdueDuty(_ row: [SQLValue]) -> (duty: CommunityServiceDuty, guidance: GuidanceRecord) {
        (duty(row[...]), record(row[11...]))
    }

    // MARK: - Reads

    /// A school's sessions: of the students `students` names (nil: all),
    /// open ones and those served on or after `servedSince`; or those whose
    /// sitting is on `sittingOn`. Cancelled ones are left out.
    package func duties(school: String, sittingOn day: String? = nil) throws(StoreError) -> [CommunityServiceDuty] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            if let day {
                return try database.query(
                    """
                    SELECT \(SQLStore.dutyColumns) FROM service_duties d
                    WHERE d.school_id = $1 AND d.cancelled = 0 AND (d.slot_date = $2 OR d.served_on = $2) AND \(SQLStore.notClosed)
                    ORDER BY d.slot_time, d.student_id, d.duty_id
                    """, [.text(school), .text(day)]
                ) { SQLStore.duty($0[...]) }
            }
            return try database.query(
                """
                SELECT \(SQLStore.dutyColumns) FROM service_duties d
                WHERE d.school_id = $1 AND d.cancelled = 0 ORDER BY d.student_id, d.due_date, d.slot_date, d.duty_id
                """, [.text(school)]
            ) { SQLStore.duty($0[...]) }
        }
    }

    /// The one-off sittings of a school from `from` through `through`, by day.
    package func addedSittings(school: String, from: String, through: String) throws(StoreError) -> CommunityServicePolicy.AddedSittings {
        let before = Timestamp.civilDay(from).map { Timestamp.dateString(civil: $0 - 1) } ?? from
        return try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try SQLStore.addedSittings(schools: [school], after: before, through: through, in: database)[school] ?? [:]
        }
    }

    /// What the 교내봉사 plan of `from`…`through` counts besides its
    /// sittings: the seats taken in every sitting (`"date time"`), and each
    /// open session due then, with whether its seat is after its due date.
    package func servicePlan(school: String, from: String, through: String) throws(StoreError) -> (
        taken: [String: Int], due: [(date: String, late: Bool)]
    ) {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.snapshot { () throws(StoreError) in
                let parameters: [SQLValue] = [.text(school), .text(from), .text(through)]
                var taken: [String: Int] = [:]
                try database.forEachRow(
                    """
                    SELECT slot_date, slot_time, COUNT(*) FROM service_duties d
                    WHERE school_id = $1 AND slot_date >= $2 AND slot_date <= $3 AND cancelled = 0 AND \(SQLStore.notClosed)
                    GROUP BY slot_date, slot_time
                    """, parameters
                ) { taken["\($0[0].string ?? "") \($0[1].string ?? "")"] = $0[2].int ?? 0 }
                let due = try database.query(
                    """
                    SELECT due_date, CASE WHEN slot_date IS NULL OR slot_date > due_date THEN 1 ELSE 0 END FROM service_duties
                    WHERE school_id = $1 AND due_date >= $2 AND due_date <= $3 AND cancelled = 0 AND served_on IS NULL
                    """, parameters
                ) { (date: $0[0].string ?? "", late: $0[1].int == 1) }
                return (taken, due)
            }
        }
    }

    /// The sittings a school's students missed on `day` (불참), each with
    /// its record's id (to undo it), the session it moved and where to.
    package func missedSittings(school: String, on day: String) throws(StoreError) -> [(
        serviceId: String, studentId: String, dutyId: String, slot: SlotTime, next: SlotTime?
    )] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(
                """
                SELECT r.service_id, r.student_id, r.duty_id, r.missed_date, r.missed_time, r.missed_place, d.slot_date, d.slot_time, d.place
                FROM service_records r LEFT JOIN service_duties d ON d.duty_id = r.duty_id
                WHERE r.school_id = $1 AND r.local_date = $2 AND r.outcome = 'missed' AND r.recorded = 1 AND r.withdrawn = 0
                  AND r.duty_applied = 1
                ORDER BY r.missed_time, r.student_id
                """, [.text(school), .text(day)]
            ) { row in
                (
                    row[0].string ?? "", row[1].string ?? "", row[2].string ?? "",
                    SlotTime(date: row[3].string ?? "", time: row[4].string ?? "", place: row[5].string ?? ""),
                    row[6].string.map { SlotTime(date: $0, time: row[7].string ?? "", place: row[8].string ?? "") }
                )
            }
        }
    }
}
