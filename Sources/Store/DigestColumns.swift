import Common
import Guidance

/// How a digest's entries and counts sit in their text columns: the JSON
/// `Codable` writes for them (rows written before this code read the same),
/// written and read without Foundation's coders, which took a third of a
/// district digest run.
enum DigestColumns {
    static func entries(_ entries: [DigestEntry]) -> String {
        String(
            decoding: JSONWriter.array(entries) { writer, entry in
                writer.field("guidanceId", entry.guidanceId)
                writer.object("student") { entry.student.write(to: &$0) }
                writer.object("reason") { entry.reason.write(to: &$0) }
                writer.field("occurredAt", entry.occurredAt)
                writer.field("change", entry.change.rawValue)
                if let frequency = entry.frequency { writer.object("frequency") { frequency.write(to: &$0) } }
                if let service = entry.service { writer.object("service") { service.write(to: &$0) } }
                if let overdue = entry.overdue { writer.object("overdue") { overdue.write(to: &$0) } }
            }, as: UTF8.self)
    }

    static func counts(_ counts: [String: Int]) -> String {
        var writer = JSONWriter(capacity: 64)
        for (code, count) in counts.sorted(by: { $0.key < $1.key }) {
            writer.field(named: code, count)
        }
        return String(decoding: writer.finish(), as: UTF8.self)
    }

    static func entries(from text: String) throws(FieldError) -> [DigestEntry] {
        var entries: [DigestEntry] = []
        try forEachEntry(in: text) { entries.append($0) }
        return entries
    }

    /// Each entry of `text` in turn, as it is read: a grade's list of
    /// 13,000 entries is not held as an array to be folded.
    static func forEachEntry(in text: String, _ body: (DigestEntry) -> Void) throws(FieldError) {
        try JSONReader.forEachElement(of: text) { (value) throws(FieldError) in
            guard case .object(let object) = value else { throw FieldError(field: "entries", message: "must hold objects") }
            let fields = JSONFields(object)
            let student = try StudentRef(json: fields.object("student"))
            let reason = try ReasonRef(json: fields.object("reason"))
            let changeName = try fields.string("change")
            guard let change = DigestEntry.Change(rawValue: changeName) else {
                throw FieldError(field: "change", message: "'\(changeName)' is neither added nor removed")
            }
            let frequency = fields.object["frequency"] == nil ? nil : try Frequency(json: fields.object("frequency"))
            let service = fields.object["service"] == nil ? nil : try CommunityServiceStanding(json: fields.object("service"))
            let overdue = fields.object["overdue"] == nil ? nil : try CommunityServiceDuty(json: fields.object("overdue"))
            body(
                DigestEntry(
                    guidanceId: try fields.string("guidanceId"), student: student, reason: reason,
                    occurredAt: try fields.string("occurredAt"),
                    change: change, frequency: frequency, service: service, overdue: overdue))
        }
    }

    static func counts(from text: String) throws(FieldError) -> [String: Int] {
        let object = JSONFields(try JSONReader.object(Array(text.utf8)))
        var counts: [String: Int] = [:]
        for key in object.object.keys { counts[key] = try object.integer(key) }
        return counts
    }
}

extension CommunityServiceDuty {
    /// As the digests' stored entries and the 봉사 명단 write it.
    package func write(to writer: inout JSONWriter) {
        writer.field("dutyId", dutyId)
        writer.field("studentId", studentId)
        writer.field("guidanceId", guidanceId)
        writer.field("dueDate", dueDate)
        if let slot {
            writer.object("slot") { writer in
                writer.field("date", slot.date)
                writer.field("time", slot.time)
                writer.field("place", slot.place)
            }
        } else {
            writer.field("slot", nil as String?)
        }
        writer.field("servedOn", servedOn)
        writer.field("serviceId", serviceId)
        writer.field("misses", misses)
        writer.field("closedReason", closedReason)
    }

    init(json fields: JSONFields) throws(FieldError) {
        var slot: SlotTime?
        if case .object = fields.object["slot"] {
            let sitting = try fields.object("slot")
            slot = SlotTime(date: try sitting.string("date"), time: try sitting.string("time"), place: try sitting.string("place"))
        }
        self.init(
            dutyId: try fields.string("dutyId"), studentId: try fields.string("studentId"), guidanceId: try fields.string("guidanceId"),
            dueDate: try fields.optionalString("dueDate"), slot: slot, servedOn: try fields.optionalString("servedOn"),
            serviceId: try fields.optionalString("serviceId"), misses: try fields.integer("misses"),
            closedReason: try fields.optionalString("closedReason"))
    }
}

extension Frequency {
    /// As the digests' stored entries, the inbox API and the lists write it.
    package func write(to writer: inout JSONWriter) {
        writer.field("last7Days", last7Days)
        writer.field("last30Days", last30Days)
    }

    /// A digest stored before the counts were the last 7 and 30 days has the
    /// week's and the month's under their old names; read as they are.
    init(json fields: JSONFields) throws(FieldError) {
        if fields.object["last7Days"] == nil, fields.object["thisWeek"] != nil {
            self.init(last7Days: try fields.integer("thisWeek"), last30Days: try fields.integer("thisMonth"))
        } else {
            self.init(last7Days: try fields.integer("last7Days"), last30Days: try fields.integer("last30Days"))
        }
    }
}

extension CommunityServiceStanding {
    /// As the digests' stored entries, the inbox API and the 봉사 명단 write it.
    package func write(to writer: inout JSONWriter) {
        writer.field("owed", owed)
        writer.field("served", served)
        writer.field("closed", closed)
        writer.field("outstanding", outstanding)
    }

    /// Entries stored before 종결 have no `closed`: none.
    init(json fields: JSONFields) throws(FieldError) {
        self.init(
            owed: try fields.integer("owed"), served: try fields.integer("served"),
            closed: fields.object["closed"] == nil ? 0 : try fields.integer("closed"))
    }
}
