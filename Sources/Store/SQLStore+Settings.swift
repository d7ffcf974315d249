import Guidance

/// Each teacher's own settings: for now whether their lists also come by
/// e-mail (the 알림함 always has them). A teacher with no row has the default.
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

    /// Whether the teacher's lists also go by e-mail (by default they do).
    package func emailsLists(school: String, teacher: String) throws(StoreError) -> Bool {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(
                "SELECT email_lists FROM teacher_settings WHERE school_id = $1 AND teacher_id = $2",
                [.text(school), .text(teacher)]
            ).first?.first?.int.map { $0 != 0 } ?? true
        }
    }

    package func setEmailsLists(_ on: Bool, school: String, teacher: String, at: String) throws(StoreError) {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            _ = try database.run(
                """
                INSERT INTO teacher_settings (school_id, teacher_id, email_lists, updated_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (school_id, teacher_id) DO UPDATE SET email_lists = excluded.email_lists, updated_at = excluded.updated_at
                """, [.text(school), .text(teacher), .integer(on ? 1 : 0), .text(at)])
        }
    }

    /// The teachers of `schools` who turned e-mailed lists off.
    package func teachersWithoutEmailedLists(schools: [String]) throws(StoreError) -> Set<String> {
        guard !schools.isEmpty else { return [] }
        return try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            let placeholders = (1...schools.count).map { "$\($0)" }.joined(separator: ", ")
            return Set(
                try database.query(
                    "SELECT teacher_id FROM teacher_settings WHERE email_lists = 0 AND school_id IN (\(placeholders))",
                    schools.map(SQLValue.text)
                ) { $0[0].string ?? "" })
        }
    }
}
