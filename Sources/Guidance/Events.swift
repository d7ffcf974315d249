import Common

/// The events on Kafka (docs/design.md, "Events"). Key `"<schoolId>/<grade>"`;
/// headers `event-type`, `schema-version: 1`, `content-type: application/json`.
public enum EventType: String, Sendable, Codable {
    case registered = "guidance.registered"
    case deleted = "guidance.deleted"
    case serviceRecorded = "guidance.service.recorded"
    case serviceWithdrawn = "guidance.service.withdrawn"
}

public enum EventHeader {
    public static let type = "event-type"
    public static let schemaVersion = "schema-version"
    public static let contentType = "content-type"
}

public struct StudentRef: Codable, Sendable, Equatable, Hashable {
    public let studentId: String
    public let grade: Int
    public let classNumber: Int
    public let number: Int
    public let name: String

    public init(studentId: String, grade: Int, classNumber: Int, number: Int, name: String) {
        self.studentId = studentId
        self.grade = grade
        self.classNumber = classNumber
        self.number = number
        self.name = name
    }

    public init(_ student: Student) {
        self.init(studentId: student.id, grade: student.grade, classNumber: student.classNumber, number: student.number, name: student.name)
    }
}

public struct ReasonRef: Codable, Sendable, Equatable, Hashable {
    public let code: String
    public let label: String
    public let detail: String?

    public init(code: String, label: String, detail: String?) {
        self.code = code
        self.label = label
        self.detail = detail
    }

    /// `detail` is written as `null` when absent, as the contract shows it.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(label, forKey: .label)
        try container.encode(detail, forKey: .detail)
    }
}

public struct GuidanceRegistered: Codable, Sendable, Equatable {
    public static let schemaVersion = 1
    public var schemaVersion = GuidanceRegistered.schemaVersion
    public var type = EventType.registered
    public let eventId: String
    public let guidanceId: String
    public let schoolId: String
    public let student: StudentRef
    public let reason: ReasonRef
    public let recordedBy: String
    /// RFC 3339, UTC.
    public let occurredAt: String
    public let recordedAt: String

    public init(eventId: String, guidanceId: String, schoolId: String, student: StudentRef, reason: ReasonRef, recordedBy: String, occurredAt: String, recordedAt: String) {
        self.eventId = eventId
        self.guidanceId = guidanceId
        self.schoolId = schoolId
        self.student = student
        self.reason = reason
        self.recordedBy = recordedBy
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
    }
}

public struct GuidanceDeleted: Codable, Sendable, Equatable {
    public static let schemaVersion = 1
    public var schemaVersion = GuidanceDeleted.schemaVersion
    public var type = EventType.deleted
    public let eventId: String
    public let guidanceId: String
    public let schoolId: String
    public let grade: Int
    public let deletedBy: String
    public let occurredAt: String

    public init(eventId: String, guidanceId: String, schoolId: String, grade: Int, deletedBy: String, occurredAt: String) {
        self.eventId = eventId
        self.guidanceId = guidanceId
        self.schoolId = schoolId
        self.grade = grade
        self.deletedBy = deletedBy
        self.occurredAt = occurredAt
    }
}

extension GuidanceRegistered {
    /// The event as JSON: what `JSONEncoder` writes for it (a test holds them
    /// equal), without its cost on the ingest's hot path.
    public var json: [UInt8] {
        var writer = JSONWriter()
        writer.field("schemaVersion", schemaVersion)
        writer.field("type", type.rawValue)
        writer.field("eventId", eventId)
        writer.field("guidanceId", guidanceId)
        writer.field("schoolId", schoolId)
        writer.object("student") { self.student.write(to: &$0) }
        writer.object("reason") { self.reason.write(to: &$0) }
        writer.field("recordedBy", recordedBy)
        writer.field("occurredAt", occurredAt)
        writer.field("recordedAt", recordedAt)
        return writer.finish()
    }

    /// The event from its JSON fields; an absent or mistyped field names itself.
    public init(json fields: JSONFields) throws(FieldError) {
        self.init(
            eventId: try fields.string("eventId"), guidanceId: try fields.string("guidanceId"), schoolId: try fields.string("schoolId"),
            student: try StudentRef(json: fields.object("student")), reason: try ReasonRef(json: fields.object("reason")),
            recordedBy: try fields.string("recordedBy"), occurredAt: try fields.string("occurredAt"), recordedAt: try fields.string("recordedAt"))
    }
}

extension GuidanceDeleted {
    /// The event from its JSON fields, like `GuidanceRegistered(json:)`.
    public init(json fields: JSONFields) throws(FieldError) {
        self.init(
            eventId: try fields.string("eventId"), guidanceId: try fields.string("guidanceId"), schoolId: try fields.string("schoolId"),
            grade: try fields.integer("grade", in: Student.seatRange), deletedBy: try fields.string("deletedBy"),
            occurredAt: try fields.string("occurredAt"))
    }

    /// The event as JSON, like `GuidanceRegistered.json`.
    public var json: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.field("schemaVersion", schemaVersion)
        writer.field("type", type.rawValue)
        writer.field("eventId", eventId)
        writer.field("guidanceId", guidanceId)
        writer.field("schoolId", schoolId)
        writer.field("grade", grade)
        writer.field("deletedBy", deletedBy)
        writer.field("occurredAt", occurredAt)
        return writer.finish()
    }
}

/// The partition key: every event of one grade stays in order on one partition.
public func eventKey(school: String, grade: Int) -> String { "\(school)/\(grade)" }

extension StudentRef {
    /// Its fields, as the events and the digests' stored entries write them.
    public func write(to writer: inout JSONWriter) {
        writer.field("studentId", studentId)
        writer.field("grade", grade)
        writer.field("classNumber", classNumber)
        writer.field("number", number)
        writer.field("name", name)
    }

    /// Read back from what `write` wrote; a seat outside `Student.seatRange` is refused.
    public init(json fields: JSONFields) throws(FieldError) {
        self.init(
            studentId: try fields.string("studentId"), grade: try fields.integer("grade", in: Student.seatRange),
            classNumber: try fields.integer("classNumber", in: Student.seatRange),
            number: try fields.integer("number", in: Student.seatRange), name: try fields.string("name"))
    }
}

extension ReasonRef {
    /// Its fields, `detail` as `null` when absent.
    public func write(to writer: inout JSONWriter) {
        writer.field("code", code)
        writer.field("label", label)
        writer.field("detail", detail)
    }

    public init(json fields: JSONFields) throws(FieldError) {
        self.init(code: try fields.string("code"), label: try fields.string("label"), detail: try fields.optionalString("detail"))
    }
}
