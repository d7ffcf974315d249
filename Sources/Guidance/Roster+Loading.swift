import Foundation

/// A roster file that cannot be used; start-up stops with this message.
public struct RosterError: Error, CustomStringConvertible, Sendable {
    public let file: String
    public let line: Int?
    public let reason: String

    public var description: String {
        line.map { "\(file):\($0): \(reason)" } ?? "\(file): \(reason)"
    }
}

extension Roster {
    /// Reads `schools.csv`, `students.csv`, `teachers.csv` and the optional
    /// `tokens.csv` and `reasons.csv` from `directory`. Columns are found by
    /// header name; the first broken row stops loading.
    public static func load(from directory: String) throws(RosterError) -> Roster {
        let base = URL(fileURLWithPath: directory)
        func path(_ name: String) -> String { base.appendingPathComponent(name).path }
        let tokensPresent = FileManager.default.fileExists(atPath: path("tokens.csv"))
        let reasonsPresent = FileManager.default.fileExists(atPath: path("reasons.csv"))
        return try parse(
            schools: read(path("schools.csv")),
            students: read(path("students.csv")),
            teachers: read(path("teachers.csv")),
            tokens: tokensPresent ? read(path("tokens.csv")) : nil,
            reasons: reasonsPresent ? read(path("reasons.csv")) : nil)
    }

    private static func read(_ path: String) throws(RosterError) -> String {
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RosterError(file: name, line: nil, reason: "cannot read \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw RosterError(file: name, line: nil, reason: "not valid UTF-8")
        }
        return text
    }

    /// Builds a roster from file contents; `tokens` nil means authentication is off.
    public static func parse(schools: String, students: String, teachers: String, tokens: String? = nil, reasons: String? = nil) throws(RosterError) -> Roster {
        var reasonsBySchool: [String: [Reason]] = [:]
        if let reasons {
            for row in try Table(file: "reasons.csv", text: reasons, columns: ["school_id", "code", "label", "requires_detail"]).rows {
                let code = try row.nonEmpty("code")
                guard code.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                    throw row.error("code '\(code)' may hold only letters, digits, '_' and '-'")
                }
                let requires = try row.bool("requires_detail")
                reasonsBySchool[try row.nonEmpty("school_id"), default: []].append(Reason(code: code, label: try row.nonEmpty("label"), requiresDetail: requires))
            }
        }

        var schoolMap: [String: School] = [:]
        for row in try Table(file: "schools.csv", text: schools, columns: ["school_id", "name", "timezone", "digest_time"]).rows {
            let id = try row.identifier("school_id")
            guard schoolMap[id] == nil else { throw row.error("school '\(id)' is listed twice") }
            let zoneName = try row.nonEmpty("timezone")
            guard let zone = TimeZone(identifier: zoneName) else { throw row.error("unknown time zone '\(zoneName)'") }
            let time = try row.nonEmpty("digest_time")
            guard let minute = Roster.minuteOfDay(time) else { throw row.error("digest_time '\(time)' is not HH:MM") }
            var catalogue = Reason.defaults
            for reason in reasonsBySchool[id] ?? [] {
                catalogue.removeAll { $0.code == reason.code }
                catalogue.append(reason)
            }
            schoolMap[id] = School(
                id: id, name: try row.nonEmpty("name"), timeZone: zone, digestMinute: minute,
                reasons: Dictionary(uniqueKeysWithValues: catalogue.map { ($0.code, $0) }), reasonOrder: catalogue.map(\.code))
        }
        for school in reasonsBySchool.keys where schoolMap[school] == nil {
            throw RosterError(file: "reasons.csv", line: nil, reason: "unknown school '\(school)'")
        }

        var studentMap: [StudentKey: Student] = [:]
        var studentIDs: Set<String> = []
        var grades: [String: Set<Int>] = [:]
        for row in try Table(file: "students.csv", text: students, columns: ["school_id", "student_id", "grade", "class", "number", "name", "photo_url"]).rows {
            let school = try row.identifier("school_id")
            guard schoolMap[school] != nil else { throw row.error("unknown school '\(school)'") }
            let student = Student(
                schoolID: school, id: try row.identifier("student_id"), grade: try row.positive("grade"),
                classNumber: try row.positive("class"), number: try row.positive("number"),
                name: try row.nonEmpty("name"), photoURL: row["photo_url"])
            guard studentIDs.insert("\(school)/\(student.id)").inserted else {
                throw row.error("student '\(student.id)' is listed twice")
            }
            let key = StudentKey(schoolID: school, grade: student.grade, classNumber: student.classNumber, number: student.number)
            if let other = studentMap[key] {
                throw row.error("grade \(student.grade) class \(student.classNumber) number \(student.number) is already student '\(other.id)'")
            }
            studentMap[key] = student
            grades[school, default: []].insert(student.grade)
        }

        var teacherMap: [String: Teacher] = [:]
        for row in try Table(file: "teachers.csv", text: teachers, columns: ["school_id", "teacher_id", "name", "email", "role", "grade", "class"]).rows {
            let school = try row.identifier("school_id")
            guard schoolMap[school] != nil else { throw row.error("unknown school '\(school)'") }
            let id = try row.identifier("teacher_id")
            guard teacherMap[id] == nil else { throw row.error("teacher '\(id)' is listed twice") }
            let roleName = try row.nonEmpty("role")
            guard let role = Teacher.Role(rawValue: roleName) else {
                throw row.error("role '\(roleName)' is not one of homeroom, volunteer_duty, gate, admin")
            }
            let grade = try row.optionalPositive("grade")
            let classNumber = try row.optionalPositive("class")
            switch role {
            case .homeroom where grade == nil || classNumber == nil:
                throw row.error("a homeroom teacher needs grade and class")
            case .volunteerDuty where grade == nil:
                throw row.error("a volunteer_duty teacher needs a grade")
            default: break
            }
            teacherMap[id] = Teacher(
                schoolID: school, id: id, name: try row.nonEmpty("name"), email: row["email"], role: role,
                grade: grade, classNumber: role == .homeroom ? classNumber : nil)
        }

        var tokenMap: [UInt64: [(digest: [UInt8], teacherID: String)]] = [:]
        if let tokens {
            for row in try Table(file: "tokens.csv", text: tokens, columns: ["token_sha256", "teacher_id"]).rows {
                let hex = try row.nonEmpty("token_sha256")
                guard let digest = SHA256.digest(fromHex: hex) else {
                    throw row.error("token_sha256 must be 64 hexadecimal digits")
                }
                let teacher = try row.nonEmpty("teacher_id")
                guard teacherMap[teacher] != nil else { throw row.error("unknown teacher '\(teacher)'") }
                tokenMap[tokenBucket(digest), default: []].append((digest, teacher))
            }
        }

        return Roster(
            schools: schoolMap, students: studentMap, teachers: teacherMap, tokens: tokenMap,
            authenticationEnabled: tokens != nil, grades: grades)
    }

    /// "08:50" → 530.
    static func minuteOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
              let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return hour * 60 + minute
    }
}

/// A CSV file with a header row; columns are found by name.
private struct Table {
    struct Row {
        let file: String
        let line: Int
        let values: [String: String]

        subscript(column: String) -> String { values[column] ?? "" }

        func error(_ reason: String) -> RosterError { RosterError(file: file, line: line, reason: reason) }

        func nonEmpty(_ column: String) throws(RosterError) -> String {
            let value = self[column]
            guard !value.isEmpty else { throw error("\(column) is empty") }
            return value
        }

        /// Ids appear in URLs and Kafka keys: no '/', no spaces.
        func identifier(_ column: String) throws(RosterError) -> String {
            let value = try nonEmpty(column)
            guard !value.contains("/"), !value.contains(where: \.isWhitespace) else {
                throw error("\(column) '\(value)' must not contain '/' or spaces")
            }
            return value
        }

        func positive(_ column: String) throws(RosterError) -> Int {
            let value = self[column]
            guard let number = Int(value), number > 0 else {
                throw error("\(column) '\(value)' is not a positive whole number")
            }
            return number
        }

        func optionalPositive(_ column: String) throws(RosterError) -> Int? {
            self[column].isEmpty ? nil : try positive(column)
        }

        func bool(_ column: String) throws(RosterError) -> Bool {
            switch self[column].lowercased() {
            case "true", "yes", "1": return true
            case "false", "no", "0", "": return false
            default: throw error("\(column) '\(self[column])' is not true or false")
            }
        }
    }

    let rows: [Row]

    init(file: String, text: String, columns: [String]) throws(RosterError) {
        let parsed: [CSV.Row]
        do {
            parsed = try CSV.parse(text)
        } catch {
            throw RosterError(file: file, line: error.line, reason: error.reason)
        }
        guard let header = parsed.first else { throw RosterError(file: file, line: nil, reason: "no header row") }
        let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        for column in columns where !names.contains(column) {
            throw RosterError(file: file, line: header.line, reason: "missing column '\(column)'")
        }
        rows = try parsed.dropFirst().map { row throws(RosterError) in
            guard row.fields.count == names.count else {
                throw RosterError(file: file, line: row.line, reason: "\(row.fields.count) fields, the header has \(names.count)")
            }
            var values: [String: String] = [:]
            for (name, value) in zip(names, row.fields) {
                values[name] = value.trimmingCharacters(in: .whitespaces)
            }
            return Row(file: file, line: row.line, values: values)
        }
    }
}
