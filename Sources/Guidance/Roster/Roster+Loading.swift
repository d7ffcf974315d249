import Common
import Crypto
import Foundation

/// A roster file that cannot be used; start-up stops with this message.
package struct RosterError: Error, CustomStringConvertible, Sendable {
    package let file: String
    package let line: Int?
    package let reason: String

    package var description: String {
        line.map { "\(file):\($0): \(reason)" } ?? "\(file): \(reason)"
    }
}

extension Roster {
    /// Reads `schools.csv`, `students.csv`, `teachers.csv` and the optional
    /// `tokens.csv`, `reasons.csv`, `webhooks.csv`, `rules.csv`, `calendar.csv`
    /// and `service_slots.csv` from `directory`. Columns are found by
    /// header name; the first broken row stops loading.
    package static func load(from directory: String) throws(RosterError) -> Roster {
        let base = URL(fileURLWithPath: directory)
        // Each file is read in chunks as it is parsed: a district's
        // students.csv is 11 MB and need not sit in memory.
        let roster = try parse { (name: String) throws(RosterError) -> CSVSource? in
            let path = base.appendingPathComponent(name).path
            let optional = !["schools.csv", "students.csv", "teachers.csv"].contains(name)
            if optional && !FileManager.default.fileExists(atPath: path) { return nil }
            return .file(path)
        }
        Memory.releaseFreePages()
        return roster
    }

    /// Builds a roster from file contents; `tokens` nil means authentication is off.
    package static func parse(
        schools: String, students: String, teachers: String, tokens: String? = nil, reasons: String? = nil, webhooks: String? = nil,
        rules: String? = nil, calendar: String? = nil, serviceSlots: String? = nil
    ) throws(RosterError) -> Roster {
        let files = [
            "schools.csv": schools, "students.csv": students, "teachers.csv": teachers, "tokens.csv": tokens, "reasons.csv": reasons,
            "webhooks.csv": webhooks, "rules.csv": rules, "calendar.csv": calendar, "service_slots.csv": serviceSlots
        ]
        return try parse { name in (files[name] ?? nil).map(CSVSource.text) }
    }

    /// Where a roster file's bytes come from.
    enum CSVSource {
        case text(String)
        case file(String)

        /// Bytes and line breaks, read ahead in chunks for a file.
        var size: (bytes: Int, lines: Int) {
            switch self {
            case .text(let text):
                return (text.utf8.count, text.utf8.count { $0 == 10 })
            case .file(let path):
                guard let handle = FileHandle(forReadingAtPath: path) else { return (0, 0) }
                defer { try? handle.close() }
                var bytes = 0
                var lines = 0
                while let chunk = try? handle.read(upToCount: 65_536), !chunk.isEmpty {
                    bytes += chunk.count
                    lines += chunk.withUnsafeBytes { $0.count { $0 == 10 } }
                }
                return (bytes, lines)
            }
        }
    }

    /// Builds a roster from the files `source` names, each read when its turn
    /// comes; nil for an absent optional file. Each file is one step, and
    /// checks what it refers to against the steps before it.
    private static func parse(_ source: (String) throws(RosterError) -> CSVSource?) throws(RosterError) -> Roster {
        func required(_ name: String) throws(RosterError) -> CSVSource {
            guard let found = try source(name) else { throw RosterError(file: name, line: nil, reason: "missing") }
            return found
        }
        var reasons: [String: [Reason]] = [:]
        if let file = try source("reasons.csv") { reasons = try readReasons(file) }
        var schools = try readSchools(required("schools.csv"), reasons: reasons)
        if let file = try source("calendar.csv") { try readCalendar(file, into: &schools) }
        if let file = try source("service_slots.csv") { try readServiceSlots(file, into: &schools) }
        let (students, grades) = try readStudents(required("students.csv"), schools: schools)
        let teachers = try readTeachers(required("teachers.csv"), schools: schools)
        var tokens: [UInt64: [(digest: [UInt8], teacher: Teacher)]] = [:]
        let tokensFile = try source("tokens.csv")
        if let tokensFile { tokens = try readTokens(tokensFile, teachers: teachers) }
        var webhooks: [String: Webhook] = [:]
        if let file = try source("webhooks.csv") { webhooks = try readWebhooks(file, schools: schools) }
        var rules: [String: [SchoolRule]] = [:]
        if let file = try source("rules.csv") { rules = try readRules(file, schools: schools) }
        let indexes = indexes(teachers)
        return Roster(
            schools: schools, students: students, teachers: teachers, tokens: tokens,
            authenticationEnabled: tokensFile != nil, grades: grades, webhooks: webhooks, rules: rules,
            teachersBySchool: indexes.bySchool, teachersByEmail: indexes.byEmail,
            tokenFingerprints: tokens.values.joined().reduce(into: [:]) {
                $0[$1.teacher.id, default: []].insert(Roster.fingerprint($1.digest))
            })
    }

    /// `reasons.csv`: each school's own reasons, by school id.
    static func readReasons(_ file: CSVSource, fixed: [String: String] = [:]) throws(RosterError) -> [String: [Reason]] {
        var reasons: [String: [Reason]] = [:]
        try Table.forEach(
            file: "reasons.csv", source: file, columns: ["school_id", "code", "label", "requires_detail"], fixed: fixed
        ) {
            (row) throws(RosterError) in
            let code = try row.nonEmpty("code")
            guard code.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                throw row.error("code '\(code)' may hold only letters, digits, '_' and '-'")
            }
            let requires = try row.bool("requires_detail")
            let sessions = row["service_sessions"].isEmpty ? 1 : Int(row["service_sessions"]) ?? -1
            guard Reason.serviceSessionsRange.contains(sessions) else {
                throw row.error(
                    "service_sessions '\(row["service_sessions"])' is not a whole number from 0 to \(Reason.maxServiceSessions)")
            }
            let school = try row.nonEmpty("school_id")
            guard !(reasons[school] ?? []).contains(where: { $0.code == code }) else {
                throw row.error("school '\(school)' has a reason '\(code)' already")
            }
            reasons[school, default: []].append(
                Reason(code: code, label: try row.nonEmpty("label"), requiresDetail: requires, serviceSessions: sessions))
        }
        return reasons
    }

    /// `schools.csv`, each with the default reasons and its own from `reasons`
    /// (which must all name a school listed here).
    private static func readSchools(_ file: CSVSource, reasons: [String: [Reason]]) throws(RosterError) -> [String: School] {
        var schools: [String: School] = [:]
        try Table.forEach(file: "schools.csv", source: file, columns: ["school_id", "name", "timezone", "digest_time"]) {
            (row) throws(RosterError) in
            let id = try row.identifier("school_id")
            guard schools[id] == nil else { throw row.error("school '\(id)' is listed twice") }
            let zoneName = try row.nonEmpty("timezone")
            guard let zone = TimeZone(identifier: zoneName) else { throw row.error("unknown time zone '\(zoneName)'") }
            let time = try row.nonEmpty("digest_time")
            guard let minute = Roster.minuteOfDay(time) else { throw row.error("digest_time '\(time)' is not HH:MM") }
            let dueDays = row["service_due_days"].isEmpty ? nil : Int(row["service_due_days"]) ?? 0
            if let dueDays, !CommunityServicePolicy.dueDaysRange.contains(dueDays) {
                throw row.error(
                    "service_due_days '\(row["service_due_days"])' is not a whole number from 1 to \(CommunityServicePolicy.dueDaysRange.upperBound) (empty: no due date)"
                )
            }
            var school = School(
                id: id, name: try row.nonEmpty("name"), timeZone: zone, digestMinute: minute, reasons: [:], reasonOrder: []
            ).with(ownReasons: reasons[id] ?? [])
            school.service.dueDays = dueDays
            schools[id] = school
        }
        for school in reasons.keys where schools[school] == nil {
            throw RosterError(file: "reasons.csv", line: nil, reason: "unknown school '\(school)'")
        }
        return schools
    }

    /// `students.csv` as the directory of seats, and the grades each school has.
    private static func readStudents(_ file: CSVSource, schools: [String: School]) throws(RosterError) -> (
        StudentDirectory, [String: Set<Int>]
    ) {
        // Sized once from the file: growing by doubling would briefly hold two
        // copies of a district.
        let (bytes, lines) = file.size
        var directory = StudentDirectory(capacity: lines + 1, textBytes: bytes)
        var grades: [String: Set<Int>] = [:]
        try Table.forEach(
            file: "students.csv", source: file, columns: ["school_id", "student_id", "grade", "class", "number", "name", "photo_url"]
        ) { (row) throws(RosterError) in
            let school = try row.identifier("school_id")
            guard schools[school] != nil else { throw row.error("unknown school '\(school)'") }
            let student = Student(
                schoolID: school, id: try row.identifier("student_id"), grade: try row.positive("grade"),
                classNumber: try row.positive("class"), number: try row.positive("number"),
                name: try row.nonEmpty("name"), photoURL: row["photo_url"])
            try row.checkSeat(grade: student.grade, classNumber: student.classNumber, number: student.number)
            // A photo is fetched by teachers' browsers: only from an https
            // address (a `javascript:` or `http:` one was taken as it was).
            guard student.photoURL.isEmpty || student.photoURL.lowercased().hasPrefix("https://") else {
                throw row.error("photo_url must be empty or an https:// address")
            }
            do throws(StudentDirectory.Conflict) {
                try directory.insert(student)
            } catch {
                switch error {
                case .idListedTwice:
                    throw row.error("student '\(student.id)' is listed twice")
                case .seatTaken(let other):
                    throw row.error(
                        "grade \(student.grade) class \(student.classNumber) number \(student.number) is already student '\(other)'")
                case .tooManySchools:
                    throw row.error("students of more than \(Int(UInt16.max) + 1) schools; split the district")
                }
            }
            grades[school, default: []].insert(student.grade)
        }
        directory.finishLoading()
        return (directory, grades)
    }

    /// `teachers.csv`: `role` is one role or several joined by `+`
    /// (`homeroom+gate`); a homeroom teacher needs grade and class, a
    /// volunteer-duty teacher a grade (both apply to those roles only).
    private static func readTeachers(_ file: CSVSource, schools: [String: School]) throws(RosterError) -> [String: Teacher] {
        var teachers: [String: Teacher] = [:]
        try Table.forEach(
            file: "teachers.csv", source: file, columns: ["school_id", "teacher_id", "name", "email", "role", "grade", "class"]
        ) { (row) throws(RosterError) in
            let school = try row.identifier("school_id")
            guard schools[school] != nil else { throw row.error("unknown school '\(school)'") }
            let id = try row.identifier("teacher_id")
            guard teachers[id] == nil else { throw row.error("teacher '\(id)' is listed twice") }
            teachers[id] = try row.teacher(school: school, id: id)
        }
        return teachers
    }

    /// `tokens.csv`: SHA-256 digests of tokens, each of a listed teacher,
    /// bucketed by their first 8 bytes.
    private static func readTokens(_ file: CSVSource, teachers: [String: Teacher]) throws(RosterError) -> [UInt64: [(
        digest: [UInt8], teacher: Teacher
    )]] {
        var tokens: [UInt64: [(digest: [UInt8], teacher: Teacher)]] = [:]
        try Table.forEach(file: "tokens.csv", source: file, columns: ["token_sha256", "teacher_id"]) { (row) throws(RosterError) in
            let hex = try row.nonEmpty("token_sha256")
            guard let digest = SHA256.digest(fromHex: hex) else {
                throw row.error("token_sha256 must be 64 hexadecimal digits")
            }
            let id = try row.nonEmpty("teacher_id")
            guard let teacher = teachers[id] else { throw row.error("unknown teacher '\(id)'") }
            tokens[tokenBucket(digest), default: []].append((digest, teacher))
        }
        return tokens
    }

    /// `webhooks.csv`: at most one http(s) URL per school, with a
    /// `whsec_` secret that is never echoed.
    private static func readWebhooks(_ file: CSVSource, schools: [String: School]) throws(RosterError) -> [String: Webhook] {
        var webhooks: [String: Webhook] = [:]
        try Table.forEach(file: "webhooks.csv", source: file, columns: ["school_id", "url", "secret"]) { (row) throws(RosterError) in
            let school = try row.identifier("school_id")
            guard schools[school] != nil else { throw row.error("unknown school '\(school)'") }
            guard webhooks[school] == nil else { throw row.error("school '\(school)' has a webhook already; one per school") }
            let url = try row.nonEmpty("url")
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                let host = parsed.host, !host.isEmpty, !url.contains(where: \.isWhitespace)
            else {
                throw row.error("url '\(url)' is not an http:// or https:// URL")
            }
            let secret = try row.nonEmpty("secret")
            guard secret.hasPrefix("whsec_"), let key = Data(base64Encoded: String(secret.dropFirst(6))), key.count >= 16 else {
                throw row.error("secret must be whsec_ followed by the base64 of at least 16 random bytes")
            }
            webhooks[school] = Webhook(schoolID: school, url: url, secret: Array(key))
        }
        return webhooks
    }

    /// `rules.csv`: each school's rules that flag repeats, in file order.
    static func readRules(_ file: CSVSource, schools: [String: School], fixed: [String: String] = [:]) throws(RosterError) -> [String:
        [SchoolRule]]
    {
        var rules: [String: [SchoolRule]] = [:]
        try Table.forEach(
            file: "rules.csv", source: file, columns: ["school_id", "reason", "count", "days", "notify", "label"], fixed: fixed
        ) {
            (row) throws(RosterError) in
            let schoolID = try row.identifier("school_id")
            guard let school = schools[schoolID] else { throw row.error("unknown school '\(schoolID)'") }
            let reason = try row.nonEmpty("reason")
            guard reason == "*" || school.reason(reason) != nil else {
                throw row.error(
                    "reason '\(reason)' is not a reason of school '\(schoolID)' (its codes: \(school.reasonOrder.joined(separator: ", ")); * for any)"
                )
            }
            let count = Int(row["count"]) ?? 0
            guard SchoolRule.countRange.contains(count) else {
                throw row.error("count '\(row["count"])' is not a whole number from 2 to 100")
            }
            let days = Int(row["days"]) ?? 0
            guard SchoolRule.daysRange.contains(days) else { throw row.error("days '\(row["days"])' is not a whole number from 1 to 365") }
            var notify: Set<Teacher.Role> = []
            for name in try row.nonEmpty("notify").split(separator: "+", omittingEmptySubsequences: false).map({ $0.trimmingWhitespace() })
            {
                guard let role = Teacher.Role(rawValue: name), SchoolRule.notifiable.contains(role) else {
                    throw row.error(
                        "notify '\(name)' is not one of homeroom, volunteer_duty, admin (several are joined by +, e.g. homeroom+admin)")
                }
                guard notify.insert(role).inserted else { throw row.error("notify '\(name)' is given twice") }
            }
            var rule = SchoolRule(
                schoolID: schoolID, reason: reason == "*" ? nil : reason, count: count, days: days, notify: notify,
                label: try row.nonEmpty("label"), urgent: try row.bool("urgent"))
            rule.acrossYears = try row.bool("across_years")
            rule.yearStarts = school.yearStarts
            guard !(rules[schoolID] ?? []).contains(where: { $0.key == rule.key }) else {
                throw row.error("school '\(schoolID)' has a rule for \(reason) \(count) in \(days) days already")
            }
            rules[schoolID, default: []].append(rule)
        }
        return rules
    }

    /// `calendar.csv`: each school's holidays and vacations, `*` for every
    /// school; `end_date` empty for one day, else the last day off.
    static func readCalendar(_ file: CSVSource, into schools: inout [String: School], fixed: [String: String] = [:]) throws(RosterError) {
        try Table.forEach(file: "calendar.csv", source: file, columns: ["school_id", "date", "end_date", "name"], fixed: fixed) {
            (row) throws(RosterError) in
            let schoolID = try row.nonEmpty("school_id")
            guard schoolID == "*" || schools[schoolID] != nil else { throw row.error("unknown school '\(schoolID)' (* for every school)") }
            guard let first = Timestamp.civilDay(row["date"]) else { throw row.error("date '\(row["date"])' is not YYYY-MM-DD") }
            var last = first
            if !row["end_date"].isEmpty {
                guard let end = Timestamp.civilDay(row["end_date"]) else {
                    throw row.error("end_date '\(row["end_date"])' is not YYYY-MM-DD (empty for one day)")
                }
                guard end >= first, end - first < 366 else {
                    throw row.error("end_date \(row["end_date"]) must be on or after date \(row["date"]), within a year")
                }
                last = end
            }
            let name = try row.nonEmpty("name")
            for id in schoolID == "*" ? Array(schools.keys) : [schoolID] {
                schools[id]?.calendar.close(from: first, through: last, name: name)
            }
        }
    }

    /// `service_slots.csv`: when and where each school's 교내봉사 is served.
    static func readServiceSlots(_ file: CSVSource, into schools: inout [String: School], fixed: [String: String] = [:])
        throws(RosterError)
    {
        try Table.forEach(
            file: "service_slots.csv", source: file, columns: ["school_id", "weekday", "time", "place", "capacity"], fixed: fixed
        ) {
            (row) throws(RosterError) in
            let schoolID = try row.nonEmpty("school_id")
            guard schools[schoolID] != nil else { throw row.error("unknown school '\(schoolID)'") }
            guard let weekday = CommunityServiceSlot.weekdays.firstIndex(of: row["weekday"].lowercased()) else {
                throw row.error("weekday '\(row["weekday"])' is not one of mon, tue, wed, thu, fri")
            }
            let time = row["time"]
            guard Roster.minuteOfDay(time) != nil else { throw row.error("time '\(time)' is not HH:MM") }
            let capacity = Int(row["capacity"]) ?? 0
            guard CommunityServicePolicy.capacityRange.contains(capacity) else {
                throw row.error(
                    "capacity '\(row["capacity"])' is not a whole number from 1 to \(CommunityServicePolicy.capacityRange.upperBound)")
            }
            let slot = CommunityServiceSlot(weekday: weekday, time: time, place: try row.nonEmpty("place"), capacity: capacity)
            guard schools[schoolID]?.service.slots.contains(where: { $0.weekday == weekday && $0.time == time }) == false else {
                throw row.error("school '\(schoolID)' has a slot on \(row["weekday"]) at \(time) already")
            }
            schools[schoolID]?.service.slots.append(slot)
            schools[schoolID]?.service.slots.sort { ($0.weekday, $0.time) < ($1.weekday, $1.time) }
        }
    }

    /// 530 → "08:50": what `minuteOfDay` reads.
    package static func clock(_ minute: Int) -> String {
        (minute / 60 < 10 ? "0" : "") + String(minute / 60) + ":" + (minute % 60 < 10 ? "0" : "") + String(minute % 60)
    }

    /// "08:50" → 530.
    package static func minuteOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
            let hour = Int(parts[0]), let minute = Int(parts[1]),
            (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        return hour * 60 + minute
    }
}

/// A CSV file with a header row; columns are found by name. Rows are handed
/// out one at a time as the file is read.
enum Table {
    struct Row {
        let file: String
        let line: Int
        let fields: [String]
        let columns: [String: Int]
        /// Values of columns the file may leave out (a school's own table
        /// has no `school_id`: it is the school's).
        var fixed: [String: String] = [:]

        subscript(column: String) -> String {
            columns[column].map { fields[$0].trimmingWhitespace() } ?? fixed[column] ?? ""
        }

        func error(_ reason: String) -> RosterError { RosterError(file: file, line: line, reason: reason) }

        func nonEmpty(_ column: String) throws(RosterError) -> String {
            let value = self[column]
            guard !value.isEmpty else { throw error("\(column) is empty") }
            return value
        }

        /// Ids appear in URLs and Kafka keys: no '/', no spaces.
        func identifier(_ column: String) throws(RosterError) -> String {
            let value = try nonEmpty(column)
            guard !value.utf8.contains(UInt8(ascii: "/")), !value.containsWhitespace else {
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

        /// A seat's parts are within `Student.seatRange` (a student's row, uploaded or in `students.csv`).
        func checkSeat(grade: Int, classNumber: Int, number: Int) throws(RosterError) {
            for (part, value) in [("grade", grade), ("class", classNumber), ("number", number)] where !Student.seatRange.contains(value) {
                throw error("\(part) \(value) is too large")
            }
        }

        /// The row as a teacher of `school`: `name`, `email`, `role` (one
        /// or more of homeroom, volunteer_duty, gate, admin, or the Korean 담임,
        /// 봉사, 교문, 관리, joined by `+`), and the grade and class the
        /// roles need (`teachers.csv`, or a school's upload).
        func teacher(school: String, id: String) throws(RosterError) -> Teacher {
            let roleNames = try nonEmpty("role").split(separator: "+", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
            var roles: Set<Teacher.Role> = []
            for name in roleNames {
                guard let role = Teacher.Role(rawValue: name) ?? Teacher.Role.korean[name.replacingOccurrences(of: " ", with: "")] else {
                    throw error(
                        "role '\(name)' is not one of homeroom (담임), volunteer_duty (봉사), gate (교문), admin (관리); several are joined by +, e.g. homeroom+gate"
                    )
                }
                guard roles.insert(role).inserted else { throw error("role '\(name)' is given twice") }
            }
            let grade = try optionalPositive("grade")
            let classNumber = try optionalPositive("class")
            if roles.contains(.homeroom) && (grade == nil || classNumber == nil) {
                throw error("a homeroom teacher needs grade and class")
            }
            if roles.contains(.volunteerDuty) && grade == nil {
                throw error("a volunteer_duty teacher needs a grade")
            }
            let graded = roles.contains(.homeroom) || roles.contains(.volunteerDuty)
            return Teacher(
                schoolID: school, id: id, name: try nonEmpty("name"), email: self["email"], roles: roles,
                grade: graded ? grade : nil, classNumber: roles.contains(.homeroom) ? classNumber : nil)
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

    static func forEach(
        file: String, source: Roster.CSVSource, columns required: [String], fixed: [String: String] = [:],
        _ body: (Row) throws(RosterError) -> Void
    ) throws(RosterError) {
        var columns: [String: Int]?
        var width = 0
        let each = { (row: CSV.Row) throws(RosterError) in
            guard let header = columns else {
                let names = row.fields.map { $0.trimmingWhitespace().lowercased() }
                for column in required where !names.contains(column) && fixed[column] == nil {
                    throw RosterError(file: file, line: row.line, reason: "missing column '\(column)'")
                }
                columns = Dictionary(names.enumerated().map { ($0.element, $0.offset) }) { first, _ in first }
                width = names.count
                return
            }
            guard row.fields.count == width else {
                throw RosterError(file: file, line: row.line, reason: "\(row.fields.count) fields, the header has \(width)")
            }
            try body(Row(file: file, line: row.line, fields: row.fields, columns: header, fixed: fixed))
        }
        switch source {
        case .text(let text): try CSV.forEachRow(in: text, file: file, each)
        case .file(let path): try CSV.forEachRow(inFileAt: path, file: file, each)
        }
        if columns == nil { throw RosterError(file: file, line: nil, reason: "no header row") }
    }
}
