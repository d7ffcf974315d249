import Crypto

/// A school's students as its admin uploaded them (NEIS's 학년, 반, 번호,
/// 성명, or the roster's own columns), each row checked as `students.csv`
/// checks it, and what putting them in place of the school's students now
/// would change: the preview an admin confirms before anything applies.
package struct StudentsUpload: Sendable {
    /// A row left out, with its line in the file and why.
    package struct Refused: Sendable, Equatable {
        package let line: Int
        package let reason: String

        package init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }
    }

    /// A student whose seat or name the upload changes.
    package struct Changed: Sendable, Equatable {
        package let before: Student
        package let after: Student
    }

    /// The school's students after the upload, in seat order.
    package let students: [Student]
    package let refused: [Refused]
    package let added: [Student]
    /// Students of the school that the upload does not list.
    package let left: [Student]
    /// Same student, another seat (a name change too, if any).
    package let moved: [Changed]
    /// Same student and seat, another name.
    package let renamed: [Changed]

    /// Headers a column is found by, Korean as NEIS and schools write them,
    /// or the roster's own.
    static let headers: [String: [String]] = [
        "student_id": ["student_id", "학생id", "학생 id", "id"],
        "grade": ["grade", "학년"],
        "class": ["class", "반"],
        "number": ["number", "번호", "번"],
        "name": ["name", "성명", "이름", "학생명"]
    ]

    /// Rows above the header a file may have (NEIS puts a title and a date there).
    static let headerSearch = 10

    /// Reads `rows` as the students of `school`, matched to `current`'s:
    /// by id when the upload has an id column and the id is the school's;
    /// otherwise by name, when one student of the school has it (the seat
    /// may have moved), one of those with it sits in the row's seat, or one
    /// alone sits a grade below (the new school year's file). A
    /// student matched keeps their id (their records follow them); a new
    /// one gets an id made from the school, name and first seat, the same
    /// every time the file is read.
    package static func read(_ rows: [CSV.Row], school: String, current: Roster) throws(RosterError) -> StudentsUpload {
        let file = "students"
        let (table, columns) = try Table.uploaded(
            rows, file: file, headers: headers, required: ["grade", "class", "number", "name"],
            missing: "no header row with 학년, 반, 번호 and 성명 (grade, class, number, name)")
        let before = current.students(school: school)
        let byID = Dictionary(before.map { ($0.id, $0) }) { first, _ in first }
        let byName = Dictionary(grouping: before, by: \.name)
        var students: [Student] = []
        var refused: [Refused] = []
        var seats: [String: Int] = [:]
        var ids: [String: Int] = [:]
        for table in table {
            do throws(RosterError) {
                let grade = try table.positive("grade")
                let classNumber = try table.positive("class")
                let number = try table.positive("number")
                let name = try table.nonEmpty("name")
                try table.checkSeat(grade: grade, classNumber: classNumber, number: number)
                let seat = "\(grade)-\(classNumber)-\(number)"
                if let line = seats[seat] { throw table.error("\(grade)학년 \(classNumber)반 \(number)번 is also on line \(line)") }
                let given = columns["student_id"] == nil || table["student_id"].isEmpty ? nil : try table.identifier("student_id")
                let namesakes = byName[name] ?? []
                // Namesakes: the one in the row's seat, else the one alone a grade below (진급).
                let promoted = namesakes.filter { $0.grade == grade - 1 }
                let match =
                    given.flatMap { byID[$0] }
                    ?? (namesakes.count == 1
                        ? namesakes[0]
                        : namesakes.first { $0.grade == grade && $0.classNumber == classNumber && $0.number == number }
                            ?? (promoted.count == 1 ? promoted[0] : nil))
                let id = match?.id ?? given ?? madeID(school: school, name: name, seat: seat)
                if let line = ids[id] { throw table.error("student '\(id)' is also on line \(line)") }
                seats[seat] = table.line
                ids[id] = table.line
                students.append(
                    Student(
                        schoolID: school, id: id, grade: grade, classNumber: classNumber, number: number, name: name,
                        photoURL: match?.photoURL ?? ""))
            } catch {
                refused.append(Refused(line: table.line, reason: error.reason))
            }
        }
        students.sort { ($0.grade, $0.classNumber, $0.number) < ($1.grade, $1.classNumber, $1.number) }
        let listed = Set(students.map(\.id))
        var added: [Student] = []
        var moved: [Changed] = []
        var renamed: [Changed] = []
        for student in students {
            guard let previous = byID[student.id] else {
                added.append(student)
                continue
            }
            if (previous.grade, previous.classNumber, previous.number) != (student.grade, student.classNumber, student.number) {
                moved.append(Changed(before: previous, after: student))
            } else if previous.name != student.name {
                renamed.append(Changed(before: previous, after: student))
            }
        }
        return StudentsUpload(
            students: students, refused: refused, added: added, left: before.filter { !listed.contains($0.id) }, moved: moved,
            renamed: renamed)
    }

    /// A new student's id: `s` and 12 hex digits of the school, name and seat.
    package static func madeID(school: String, name: String, seat: String) -> String {
        "s" + SHA256.hash(utf8: "\(school)\u{1}\(name)\u{1}\(seat)").prefix(6).map { String(format: "%02x", $0) }.joined()
    }
}

extension Table {
    /// The rows of an uploaded table under its header row, found among the
    /// first `StudentsUpload.headerSearch` rows by `headers`' names (Korean
    /// as schools write them, or the roster's own) with every `required`
    /// column; a short row (a spreadsheet leaves trailing empty cells out)
    /// reads as empty cells. Throws `missing` when no row is a header.
    static func uploaded(
        _ rows: [CSV.Row], file: String, headers: [String: [String]], required: [String], missing: String
    ) throws(RosterError) -> (rows: [Row], columns: [String: Int]) {
        func columns(of row: CSV.Row) -> [String: Int]? {
            let names = row.fields.map { $0.trimmingWhitespace().lowercased() }
            var columns: [String: Int] = [:]
            for (column, aliases) in headers {
                if let index = names.firstIndex(where: aliases.contains) { columns[column] = index }
            }
            return required.allSatisfy { columns[$0] != nil } ? columns : nil
        }
        guard let headerIndex = rows.prefix(StudentsUpload.headerSearch).firstIndex(where: { columns(of: $0) != nil }),
            let found = columns(of: rows[headerIndex])
        else { throw RosterError(file: file, line: rows.first?.line, reason: missing) }
        let width = (found.values.max() ?? 0) + 1
        let table = rows[(headerIndex + 1)...].map { row in
            Row(
                file: file, line: row.line, fields: row.fields + Array(repeating: "", count: max(0, width - row.fields.count)),
                columns: found)
        }
        return (table, found)
    }
}
