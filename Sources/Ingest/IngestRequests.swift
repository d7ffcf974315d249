import Common
import Guidance

/// `POST /v1/schools/{schoolId}/guidances` body.
struct RegisterRequest: Sendable, Equatable {
    struct StudentSelector: Sendable, Equatable {
        let grade: Int
        let classNumber: Int
        let number: Int
    }

    struct ReasonInput: Sendable, Equatable {
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
    /// The body's fields, typed; a wrong type or a seat number outside
    /// `Student.seatRange` names its field.
    init(json body: JSONFields) throws(FieldError) {
        let student = try body.object("student")
        let reason = try body.object("reason")
        self.init(
            guidanceId: try body.optionalString("guidanceId"),
            student: StudentSelector(
                grade: try student.integer("grade", in: Student.seatRange),
                classNumber: try student.integer("classNumber", in: Student.seatRange),
                number: try student.integer("number", in: Student.seatRange)),
            reason: ReasonInput(code: try reason.string("code"), detail: try reason.optionalString("detail")),
            recordedBy: try body.optionalString("recordedBy"),
            occurredAt: try body.optionalString("occurredAt"))
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
    /// This service's photo address, the roster's https `photo_url`, or null.
    let photoUrl: String?

    init(_ student: Student, photoUrl: String?) {
        studentId = student.id
        schoolId = student.schoolID
        grade = student.grade
        classNumber = student.classNumber
        number = student.number
        name = student.name
        self.photoUrl = photoUrl
    }

    enum CodingKeys: String, CodingKey { case studentId, schoolId, grade, classNumber, number, name, photoUrl }

    /// `photoUrl` is `null` when there is no photo, not left out.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(studentId, forKey: .studentId)
        try container.encode(schoolId, forKey: .schoolId)
        try container.encode(grade, forKey: .grade)
        try container.encode(classNumber, forKey: .classNumber)
        try container.encode(number, forKey: .number)
        try container.encode(name, forKey: .name)
        try container.encode(photoUrl, forKey: .photoUrl)
    }
}
