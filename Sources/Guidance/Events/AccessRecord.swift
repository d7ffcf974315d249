import Common

/// One read of student data by a teacher (접속 기록): who, when, from where,
/// what kind of read, and which ids it named — never the contents. Both
/// services publish them to the access topic; the notifier stores them.
package struct AccessRecord: Sendable, Equatable {
    /// What was read.
    package enum Action: String, Sendable, CaseIterable {
        /// The kinds whose `target` is a student's id.
        package static let studentTargets: [Action] = [.student, .photo, .export, .history, .caseFile]

        /// A day list (`target`: the query, e.g. `date=2026-12-01&grade=1&classNumber=3`).
        case list
        /// An inbox with its digests (`target`: the inbox's teacher id).
        case inbox
        /// A student looked up at the gate (`target`: the student id).
        case student
        /// A class's students at the gate (`target`: `grade-class`).
        case classStudents = "class"
        /// A student's photo (`target`: the student id).
        case photo
        /// A student's records exported (`target`: the student id).
        case export
        /// A student's records erased (`target`: `(erased)`, the id is not kept).
        case erase
        /// The access record itself read (`target`: the query).
        case accessLog = "access-log"
        /// The 봉사 명단 (`target`: the query, e.g. `grade=1`).
        case service
        /// A student's record opened, 학생 기록 (`target`: the student id).
        case history
        /// 현황 read (`target`: the query, e.g. `period=week&from=2026-11-30&to=2026-12-04&grade=1`).
        case overview
        /// 할 일 read, with the students of its cases (`target`: `scope=mine` or `scope=school`).
        case cases
        /// A case opened, its history and records (`target`: the student id).
        case caseFile = "case"
        /// The school's students previewed from an upload or a version put in
        /// service (`target`: `preview`, `version=N`, `version=N restores=M`).
        case roster
    }

    package static let schemaVersion = 1
    package static let type = "guidance.accessed"

    /// A UUID the recorder makes: a replayed record is stored once.
    package let accessId: String
    /// RFC 3339, UTC.
    package let at: String
    package let schoolId: String
    package let teacherId: String
    package let action: Action
    package let target: String
    /// The client's address (behind a trusted proxy, the one it names).
    package let client: String

    package init(accessId: String, at: String, schoolId: String, teacherId: String, action: Action, target: String, client: String) {
        self.accessId = accessId
        self.at = at
        self.schoolId = schoolId
        self.teacherId = teacherId
        self.action = action
        self.target = target
        self.client = client
    }

    /// Records as one message of the access topic:
    /// `{"schemaVersion":1,"type":"guidance.accessed","records":[…]}`.
    package static func message(_ records: [AccessRecord]) -> [UInt8] {
        // About 220 bytes a record: room for all at once, not grown (and copied) at the end.
        var writer = JSONWriter(capacity: 64 + records.count * 256)
        writer.field("schemaVersion", schemaVersion)
        writer.field("type", type)
        writer.array("records", records) { writer, record in
            writer.field("accessId", record.accessId)
            writer.field("at", record.at)
            writer.field("schoolId", record.schoolId)
            writer.field("teacherId", record.teacherId)
            writer.field("action", record.action.rawValue)
            writer.field("target", record.target)
            writer.field("client", record.client)
        }
        return writer.finish()
    }

    /// The records of a message `message(_:)` wrote (its other fields checked by the caller).
    package static func records(json fields: JSONFields) throws(FieldError) -> [AccessRecord] {
        guard case .array(let values)? = fields.object["records"] else { throw FieldError(field: "records", message: "must be an array") }
        var records: [AccessRecord] = []
        records.reserveCapacity(values.count)
        for value in values {
            guard case .object(let object) = value else { throw FieldError(field: "records", message: "must hold objects") }
            records.append(try AccessRecord(json: JSONFields(object)))
        }
        return records
    }

    package init(json fields: JSONFields) throws(FieldError) {
        let name = try fields.string("action")
        guard let action = Action(rawValue: name) else { throw FieldError(field: "action", message: "unknown action '\(name)'") }
        self.init(
            accessId: try fields.string("accessId"), at: try fields.string("at"), schoolId: try fields.string("schoolId"),
            teacherId: try fields.string("teacherId"), action: action, target: try fields.string("target"),
            client: try fields.string("client"))
    }
}
