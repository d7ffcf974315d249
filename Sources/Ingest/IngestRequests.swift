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
struct StudentView: Sendable {
    let studentId: String
    let schoolId: String
    let grade: Int
    let classNumber: Int
    let number: Int
    let name: String
    /// This service's photo address, the roster's https `photo_url`, or null.
    let photoUrl: PhotoURL

    init(_ student: Student, photoUrl: String?) {
        studentId = student.id
        schoolId = student.schoolID
        grade = student.grade
        classNumber = student.classNumber
        number = student.number
        name = student.name
        self.photoUrl = PhotoURL(value: photoUrl)
    }

    /// The answer, keys in the order `JSONEncoder`'s sorted keys wrote them:
    /// every look-up at the gate is one, and the encoder took a fifth of its CPU.
    var json: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.field("classNumber", classNumber)
        writer.field("grade", grade)
        writer.field("name", name)
        writer.field("number", number)
        writer.field("photoUrl", photoUrl.value)
        writer.field("schoolId", schoolId)
        writer.field("studentId", studentId)
        return writer.finish()
    }
}

/// A photo's address, written as `null` when there is none (a synthesized
/// encoder would leave the key out).
struct PhotoURL: Encodable, Sendable {
    let value: String?

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}
