import Common

/// The events on Kafka (docs/design.md, "Events"). Key `"<schoolId>/<grade>"`;
/// headers `event-type`, `schema-version: 1`, `content-type: application/json`.
package enum EventType: String, Sendable, Codable {
    case registered = "guidance.registered"
    case deleted = "guidance.deleted"
    case communityServiceRecorded = "guidance.service.recorded"
    case communityServiceWithdrawn = "guidance.service.withdrawn"
    /// A one-off sitting of 교내봉사 (`CommunityServiceSittingAdded`).
    case communityServiceSittingAdded = "guidance.service.sitting"
    /// A step of a case (`CaseStep`).
    case caseStep = "guidance.case.step"
}

package enum EventHeader {
    package static let type = "event-type"
    package static let schemaVersion = "schema-version"
    package static let contentType = "content-type"
}

extension EventType {
    /// The Kafka headers every event of this type carries: its type, schema
    /// version 1 and JSON, made once per type rather than per event.
    package var headers: [(name: String, value: [UInt8])] {
        switch self {
        case .registered: EventType.registeredHeaders
        case .deleted: EventType.deletedHeaders
        case .communityServiceRecorded: EventType.communityServiceRecordedHeaders
        case .communityServiceWithdrawn: EventType.communityServiceWithdrawnHeaders
        case .communityServiceSittingAdded: EventType.communityServiceSittingAddedHeaders
        case .caseStep: EventType.caseStepHeaders
        }
    }

    private static let registeredHeaders = EventType.registered.madeHeaders
    private static let deletedHeaders = EventType.deleted.madeHeaders
    private static let communityServiceRecordedHeaders = EventType.communityServiceRecorded.madeHeaders(
        version: CommunityServiceRecorded.schemaVersion)
    private static let communityServiceWithdrawnHeaders = EventType.communityServiceWithdrawn.madeHeaders
    private static let caseStepHeaders = EventType.caseStep.madeHeaders
    private static let communityServiceSittingAddedHeaders = EventType.communityServiceSittingAdded.madeHeaders

    private var madeHeaders: [(name: String, value: [UInt8])] { madeHeaders(version: 1) }

    private func madeHeaders(version: Int) -> [(name: String, value: [UInt8])] {
        [
            (EventHeader.type, Array(rawValue.utf8)), (EventHeader.schemaVersion, Array(String(version).utf8)),
            (EventHeader.contentType, Array("application/json".utf8))
        ]
    }
}

package struct StudentRef: Codable, Sendable, Equatable, Hashable {
    package let studentId: String
    package let grade: Int
    package let classNumber: Int
    package let number: Int
    package let name: String

    package init(studentId: String, grade: Int, classNumber: Int, number: Int, name: String) {
        self.studentId = studentId
        self.grade = grade
        self.classNumber = classNumber
        self.number = number
        self.name = name
    }

    package init(_ student: Student) {
        self.init(studentId: student.id, grade: student.grade, classNumber: student.classNumber, number: student.number, name: student.name)
    }
}

package struct ReasonRef: Codable, Sendable, Equatable, Hashable {
    package let code: String
    package let label: String
    package let detail: String?

    package init(code: String, label: String, detail: String?) {
        self.code = code
        self.label = label
        self.detail = detail
    }

    /// `detail` is written as `null` when absent, as the contract shows it.
    package func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(label, forKey: .label)
        try container.encode(detail, forKey: .detail)
    }
}

package struct GuidanceRegistered: Codable, Sendable, Equatable {
    package static let schemaVersion = 1
    package var schemaVersion = GuidanceRegistered.schemaVersion
    package var type = EventType.registered
    package let eventId: String
    package let guidanceId: String
    package let schoolId: String
    package let student: StudentRef
    package let reason: ReasonRef
    package let recordedBy: String
    /// RFC 3339, UTC.
    package let occurredAt: String
    package let recordedAt: String

    package init(
        eventId: String, guidanceId: String, schoolId: String, student: StudentRef, reason: ReasonRef, recordedBy: String,
        occurredAt: String, recordedAt: String
    ) {
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

package struct GuidanceDeleted: Codable, Sendable, Equatable {
    package static let schemaVersion = 1
    package var schemaVersion = GuidanceDeleted.schemaVersion
    package var type = EventType.deleted
    package let eventId: String
    package let guidanceId: String
    package let schoolId: String
    package let grade: Int
    package let deletedBy: String
    package let occurredAt: String

    package init(eventId: String, guidanceId: String, schoolId: String, grade: Int, deletedBy: String, occurredAt: String) {
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
    package var json: [UInt8] {
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
    package init(json fields: JSONFields) throws(FieldError) {
        self.init(
            eventId: try fields.string("eventId"), guidanceId: try fields.string("guidanceId"), schoolId: try fields.string("schoolId"),
            student: try StudentRef(json: fields.object("student")), reason: try ReasonRef(json: fields.object("reason")),
            recordedBy: try fields.string("recordedBy"), occurredAt: try fields.string("occurredAt"),
            recordedAt: try fields.string("recordedAt"))
    }
}

extension GuidanceDeleted {
    /// The event from its JSON fields, like `GuidanceRegistered(json:)`.
    package init(json fields: JSONFields) throws(FieldError) {
        self.init(
            eventId: try fields.string("eventId"), guidanceId: try fields.string("guidanceId"), schoolId: try fields.string("schoolId"),
            grade: try fields.integer("grade", in: Student.seatRange), deletedBy: try fields.string("deletedBy"),
            occurredAt: try fields.string("occurredAt"))
    }

    /// The event as JSON, like `GuidanceRegistered.json`.
    package var json: [UInt8] {
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
package func eventKey(school: String, grade: Int) -> String { "\(school)/\(grade)" }

extension StudentRef {
    /// Its fields, as the events and the digests' stored entries write them.
    package func write(to writer: inout JSONWriter) {
        writer.field("studentId", studentId)
        writer.field("grade", grade)
        writer.field("classNumber", classNumber)
        writer.field("number", number)
        writer.field("name", name)
    }

    /// Read back from what `write` wrote; a seat outside `Student.seatRange` is refused.
    package init(json fields: JSONFields) throws(FieldError) {
        self.init(
            studentId: try fields.string("studentId"), grade: try fields.integer("grade", in: Student.seatRange),
            classNumber: try fields.integer("classNumber", in: Student.seatRange),
            number: try fields.integer("number", in: Student.seatRange), name: try fields.string("name"))
    }
}

extension ReasonRef {
    /// Its fields, `detail` as `null` when absent.
    package func write(to writer: inout JSONWriter) {
        writer.field("code", code)
        writer.field("label", label)
        writer.field("detail", detail)
    }

    package init(json fields: JSONFields) throws(FieldError) {
        self.init(code: try fields.string("code"), label: try fields.string("label"), detail: try fields.optionalString("detail"))
    }
}
