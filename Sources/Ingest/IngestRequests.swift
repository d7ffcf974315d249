import Guidance

/// `POST /v1/schools/{schoolId}/guidances` body.
struct RegisterRequest: Decodable, Sendable {
    struct StudentSelector: Decodable, Sendable {
        let grade: Int
        let classNumber: Int
        let number: Int
    }

    struct ReasonInput: Decodable, Sendable {
        let code: String
        let detail: String?
    }

    let guidanceId: String?
    let student: StudentSelector
    let reason: ReasonInput
    let recordedBy: String?
    let occurredAt: String?
}

/// `GET /v1/schools/{schoolId}/students/{grade}/{class}/{number}`.
struct StudentView: Encodable, Sendable {
    let studentId: String
    let schoolId: String
    let grade: Int
    let classNumber: Int
    let number: Int
    let name: String
    let photoUrl: String

    init(_ student: Student) {
        studentId = student.id
        schoolId = student.schoolID
        grade = student.grade
        classNumber = student.classNumber
        number = student.number
        name = student.name
        photoUrl = student.photoURL
    }
}
