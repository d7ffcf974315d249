import Common

/// The `guidance.case.step` event on `Topics.cases`, keyed `school/grade`
/// like the student's guidances, so a case's steps keep their order.
extension CaseStep {
    package static let schemaVersion = 1

    package var json: [UInt8] {
        var writer = JSONWriter(capacity: 384)
        writer.field("schemaVersion", CaseStep.schemaVersion)
        writer.field("type", EventType.caseStep.rawValue)
        writer.field("eventId", eventId)
        writer.field("caseId", caseId)
        writer.field("schoolId", schoolId)
        writer.field("grade", grade)
        writer.field("studentId", studentId)
        writer.field("action", action.name)
        switch action {
        case .move(let state, let nextDate):
            writer.field("state", state.rawValue)
            writer.field("nextDate", nextDate)
        case .handOver(let teacher):
            writer.field("to", teacher)
        case .open, .note, .withdraw, .reopen, .guardianNotice:
            break
        }
        writer.field("note", note)
        writer.field("by", by)
        writer.field("at", at)
        return writer.finish()
    }

    package init(json fields: JSONFields) throws(FieldError) {
        self.init(
            eventId: try fields.string("eventId"), caseId: try fields.string("caseId"), schoolId: try fields.string("schoolId"),
            grade: try fields.integer("grade", in: Student.seatRange), studentId: try fields.string("studentId"),
            action: try CaseStep.action(fields), note: try fields.optionalString("note"), by: try fields.string("by"),
            at: try fields.string("at"))
    }

    /// The action an event or a request names, its fields checked: a
    /// teacher's (`open`, `move`, `note`, `hand-over`); `withdraw` is the
    /// store's and never travels.
    package static func action(_ fields: JSONFields) throws(FieldError) -> Action {
        switch try fields.string("action") {
        case "open":
            return .open
        case "note":
            return .note
        case "guardian-notice":
            return .guardianNotice
        case "hand-over":
            return .handOver(to: try fields.string("to"))
        case "move":
            let name = try fields.string("state")
            guard let state = GuidanceCase.State(rawValue: name), GuidanceCase.State.chosen.contains(state) else {
                throw FieldError(
                    field: "state", message: "must be one of \(GuidanceCase.State.chosen.map(\.rawValue).joined(separator: ", "))")
            }
            let nextDate = try fields.optionalString("nextDate")
            if let nextDate, Timestamp.parseDate(nextDate) == nil {
                throw FieldError(field: "nextDate", message: "must be a date, YYYY-MM-DD")
            }
            return .move(state, nextDate: nextDate)
        case let other:
            throw FieldError(field: "action", message: "'\(other)' is not one of open, move, note, hand-over, guardian-notice")
        }
    }
}
