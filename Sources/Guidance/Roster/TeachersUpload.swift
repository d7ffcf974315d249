import Crypto

/// A school's teachers as its admin uploaded them (성명, 이메일, 역할, 학년,
/// 반; or `teachers.csv`'s own columns), each row checked as `teachers.csv`
/// checks it, and what putting them in place of the school's teachers now
/// would change: the preview an admin confirms before anything applies.
package struct TeachersUpload: Sendable {
    /// A teacher whose name, e-mail, roles, grade or class the upload changes.
    package struct Changed: Sendable, Equatable {
        package let before: Teacher
        package let after: Teacher
    }

    /// The school's teachers after the upload, in id order.
    package let teachers: [Teacher]
    package let refused: [StudentsUpload.Refused]
    package let added: [Teacher]
    /// Teachers of the school that the upload does not list: they can no
    /// longer sign in, and their sessions end.
    package let left: [Teacher]
    package let changed: [Changed]
    /// Why the upload as a whole cannot apply (the school left without an
    /// admin, or the admin uploading it no longer one), or nil.
    package let problem: String?

    static let headers: [String: [String]] = [
        "teacher_id": ["teacher_id", "교사id", "교사 id", "id", "아이디"],
        "name": ["name", "성명", "이름", "교사명"],
        "email": ["email", "이메일", "e-mail", "전자우편", "메일"],
        "role": ["role", "roles", "역할", "업무"],
        "grade": ["grade", "학년"],
        "class": ["class", "반"]
    ]

    /// Reads `rows` as the teachers of `school`, matched to `current`'s: by
    /// id when the upload has an id column and the id is the school's;
    /// otherwise by e-mail, or by name when one teacher of the school has it.
    /// A teacher matched keeps their id (their sessions, settings and 알림함
    /// follow them); a new one gets an id made from the school and e-mail
    /// (or name). `uploader`: the admin uploading, who must stay one.
    package static func read(_ rows: [CSV.Row], school: String, current: Roster, uploader: String?) throws(RosterError) -> TeachersUpload {
        let file = "teachers"
        let (table, columns) = try Table.uploaded(
            rows, file: file, headers: headers, required: ["name", "role"], missing: "no header row with 성명 and 역할 (name, role)")
        let before = current.teachersBySchool[school] ?? []
        let byID = Dictionary(before.map { ($0.id, $0) }) { first, _ in first }
        let byEmail = Dictionary(before.filter { !$0.email.isEmpty }.map { ($0.email.lowercased(), $0) }) { first, _ in first }
        let byName = Dictionary(grouping: before, by: \.name)
        var teachers: [Teacher] = []
        var refused: [StudentsUpload.Refused] = []
        var ids: [String: Int] = [:]
        var emails: [String: Int] = [:]
        for row in table {
            do throws(RosterError) {
                let name = try row.nonEmpty("name")
                let email = row["email"]
                if !email.isEmpty, let line = emails[email.lowercased()] { throw row.error("e-mail \(email) is also on line \(line)") }
                let given = columns["teacher_id"] == nil || row["teacher_id"].isEmpty ? nil : try row.identifier("teacher_id")
                let namesakes = byName[name] ?? []
                let match =
                    given.flatMap { byID[$0] } ?? (email.isEmpty ? nil : byEmail[email.lowercased()])
                    ?? (namesakes.count == 1 ? namesakes[0] : nil)
                let id = match?.id ?? given ?? madeID(school: school, key: email.isEmpty ? name : email.lowercased())
                if let other = current.teachers[id], other.schoolID != school {
                    throw row.error("teacher id '\(id)' is another school's; leave the id column empty or choose another")
                }
                if let line = ids[id] { throw row.error("teacher '\(id)' is also on line \(line)") }
                let teacher = try row.teacher(school: school, id: id)
                ids[id] = row.line
                if !email.isEmpty { emails[email.lowercased()] = row.line }
                teachers.append(teacher)
            } catch {
                refused.append(StudentsUpload.Refused(line: row.line, reason: error.reason))
            }
        }
        teachers.sort { $0.id < $1.id }
        let listed = Dictionary(teachers.map { ($0.id, $0) }) { first, _ in first }
        var problem: String?
        if !teachers.contains(where: { $0.has(.admin) }) {
            problem = "the school would have no admin (관리): keep at least one teacher with that role"
        } else if let uploader, byID[uploader] != nil, listed[uploader]?.has(.admin) != true {
            problem = "you would no longer be an admin of the school: keep your own row with the role 관리"
        }
        return TeachersUpload(
            teachers: teachers, refused: refused, added: teachers.filter { byID[$0.id] == nil },
            left: before.filter { listed[$0.id] == nil },
            changed: teachers.compactMap { after in byID[after.id].flatMap { $0 != after ? Changed(before: $0, after: after) : nil } },
            problem: problem)
    }

    /// A new teacher's id: `t` and 12 hex digits of the school and e-mail
    /// (or name): the same every time the file is read.
    package static func madeID(school: String, key: String) -> String {
        "t" + SHA256.hash(utf8: "\(school)\u{1}\(key)").prefix(6).map { String(format: "%02x", $0) }.joined()
    }
}
