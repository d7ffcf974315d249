import Common
import Guidance

/// `POST /v1/schools/{schoolId}/guidances` body.
struct RegisterRequest: Decodable, Sendable, Equatable {
    struct StudentSelector: Decodable, Sendable, Equatable {
        let grade: Int
        let classNumber: Int
        let number: Int
    }

    struct ReasonInput: Decodable, Sendable, Equatable {
        let code: String
        let detail: String?
    }

    let guidanceId: String?
    let student: StudentSelector
    let reason: ReasonInput
    let recordedBy: String?
    let occurredAt: String?
}

extension RegisterRequest {
    private static let fields: Set = ["guidanceId", "student", "reason", "recordedBy", "occurredAt"]

    /// The body as `JSONDecoder` would read it, from `JSONReader`'s fields;
    /// nil when anything is missing, mistyped or unknown, so that
    /// `JSONDecoder` reads it again and names the problem.
    init?(plain body: JSONObject) {
        guard body.keys.allSatisfy(RegisterRequest.fields.contains),
              case .object(let student)? = body["student"], student.count == 3,
              case .integer(let grade)? = student["grade"], case .integer(let classNumber)? = student["classNumber"],
              case .integer(let number)? = student["number"],
              case .object(let reason)? = body["reason"], reason.keys.allSatisfy({ $0 == "code" || $0 == "detail" }),
              case .string(let code)? = reason["code"],
              let detail = reason.optionalString("detail"),
              let guidanceId = body.optionalString("guidanceId"),
              let recordedBy = body.optionalString("recordedBy"),
              let occurredAt = body.optionalString("occurredAt")
        else { return nil }
        self.init(
            guidanceId: guidanceId, student: StudentSelector(grade: grade, classNumber: classNumber, number: number),
            reason: ReasonInput(code: code, detail: detail), recordedBy: recordedBy, occurredAt: occurredAt)
    }
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
