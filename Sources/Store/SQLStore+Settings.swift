import Guidance

/// Each teacher's own settings (`TeacherSettings`: e-mailed lists, their
/// own time, quiet hours) and the devices they turned push on for. A
/// teacher with no row has the defaults. Kept in the store every replica
/// shares, so every replica holds and sends alike.
extension SQLStore {
    /// Version 9.
    static let teacherSettings = """
        CREATE TABLE IF NOT EXISTS teacher_settings (
            school_id TEXT NOT NULL,
            teacher_id TEXT NOT NULL,
            email_lists INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (school_id, teacher_id)
        );
        """

    /// Version 13: the teacher's own time and quiet hours (NULL: the
    /// school's time, the service's `QUIET_HOURS`; equal ends: none), push subscriptions, and held deliveries' kind (a newer
    /// message of the same kind replaces a held one), how many held ones
    /// each stands for, and whether it is urgent.
    static let quietHoursAndPush = """
        ALTER TABLE teacher_settings ADD COLUMN list_minute INTEGER;
        ALTER TABLE teacher_settings ADD COLUMN quiet_from INTEGER;
        ALTER TABLE teacher_settings ADD COLUMN quiet_until INTEGER;
        CREATE TABLE IF NOT EXISTS push_subscriptions (
            endpoint TEXT PRIMARY KEY,
            school_id TEXT NOT NULL,
            teacher_id TEXT NOT NULL,
            p256dh TEXT NOT NULL,
            auth TEXT NOT NULL,
            session_hash TEXT NOT NULL,
            session_seen BIGINT,
            renewed_ms BIGINT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS push_by_teacher ON push_subscriptions(school_id, teacher_id);
        ALTER TABLE deliveries ADD COLUMN kind TEXT;
        ALTER TABLE deliveries ADD COLUMN merged INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE deliveries ADD COLUMN urgent INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX IF NOT EXISTS deliveries_held ON deliveries(teacher_id, channel, kind);
        """

    private static let settingsColumns = "teacher_id, email_lists, list_minute, quiet_from, quiet_until"

    private static func settings(_ row: [SQLValue]) -> TeacherSettings {
        var settings = TeacherSettings()
        settings.emailLists = row[1].int.map { $0 != 0 } ?? true
        settings.listMinute = row[2].int
        if let from = row[3].int, let until = row[4].int { settings.quietHours = QuietHours(from: from, until: until) }
        return settings
    }

    package func teacherSettings(school: String, teacher: String) throws(StoreError) -> TeacherSettings {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(
                "SELECT \(SQLStore.settingsColumns) FROM teacher_settings WHERE school_id = $1 AND teacher_id = $2",
                [.text(school), .text(teacher)]
            ).first.map(SQLStore.settings) ?? .standard
        }
    }

    /// Saves the teacher's settings, and gives each of their messages held
    /// for their time or quiet hours (e-mail, push; not yet tried, not
    /// claimed) the time `release` says now, from its kind (`scope/date`)
    /// and urgency: quiet hours extended keep it held longer, turned off let
    /// it go at once. In one transaction: a dispatcher never sees the new
    /// settings with the old release times.
    package func setTeacherSettings(
        _ settings: TeacherSettings, school: String, teacher: String, now: Double,
        release: (_ scope: DigestScope, _ date: String, _ urgent: Bool) -> Double
    ) throws(StoreError) {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            try database.transaction { () throws(StoreError) in
                try SQLStore.saveSettings(settings, school: school, teacher: teacher, at: Timestamp.format(now), in: database)
                let nowMs = milliseconds(now)
                let held = try database.query(
                    """
                    SELECT delivery_id, kind, urgent FROM deliveries
                    WHERE school_id = $1 AND teacher_id = $2 AND status = 'pending' AND kind IS NOT NULL AND attempts = 0
                        AND next_attempt_ms > $3 AND (lease_until_ms IS NULL OR lease_until_ms < $3)
                    """, [.text(school), .text(teacher), .integer(nowMs)])
                for row in held {
                    let kind = (row[1].string ?? "").split(separator: "/", maxSplits: 1).map(String.init)
                    guard kind.count == 2, let scope = DigestScope(rawValue: kind[0]) else { continue }
                    let due = max(nowMs, milliseconds(release(scope, kind[1], (row[2].int ?? 0) != 0)))
                    try database.run("UPDATE deliveries SET next_attempt_ms = $2 WHERE delivery_id = $1", [row[0], .integer(due)])
                }
            }
        }
    }

    private static func saveSettings(_ settings: TeacherSettings, school: String, teacher: String, at: String, in database: any SQLDatabase)
        throws(StoreError)
    {
        _ = try database.run(
            """
            INSERT INTO teacher_settings (school_id, teacher_id, email_lists, list_minute, quiet_from, quiet_until, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (school_id, teacher_id) DO UPDATE SET email_lists = excluded.email_lists,
                list_minute = excluded.list_minute, quiet_from = excluded.quiet_from, quiet_until = excluded.quiet_until,
                updated_at = excluded.updated_at
            """,
            [
                .text(school), .text(teacher), .integer(settings.emailLists ? 1 : 0),
                settings.listMinute.map { .integer(Int64($0)) } ?? .null,
                settings.quietHours.map { .integer(Int64($0.from)) } ?? .null,
                settings.quietHours.map { .integer(Int64($0.until)) } ?? .null, .text(at)
            ])
    }

    /// Every teacher's own list time (minutes of the school's day), for the
    /// schedule to find those who want the day's list before the school's time.
    package func listTimes() throws(StoreError) -> [(school: String, teacher: String, minute: Int)] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query("SELECT school_id, teacher_id, list_minute FROM teacher_settings WHERE list_minute IS NOT NULL", []) {
                (school: $0[0].string ?? "", teacher: $0[1].string ?? "", minute: $0[2].int ?? 0)
            }
        }
    }

    /// What deciding the deliveries of `schools`' digests needs, read once
    /// for a run: the settings of the teachers who changed any, and who has a
    /// device to push to.
    package func deliveryPreferences(schools: [String]) throws(StoreError) -> DeliveryPreferences {
        guard !schools.isEmpty else { return DeliveryPreferences() }
        return try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            let placeholders = (1...schools.count).map { "$\($0)" }.joined(separator: ", ")
            var preferences = DeliveryPreferences()
            for row in try database.query(
                "SELECT \(SQLStore.settingsColumns) FROM teacher_settings WHERE school_id IN (\(placeholders))", schools.map(SQLValue.text))
            {
                preferences.settings[row[0].string ?? ""] = SQLStore.settings(row)
            }
            preferences.pushing = Set(
                try database.query(
                    "SELECT DISTINCT teacher_id FROM push_subscriptions WHERE school_id IN (\(placeholders))", schools.map(SQLValue.text)
                ) { $0[0].string ?? "" })
            return preferences
        }
    }

    /// The devices a teacher may push to at once; a newer one replaces the
    /// one renewed longest ago (a browser uninstalled, a phone replaced).
    package static let devicesPerTeacher = 5

    /// Keeps a device's subscription for `teacher`, bound to the session
    /// that turned it on: it goes when that session ends. The same endpoint
    /// again (the app opening) renews it, for whoever is signed in now.
    package func savePushSubscription(_ subscription: PushSubscription) throws(StoreError) {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            try database.transaction { () throws(StoreError) in
                _ = try database.run(
                    """
                    INSERT INTO push_subscriptions (endpoint, school_id, teacher_id, p256dh, auth, session_hash, session_seen, renewed_ms, created_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                    ON CONFLICT (endpoint) DO UPDATE SET school_id = excluded.school_id, teacher_id = excluded.teacher_id,
                        p256dh = excluded.p256dh, auth = excluded.auth, session_hash = excluded.session_hash,
                        session_seen = excluded.session_seen, renewed_ms = excluded.renewed_ms
                    """,
                    [
                        .text(subscription.endpoint), .text(subscription.schoolId), .text(subscription.teacherId),
                        .text(subscription.p256dh), .text(subscription.auth), .text(subscription.sessionHash),
                        subscription.sessionSeen.map { .integer($0) } ?? .null, .integer(subscription.renewedMs),
                        .text(subscription.createdAt)
                    ])
                _ = try database.run(
                    """
                    DELETE FROM push_subscriptions WHERE school_id = $1 AND teacher_id = $2 AND endpoint NOT IN (
                        SELECT endpoint FROM push_subscriptions WHERE school_id = $1 AND teacher_id = $2
                        ORDER BY renewed_ms DESC, created_at DESC, endpoint LIMIT $3)
                    """,
                    [.text(subscription.schoolId), .text(subscription.teacherId), .integer(Int64(SQLStore.devicesPerTeacher))])
            }
        }
    }

    /// Drops subscriptions: of `teacher` at `endpoint`, or all of theirs
    /// when `endpoint` is nil. How many went.
    @discardableResult
    package func removePushSubscriptions(school: String, teacher: String, endpoint: String? = nil) throws(StoreError) -> Int {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            try database.run(
                """
                DELETE FROM push_subscriptions
                WHERE school_id = $1 AND teacher_id = $2 AND (CAST($3 AS TEXT) IS NULL OR endpoint = CAST($3 AS TEXT))
                """, [.text(school), .text(teacher), endpoint.map(SQLValue.text) ?? .null])
        }
    }

    /// Drops one subscription wherever it is: the push service said it is gone (404, 410).
    package func removePushSubscription(endpoint: String) throws(StoreError) {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            _ = try database.run("DELETE FROM push_subscriptions WHERE endpoint = $1", [.text(endpoint)])
        }
    }

    package func pushSubscriptions(school: String, teacher: String) throws(StoreError) -> [PushSubscription] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(
                """
                SELECT endpoint, school_id, teacher_id, p256dh, auth, session_hash, session_seen, renewed_ms, created_at
                FROM push_subscriptions WHERE school_id = $1 AND teacher_id = $2 ORDER BY endpoint
                """, [.text(school), .text(teacher)]
            ) { row in
                PushSubscription(
                    endpoint: row[0].string ?? "", schoolId: row[1].string ?? "", teacherId: row[2].string ?? "",
                    p256dh: row[3].string ?? "", auth: row[4].string ?? "", sessionHash: row[5].string ?? "",
                    sessionSeen: row[6] == .null ? nil : row[6].int.map(Int64.init), renewedMs: Int64(row[7].int ?? 0),
                    createdAt: row[8].string ?? "")
            }
        }
    }
}
