import Crypto
import Foundation

package struct School: Sendable, Equatable {
    package let id: String
    package let name: String
    package let timeZone: TimeZone
    /// Minutes after local midnight when the day's digests go out.
    package let digestMinute: Int
    /// Reason catalogue: the defaults plus the school's own, by code.
    package let reasons: [String: Reason]
    package let reasonOrder: [String]
    /// Its school days (`calendar.csv`).
    package var calendar = SchoolCalendar()
    /// How its 교내봉사 is scheduled (`service_due_days`, `service_slots.csv`).
    package var service = CommunityServicePolicy()
    /// The days (since 1970-01-01) its new school years began: each 진급
    /// version's `effective` day once served, ascending. Its rules' windows
    /// start again on the latest.
    package var yearStarts: [Int] = []

    /// The school's reasons in its order, as teachers pick them.
    package var orderedReasons: [Reason] { reasonOrder.compactMap { reasons[$0] } }

    package func reason(_ code: String) -> Reason? { reasons[code] }
}

package struct Student: Sendable, Equatable {
    /// The grades, classes and numbers a seat can have.
    package static let seatRange = 1...Int(UInt16.max)

    package let schoolID: String
    package let id: String
    package let grade: Int
    package let classNumber: Int
    package let number: Int
    package let name: String
    package let photoURL: String

    package init(schoolID: String, id: String, grade: Int, classNumber: Int, number: Int, name: String, photoURL: String) {
        self.schoolID = schoolID
        self.id = id
        self.grade = grade
        self.classNumber = classNumber
        self.number = number
        self.name = name
        self.photoURL = photoURL
    }
}

package struct Teacher: Sendable, Equatable {
    package enum Role: String, Sendable, CaseIterable {
        case homeroom
        case volunteerDuty = "volunteer_duty"
        case gate
        case admin

        /// The words schools use, as an upload or `teachers.csv` may write them (spaces dropped).
        static let korean: [String: Role] = [
            "담임": .homeroom, "봉사": .volunteerDuty, "봉사담당": .volunteerDuty, "교문": .gate, "교문지도": .gate, "관리": .admin,
            "관리자": .admin, "학생부장": .admin
        ]
    }

    package let schoolID: String
    package let id: String
    package let name: String
    package let email: String
    /// One or more (`teachers.csv` joins them with `+`): a homeroom teacher
    /// on gate duty records at the gate and still gets the class's list.
    package let roles: Set<Role>
    /// The grade of a homeroom or volunteer-duty teacher.
    package let grade: Int?
    /// The class of a homeroom teacher.
    package let classNumber: Int?

    package init(schoolID: String, id: String, name: String, email: String, roles: Set<Role>, grade: Int?, classNumber: Int?) {
        self.schoolID = schoolID
        self.id = id
        self.name = name
        self.email = email
        self.roles = roles
        self.grade = grade
        self.classNumber = classNumber
    }

    package func has(_ role: Role) -> Bool { roles.contains(role) }

    /// Whether the teacher holds any of `roles`.
    package func hasAny(of roles: Set<Role>) -> Bool { !self.roles.isDisjoint(with: roles) }

    /// Whether the teacher may read the lists of days other than today for
    /// this grade and class (nil: all of them): admins their whole school,
    /// homeroom teachers their class, volunteer-duty teachers their grade;
    /// with several roles, what any of them allows. Today's list of the
    /// whole school is every teacher's (the notes' 명단조회).
    package func mayReadOtherDays(grade: Int?, classNumber: Int?) -> Bool {
        if has(.admin) { return true }
        if has(.volunteerDuty) && grade != nil && grade == self.grade { return true }
        return has(.homeroom) && grade != nil && grade == self.grade && classNumber == self.classNumber
    }

    /// The roles as `teachers.csv` writes them (`homeroom+gate`), in a fixed order.
    package var roleText: String { Role.allCases.filter(roles.contains).map(\.rawValue).joined(separator: "+") }
}

/// Where a school's digests are POSTed (`webhooks.csv`), signed per Standard
/// Webhooks with `secret`.
package struct Webhook: Sendable, Equatable {
    package let schoolID: String
    package let url: String
    /// The decoded bytes of `whsec_<base64>`; never logged.
    package let secret: [UInt8]
}

/// The school directory from `ROSTER_DIR`: one loaded version of it
/// (`LiveRoster` reloads it when its files change). A class, immutable: every
/// request takes the current roster, and copying a struct of eleven
/// collections cost eleven retains and releases each time.
package final class Roster: Sendable {
    package let schools: [String: School]
    /// The folder's students.
    let students: StudentDirectory
    /// Each school with a roster version: its students, in place of the
    /// folder's (a version rebuilds its school's directory alone: the
    /// district's took 2.3 s).
    let versionedStudents: [String: StudentDirectory]
    package let teachers: [String: Teacher]
    /// Token digests by their first 8 bytes, each with its teacher. Empty
    /// when `tokens.csv` is absent.
    let tokens: [UInt64: [(digest: [UInt8], teacher: Teacher)]]
    /// Whether `tokens.csv` exists, i.e. whether requests must authenticate.
    package let authenticationEnabled: Bool
    /// Grades that have at least one class, per school.
    let grades: [String: Set<Int>]
    /// Each school's webhook, from the optional `webhooks.csv`.
    package let webhooks: [String: Webhook]
    /// Each school's rules that flag repeats, from the optional `rules.csv`.
    package let rules: [String: [SchoolRule]]
    /// Each school's teachers in id order: a digest run asks once per school,
    /// and scanning the district's teachers each time took 6% of it.
    let teachersBySchool: [String: [Teacher]]
    /// Teachers by their e-mail address, lowercased, for sign-in links.
    let teachersByEmail: [String: [Teacher]]
    /// Each teacher's tokens, by `fingerprint`: a session signed in with a
    /// token ends when the token is revoked.
    let tokenFingerprints: [String: Set<String>]
    /// Students a school's roster version no longer lists, by school and id,
    /// at their last seat: an event recorded before the version applied
    /// still names them (`knownStudent`); no list, look-up or gate does.
    let departed: [String: [String: Student]]
    /// Teachers a school's roster version no longer lists, by id: events
    /// they recorded before it still name them (`knownTeacher`); they sign
    /// in nowhere.
    let departedTeachers: [String: Teacher]

    init(
        schools: [String: School], students: StudentDirectory, teachers: [String: Teacher],
        tokens: [UInt64: [(digest: [UInt8], teacher: Teacher)]], authenticationEnabled: Bool, grades: [String: Set<Int>],
        webhooks: [String: Webhook], rules: [String: [SchoolRule]], teachersBySchool: [String: [Teacher]],
        teachersByEmail: [String: [Teacher]],
        tokenFingerprints: [String: Set<String>], versionedStudents: [String: StudentDirectory] = [:],
        departed: [String: [String: Student]] = [:], departedTeachers: [String: Teacher] = [:]
    ) {
        self.schools = schools
        self.students = students
        self.teachers = teachers
        self.tokens = tokens
        self.authenticationEnabled = authenticationEnabled
        self.grades = grades
        self.webhooks = webhooks
        self.rules = rules
        self.teachersBySchool = teachersBySchool
        self.teachersByEmail = teachersByEmail
        self.tokenFingerprints = tokenFingerprints
        self.versionedStudents = versionedStudents
        self.departed = departed
        self.departedTeachers = departedTeachers
    }

    /// The teacher with `id`, or one a roster version of their school no
    /// longer lists: who recorded an event before that version applied.
    package func knownTeacher(_ id: String) -> Teacher? { teachers[id] ?? departedTeachers[id] }

    /// The teachers by school in id order, and by e-mail (lowercased).
    static func indexes(_ teachers: [String: Teacher]) -> (bySchool: [String: [Teacher]], byEmail: [String: [Teacher]]) {
        (
            Dictionary(grouping: teachers.values, by: \.schoolID).mapValues { $0.sorted { $0.id < $1.id } },
            Dictionary(grouping: teachers.values.filter { !$0.email.isEmpty }, by: { $0.email.lowercased() })
                .mapValues { $0.sorted { $0.id < $1.id } }
        )
    }

    package func school(_ id: String) -> School? { schools[id] }

    package func student(school: String, grade: Int, classNumber: Int, number: Int) -> Student? {
        directory(school).student(school: school, grade: grade, classNumber: classNumber, number: number)
    }

    /// The class's students in number order; empty when there is no such class.
    package func students(school: String, grade: Int, classNumber: Int) -> [Student] {
        directory(school).students(school: school, grade: grade, classNumber: classNumber)
    }

    /// Every student of the school, in seat order.
    package func students(school: String) -> [Student] {
        seats(school: school).flatMap { grade, classes in
            classes.flatMap { students(school: school, grade: grade, classNumber: $0.classNumber) }
        }
    }

    /// The student of `school` with `id`, wherever they sit now.
    package func student(school: String, id: String) -> Student? {
        directory(school).student(school: school, id: id)
    }

    /// The student of `school` with `id`, or one a roster version of the
    /// school no longer lists: what an event recorded before that version
    /// names (the notifier stores it under the seat it was recorded at).
    package func knownStudent(school: String, id: String) -> Student? {
        directory(school).student(school: school, id: id) ?? departed[school]?[id]
    }

    /// The school's seats as grade → class → numbers, each level sorted.
    package func seats(school: String) -> [(grade: Int, classes: [(classNumber: Int, numbers: [Int])])] {
        directory(school).seats(school: school)
    }

    package func hasGrade(_ grade: Int, in school: String) -> Bool {
        grades[school]?.contains(grade) ?? false
    }

    /// How many students `school` seats.
    package func studentCount(school: String) -> Int { directory(school).count(school: school) }

    package var studentCount: Int {
        students.count + versionedStudents.reduce(0) { $0 + $1.value.count - students.count(school: $1.key) }
    }

    /// Where `school`'s students are: its version's directory, or the folder's.
    private func directory(_ school: String) -> StudentDirectory {
        versionedStudents.isEmpty ? students : versionedStudents[school] ?? students
    }

    /// The teacher a bearer token belongs to. Only the presented token's digest
    /// takes part in the look-up, and full digests are compared in constant
    /// time, so timing tells nothing about the stored tokens.
    package func teacher(forToken token: String) -> Teacher? {
        SHA256.withDigest(utf8: token) { digest in
            tokens[Roster.tokenBucket(digest)]?.first { SHA256.constantTimeEqual($0.digest, digest) }?.teacher
        }
    }

    /// The teachers whose `email` is `address` (any case).
    package func teachers(withEmail address: String) -> [Teacher] {
        teachersByEmail[address.lowercased()] ?? []
    }

    /// Whether `teacher` still holds the token with `fingerprint`.
    package func holdsToken(teacher: String, fingerprint: String) -> Bool {
        tokenFingerprints[teacher]?.contains(fingerprint) ?? false
    }

    /// A token's fingerprint: the first 8 bytes of its SHA-256, in hex. It
    /// names the token in a session without revealing it.
    package static func fingerprint(_ digest: [UInt8]) -> String {
        SHA256.hex(Array(digest.prefix(8)))
    }

    /// The fingerprint of a token as presented.
    package static func fingerprint(token: String) -> String {
        fingerprint(SHA256.hash(utf8: token))
    }

    static func tokenBucket(_ digest: some Collection<UInt8>) -> UInt64 {
        digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Teachers of `school` with `role`, in id order.
    package func teachers(of school: String, role: Teacher.Role) -> [Teacher] {
        (teachersBySchool[school] ?? []).filter { $0.has(role) }
    }
}
