import Common

/// One version of a school's students as the school applied it (관리 →
/// 명부): what carries it to every replica of both services, which serve it
/// in place of the folder's students of that school. Versions count up
/// from 1 per school; putting an earlier one back is a new version with its
/// students, saying which it `restores`.
package struct RosterVersion: Sendable, Equatable {
    package let schoolId: String
    package let version: Int
    /// In seat order.
    package let students: [Student]
    /// The teacher who applied it, and when (RFC 3339, UTC).
    package let madeBy: String
    package let madeAt: String
    package let restores: Int?

    package static let schemaVersion = 1

    package init(schoolId: String, version: Int, students: [Student], madeBy: String, madeAt: String, restores: Int? = nil) {
        self.schoolId = schoolId
        self.version = version
        self.students = students
        self.madeBy = madeBy
        self.madeAt = madeAt
        self.restores = restores
    }

    package var json: [UInt8] {
        var writer = JSONWriter(capacity: 256 + students.count * 96)
        writer.field("schemaVersion", RosterVersion.schemaVersion)
        writer.field("schoolId", schoolId)
        writer.field("version", version)
        writer.field("madeBy", madeBy)
        writer.field("madeAt", madeAt)
        if let restores { writer.field("restores", restores) }
        writer.array("students", students) { writer, student in
            writer.field("studentId", student.id)
            writer.field("grade", student.grade)
            writer.field("class", student.classNumber)
            writer.field("number", student.number)
            writer.field("name", student.name)
        }
        return writer.finish()
    }

    /// Reads a version as `json` writes it; every student checked as
    /// `students.csv` checks a row, and no seat or id twice.
    package init(json bytes: [UInt8]) throws(FieldError) {
        let fields = JSONFields(try JSONReader.object(bytes))
        guard try fields.integer("schemaVersion") == RosterVersion.schemaVersion else {
            throw FieldError(field: "schemaVersion", message: "is not \(RosterVersion.schemaVersion)")
        }
        let school = try fields.string("schoolId")
        guard case .array(let items)? = fields.object["students"] else {
            throw FieldError(field: "students", message: "must be an array")
        }
        var students: [Student] = []
        var seats: Set<[Int]> = []
        var ids: Set<String> = []
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item else { throw FieldError(field: "students[\(index)]", message: "must be an object") }
            let student = JSONFields(object, path: "students[\(index)]")
            let made = Student(
                schoolID: school, id: try student.string("studentId"), grade: try student.integer("grade", in: Student.seatRange),
                classNumber: try student.integer("class", in: Student.seatRange),
                number: try student.integer("number", in: Student.seatRange), name: try student.string("name"), photoURL: "")
            guard ids.insert(made.id).inserted, seats.insert([made.grade, made.classNumber, made.number]).inserted else {
                throw FieldError(field: "students[\(index)]", message: "repeats a student id or a seat")
            }
            students.append(made)
        }
        var restores: Int?
        if let value = fields.object["restores"], value != .null { restores = try fields.integer("restores", in: 1...Int(Int32.max)) }
        self.init(
            schoolId: school, version: try fields.integer("version", in: 1...Int(Int32.max)), students: students,
            madeBy: try fields.string("madeBy"), madeAt: try fields.string("madeAt"), restores: restores)
    }
}

extension Roster {
    /// This roster with `version`'s students in place of its school's, and
    /// every other school's as they are (ids repeat across schools).
    package func applying(_ version: RosterVersion) throws(RosterError) -> Roster {
        let school = version.schoolId
        guard schools[school] != nil else { throw RosterError(file: "version", line: nil, reason: "unknown school '\(school)'") }
        let others = schools.keys.sorted().filter { $0 != school }.flatMap { students(school: $0) }
        var directory = StudentDirectory(
            capacity: others.count + version.students.count, textBytes: (others.count + version.students.count) * 64)
        var grades = self.grades
        grades[school] = Set(version.students.map(\.grade))
        for student in others + version.students {
            do throws(StudentDirectory.Conflict) {
                try directory.insert(student)
            } catch {
                throw RosterError(
                    file: "version", line: nil, reason: "student '\(student.id)' of \(student.schoolID) cannot be seated: \(error)")
            }
        }
        directory.finishLoading()
        return Roster(
            schools: schools, students: directory, teachers: teachers, tokens: tokens, authenticationEnabled: authenticationEnabled,
            grades: grades, webhooks: webhooks, rules: rules, teachersBySchool: teachersBySchool, teachersByEmail: teachersByEmail,
            tokenFingerprints: tokenFingerprints)
    }
}
