import Common
import Crypto
import Foundation
import Guidance

/// A teacher's inbox: their digests, how many are unread, and marking one read.
extension SQLStore {
    static let digestColumns =
        "digest_id, teacher_id, school_id, date, scope, grade, class_number, revision, created_at, read, subject, text, entries, counts"

    /// A teacher's digests, newest first, read or not.
    package func inbox(teacher: String) throws(StoreError) -> [Digest] {
        let rows = try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(
                """
                SELECT \(SQLStore.digestColumns)
                FROM digests WHERE teacher_id = $1 AND scope <> 'guardian'
                ORDER BY created_at DESC, date DESC, revision DESC
                """, [.text(teacher)])
        }
        return try rows.map { (row: [SQLValue]) throws(StoreError) -> Digest in try SQLStore.digest(row[...]) }
    }

    /// How many of a teacher's digests are unread: the app's 알림함 badge,
    /// shown from the moment the app opens (no student data, so no read of it).
    package func unreadCount(teacher: String) throws(StoreError) -> Int {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query("SELECT COUNT(*) FROM digests WHERE teacher_id = $1 AND read = 0", [.text(teacher)]).first?.first?.int ?? 0
        }
    }

    /// A digest from the columns `digestColumns` names.
    static func digest(_ row: ArraySlice<SQLValue>) throws(StoreError) -> Digest {
        let row = Array(row)
        let entries: [DigestEntry]
        let counts: [String: Int]
        do throws(FieldError) {
            entries = try DigestColumns.entries(from: row[12].string ?? "[]")
            counts = try DigestColumns.counts(from: row[13].string ?? "{}")
        } catch {
            throw StoreError(.failed, "digest \(row[0].string ?? "?") is unreadable: \(error)")
        }
        return Digest(
            digestId: row[0].string ?? "", teacherId: row[1].string ?? "", schoolId: row[2].string ?? "", date: row[3].string ?? "",
            scope: DigestScope(rawValue: row[4].string ?? "") ?? .class, grade: row[5].int ?? 0, classNumber: row[6].int,
            revision: row[7].int ?? 0, createdAt: row[8].string ?? "", read: row[9].int == 1, subject: row[10].string ?? "",
            text: row[11].string ?? "", entries: entries, counts: counts)
    }

    /// Marks a digest read; false when the teacher has no such digest.
    package func markRead(teacher: String, digestId: String) throws(StoreError) -> Bool {
        try writer.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            // SQLite counts every matched row as changed, read before or not.
            try database.run("UPDATE digests SET read = 1 WHERE teacher_id = $1 AND digest_id = $2", [.text(teacher), .text(digestId)]) > 0
        }
    }
}
