import Access
import Common
import Guidance
import HTTP
import Store
import Web

/// A student's record (학생 기록), for a parents' meeting or a 선도위원회:
/// every guidance with its day, time, reason, detail and recorder, deletions
/// with who deleted them, 봉사 owed and served, the school rules crossed and
/// the cases opened, with their steps.
/// For whoever may see the student's lists of other days
/// (`Teacher.mayReadOtherDays` for their seat now: admins the school,
/// homeroom teachers their class, volunteer-duty teachers their grade); a
/// student no longer in the roster, admins only. Each opening is in the
/// access record; `Accept: text/csv` gives the guidances as the export does.
struct StudentHistoryHandlers: Sendable {
    let store: SQLStore
    let photos: StudentPhotos
    let accessLog: AccessLog
    let clock: @Sendable () -> Double

    func routes(into router: inout GuardedRouter) {
        router.get(
            "/v1/schools/{schoolId}/students/{studentId}/history", Access.school(roles: [.homeroom, .volunteerDuty, .admin]), history)
    }

    struct History: Encodable, Sendable {
        let export: DataProtectionHandlers.Export
        /// The student as the roster seats them now; nil once they left it.
        let student: Seat?
        let service: CommunityServiceStanding
        /// The names of the teachers the record names, by id.
        let teachers: [String: String]
        /// What the printed record heads with: the school's name, and the
        /// homeroom teacher of the student's class now (nil: none, or left).
        let schoolName: String
        let homeroomTeacher: String?

        struct Seat: Encodable, Sendable {
            let studentId: String
            let grade: Int
            let classNumber: Int
            let number: Int
            let name: String
            let photoUrl: String?

            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(studentId, forKey: .studentId)
                try container.encode(grade, forKey: .grade)
                try container.encode(classNumber, forKey: .classNumber)
                try container.encode(number, forKey: .number)
                try container.encode(name, forKey: .name)
                try container.encode(photoUrl, forKey: .photoUrl)
            }

            enum CodingKeys: String, CodingKey { case studentId, grade, classNumber, number, name, photoUrl }
        }

        private enum CodingKeys: String, CodingKey { case student, service, teachers, schoolName, homeroomTeacher }

        func encode(to encoder: Encoder) throws {
            try export.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(student, forKey: .student)
            try container.encode(service, forKey: .service)
            try container.encode(teachers, forKey: .teachers)
            try container.encode(schoolName, forKey: .schoolName)
            try container.encode(homeroomTeacher, forKey: .homeroomTeacher)
        }
    }

    @Sendable func history(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let studentID = request.parameter("studentId")
        let seated = caller.roster.student(school: school.id, id: studentID)
        if let teacher = caller.teacher, !teacher.mayReadOtherDays(grade: seated?.grade, classNumber: seated?.classNumber) {
            throw HTTPError(
                status: 403,
                detail: seated == nil
                    ? "only an admin reads the record of a student no longer in the roster"
                    : "a student's record is for their homeroom teacher, their grade's volunteer-duty teacher and admins")
        }
        let store = self.store
        let records = try await store.blocking { try store.records(school: school.id, student: studentID) }
        guard seated != nil || !records.isEmpty else {
            throw HTTPError.notFound("no student '\(studentID)' at this school, and nothing stored about that id")
        }
        accessLog.record(caller, .history, school: school.id, target: studentID)
        let export = DataProtectionHandlers.Export(records, school: school.id, student: studentID, exportedAt: Timestamp.format(clock()))
        if let csv = DataProtectionHandlers.csvAnswer(request, export) { return csv }
        let named =
            records.guidances.flatMap { [$0.record.recordedBy, $0.deletedBy].compactMap { $0 } } + records.services.map(\.record.recordedBy)
            + records.cases.compactMap(\.holder) + records.caseSteps.flatMap { [$0.by] + ($0.to.map { [$0] } ?? []) }
        return .json(
            History(
                export: export,
                student: seated.map {
                    History.Seat(
                        studentId: $0.id, grade: $0.grade, classNumber: $0.classNumber, number: $0.number, name: $0.name,
                        photoUrl: photos.url(for: $0, seenBy: caller.teacher))
                },
                service: records.standing,
                teachers: Dictionary(named.compactMap { id in caller.roster.teachers[id].map { (id, $0.name) } }) { first, _ in first },
                schoolName: school.name,
                homeroomTeacher: seated.flatMap { seat in
                    caller.roster.teachers(of: school.id, role: .homeroom).first {
                        $0.grade == seat.grade && $0.classNumber == seat.classNumber
                    }?.name
                }))
    }
}
