import Common
import Foundation

/// One version of a school's students as the school applied it (관리 →
/// 명부): what carries it to every replica of both services, which serve it
/// in place of the folder's students of that school. Versions count up
/// from 1 per school; putting an earlier one back is a new version with its
/// students, saying which it `restores`.
package struct RosterVersion: Sendable, Equatable {
    package let schoolId: String
    package let version: Int
    /// In seat order; nil keeps those in service (a version of the
    /// teachers or a table alone: one made while a 진급 version waits for
    /// its day must not bring this year's students back on that day).
    package let students: [Student]?
    /// The school's teachers, when the version sets them (관리 → 명부 →
    /// 교사); nil keeps those in service.
    package let teachers: [Teacher]?
    /// The school's own tables the version sets (관리 → 명부 → 학교 설정),
    /// each the text of its file; a table it does not carry stays as it is.
    package let tables: [SchoolTable: String]
    /// The school-local day it takes effect (`YYYY-MM-DD`: 진급, the new
    /// school year's roster uploaded ahead); nil: at once.
    package let effective: String?
    /// The teacher who applied it, and when (RFC 3339, UTC).
    package let madeBy: String
    package let madeAt: String
    package let restores: Int?

    package static let schemaVersion = 1

    package init(
        schoolId: String, version: Int, students: [Student]?, teachers: [Teacher]? = nil, tables: [SchoolTable: String] = [:],
        effective: String? = nil, madeBy: String, madeAt: String, restores: Int? = nil
    ) {
        self.schoolId = schoolId
        self.version = version
        self.students = students
        self.teachers = teachers
        self.tables = tables
        self.effective = effective
        self.madeBy = madeBy
        self.madeAt = madeAt
        self.restores = restores
    }

    package var json: [UInt8] {
        var writer = JSONWriter(capacity: 256 + (students?.count ?? 0) * 96)
        writer.field("schemaVersion", RosterVersion.schemaVersion)
        writer.field("schoolId", schoolId)
        writer.field("version", version)
        writer.field("madeBy", madeBy)
        writer.field("madeAt", madeAt)
        if let restores { writer.field("restores", restores) }
        if let effective { writer.field("effective", effective) }
        if let students { writeStudents(&writer, students) }
        if let teachers {
            writer.array("teachers", teachers) { writer, teacher in
                writer.field("teacherId", teacher.id)
                writer.field("name", teacher.name)
                writer.field("email", teacher.email)
                writer.field("roles", teacher.roleText)
                if let grade = teacher.grade { writer.field("grade", grade) }
                if let classNumber = teacher.classNumber { writer.field("class", classNumber) }
            }
        }
        if !tables.isEmpty {
            writer.object("tables") { writer in
                for table in SchoolTable.allCases { if let text = tables[table] { writer.field(named: table.rawValue, text) } }
            }
        }
        return writer.finish()
    }

    private func writeStudents(_ writer: inout JSONWriter, _ students: [Student]) {
        writer.array("students", students) { writer, student in
            writer.student(student)
            if !student.photoURL.isEmpty { writer.field("photoUrl", student.photoURL) }
        }
    }

    /// Reads a version as `json` writes it; every student checked as
    /// `students.csv` checks a row, and no seat or id twice.
    package init(json bytes: [UInt8]) throws(FieldError) {
        let fields = JSONFields(try JSONReader.object(bytes))
        guard try fields.integer("schemaVersion") == RosterVersion.schemaVersion else {
            throw FieldError(field: "schemaVersion", message: "is not \(RosterVersion.schemaVersion)")
        }
        let school = try fields.string("schoolId")
        var students: [Student]?
        switch fields.object["students"] {
        case .array(let items)?: students = try RosterVersion.students(items, school: school)
        case nil, .null?: students = nil
        default: throw FieldError(field: "students", message: "must be an array")
        }
        var restores: Int?
        if let value = fields.object["restores"], value != .null { restores = try fields.integer("restores", in: 1...Int(Int32.max)) }
        var teachers: [Teacher]?
        if case .array(let items)? = fields.object["teachers"] {
            teachers = try RosterVersion.teachers(items, school: school)
        }
        var tables: [SchoolTable: String] = [:]
        if case .object(let object)? = fields.object["tables"] {
            for (name, value) in object.fields.map({ ($0.key, $0.value) }) {
                guard let table = SchoolTable(rawValue: name), case .string(let text) = value else {
                    throw FieldError(field: "tables.\(name)", message: "is not a school table's text")
                }
                tables[table] = text
            }
        }
        let effective = try fields.optionalString("effective")
        if let effective, Timestamp.civilDay(effective) == nil { throw FieldError(field: "effective", message: "is not YYYY-MM-DD") }
        self.init(
            schoolId: school, version: try fields.integer("version", in: 1...Int(Int32.max)), students: students, teachers: teachers,
            tables: tables, effective: effective, madeBy: try fields.string("madeBy"), madeAt: try fields.string("madeAt"),
            restores: restores)
    }
}

extension RosterVersion {
    /// The students of a version as `json` writes them, each checked as a
    /// row of `students.csv` is, no seat or id twice.
    fileprivate static func students(_ items: [JSONValue], school: String) throws(FieldError) -> [Student] {
        var students: [Student] = []
        var seats: Set<[Int]> = []
        var ids: Set<String> = []
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item else { throw FieldError(field: "students[\(index)]", message: "must be an object") }
            let student = JSONFields(object, path: "students[\(index)]")
            let made = Student(
                schoolID: school, id: try student.string("studentId"), grade: try student.integer("grade", in: Student.seatRange),
                classNumber: try student.integer("class", in: Student.seatRange),
                number: try student.integer("number", in: Student.seatRange), name: try student.string("name"),
                photoURL: try student.optionalString("photoUrl") ?? "")
            // As students.csv's photo_url: fetched by teachers' browsers, so https only.
            guard made.photoURL.isEmpty || made.photoURL.lowercased().hasPrefix("https://") else {
                throw FieldError(field: "students[\(index)].photoUrl", message: "must be an https:// address")
            }
            guard ids.insert(made.id).inserted, seats.insert([made.grade, made.classNumber, made.number]).inserted else {
                throw FieldError(field: "students[\(index)]", message: "repeats a student id or a seat")
            }
            students.append(made)
        }
        return students
    }

    /// The school-local day from which it is served: its `effective` day,
    /// or the day it was made. Versions are served in this order, then by
    /// number, so a replica that reads them all at once serves what one
    /// that applied each on its day serves.
    package func day(in zone: TimeZone) -> String {
        effective ?? Timestamp.parse(madeAt).map { Timestamp.localDate($0, in: zone) } ?? ""
    }

    /// The teachers of a version as `json` writes them, each checked as a
    /// row of `teachers.csv` is, no id twice.
    fileprivate static func teachers(_ items: [JSONValue], school: String) throws(FieldError) -> [Teacher] {
        var teachers: [Teacher] = []
        var ids: Set<String> = []
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item else { throw FieldError(field: "teachers[\(index)]", message: "must be an object") }
            let fields = JSONFields(object, path: "teachers[\(index)]")
            let id = try fields.string("teacherId")
            let number = { (name: String) throws(FieldError) -> String in
                object[name] == nil || object[name] == .null ? "" : String(try fields.integer(name, in: Student.seatRange))
            }
            let row = Table.Row(
                file: "version", line: index + 1,
                fields: [
                    try fields.string("name"), try fields.string("email"), try fields.string("roles"), try number("grade"),
                    try number("class")
                ],
                columns: ["name": 0, "email": 1, "role": 2, "grade": 3, "class": 4])
            do throws(RosterError) {
                teachers.append(try row.teacher(school: school, id: id))
            } catch {
                throw FieldError(field: "teachers[\(index)]", message: error.reason)
            }
            guard ids.insert(id).inserted else { throw FieldError(field: "teachers[\(index)]", message: "repeats a teacher id") }
        }
        return teachers
    }
}

extension JSONWriter {
    /// A student as a roster version and the roster's previews write one.
    package mutating func student(_ student: Student) {
        field("studentId", student.id)
        field("grade", student.grade)
        field("class", student.classNumber)
        field("number", student.number)
        field("name", student.name)
    }
}

extension Roster {
    /// This roster with each school's version's students in place of the
    /// school's (ids repeat across schools; every other school as it is).
    /// Students a version no longer lists join the school's departed ones
    /// (`knownStudent`); one it lists again leaves them. Each school's
    /// students get a directory of their own beside the folder's, so a
    /// version costs its school, not the district.
    /// `earlier`: a roster this one replaces (the folder read again under
    /// the versions), whose departed students and teachers, and its
    /// schools' new years' first days, are kept.
    package func applying(_ versions: [RosterVersion], departedFrom earlier: Roster? = nil) throws(RosterError) -> Roster {
        // A school's students, teachers and each table are the newest any
        // of its versions set (one applied at a time or all at start, the
        // same roster).
        var latest: [String: [Student]] = [:]
        var latestTeachers: [String: [Teacher]] = [:]
        var latestTables: [String: [SchoolTable: String]] = [:]
        // The new years' first days of the roster this one replaces stay, as its departed do.
        var yearStarts: [String: Set<Int>] = (earlier?.schools ?? [:]).compactMapValues {
            $0.yearStarts.isEmpty ? nil : Set($0.yearStarts)
        }
        for version in versions {
            guard schools[version.schoolId] != nil else {
                throw RosterError(file: "version", line: nil, reason: "unknown school '\(version.schoolId)'")
            }
            if let students = version.students { latest[version.schoolId] = students }
            if let teachers = version.teachers { latestTeachers[version.schoolId] = teachers }
            if !version.tables.isEmpty { latestTables[version.schoolId, default: [:]].merge(version.tables) { $1 } }
            if version.students != nil, let day = version.effective.flatMap(Timestamp.civilDay) {
                yearStarts[version.schoolId, default: []].insert(day)
            }
        }
        var departed = self.departed.merging(earlier?.departed ?? [:]) { mine, kept in kept.merging(mine) { _, mine in mine } }
        for (school, listed) in latest.mapValues({ Set($0.map(\.id)) }) {
            var gone = departed[school] ?? [:]
            for student in students(school: school) where !listed.contains(student.id) { gone[student.id] = student }
            for id in listed { gone[id] = nil }
            departed[school] = gone.isEmpty ? nil : gone
        }
        var versioned = versionedStudents
        var grades = self.grades
        for (school, students) in latest {
            grades[school] = Set(students.map(\.grade))
            do throws(StudentDirectory.Conflict) {
                versioned[school] = try StudentDirectory.school(students)
            } catch {
                throw RosterError(file: "version", line: nil, reason: "a version of \(school) cannot seat its students: \(error)")
            }
        }
        var teachers = self.teachers
        var departedTeachers = self.departedTeachers.merging(earlier?.departedTeachers ?? [:]) { mine, _ in mine }
        for (school, listed) in latestTeachers.sorted(by: { $0.key < $1.key }) {
            let kept = Set(listed.map(\.id))
            for old in teachersBySchool[school] ?? [] where !kept.contains(old.id) {
                teachers[old.id] = nil
                departedTeachers[old.id] = old
            }
            for teacher in listed {
                if let other = teachers[teacher.id], other.schoolID != school {
                    throw RosterError(file: "version", line: nil, reason: "teacher '\(teacher.id)' of \(school) is \(other.schoolID)'s")
                }
                teachers[teacher.id] = teacher
                departedTeachers[teacher.id] = nil
            }
        }
        // Tokens follow their teachers: a teacher a version dropped holds none.
        let changedTeachers = !latestTeachers.isEmpty
        let tokens =
            changedTeachers
            ? self.tokens.compactMapValues { entries in
                let kept = entries.compactMap { entry in teachers[entry.teacher.id].map { (digest: entry.digest, teacher: $0) } }
                return kept.isEmpty ? nil : kept
            } : self.tokens
        let indexes = changedTeachers ? Roster.indexes(teachers) : (teachersBySchool, teachersByEmail)
        var schools = self.schools
        var rules = self.rules
        // A new school year served: its rules' windows start again on its first day.
        for (school, days) in yearStarts {
            let all = Set(schools[school]?.yearStarts ?? []).union(days).sorted()
            schools[school]?.yearStarts = all
            rules[school] = rules[school]?.map { rule in
                var rule = rule
                rule.yearStarts = all
                return rule
            }
        }
        for (school, tables) in latestTables.sorted(by: { $0.key < $1.key }) {
            guard let base = schools[school] else { continue }
            let (served, kept) = try Roster.applying(tables, to: base, rules: rules[school] ?? [])
            schools[school] = served
            rules[school] = kept.isEmpty ? nil : kept
        }
        return Roster(
            schools: schools, students: students, teachers: teachers, tokens: tokens, authenticationEnabled: authenticationEnabled,
            grades: grades, webhooks: webhooks, rules: rules, teachersBySchool: indexes.0, teachersByEmail: indexes.1,
            tokenFingerprints: changedTeachers ? tokenFingerprints.filter { teachers[$0.key] != nil } : tokenFingerprints,
            versionedStudents: versioned, departed: departed, departedTeachers: departedTeachers)
    }

    /// This roster with `version`'s students in place of its school's.
    package func applying(_ version: RosterVersion) throws(RosterError) -> Roster { try applying([version]) }
}
