import Common

/// A school's own tables, kept by its admin in 관리 → 명부 → 학교 설정
/// (issue 68) as the operator keeps them in the folder: its reasons, school
/// calendar, 봉사 sittings and rules that flag repeats. A table is the text
/// of its file with the school's rows alone, `school_id` left out, read and
/// checked by the same code as the file. A roster version that carries a
/// table replaces all the school had of it (the folder's rows, `*` rows of
/// the calendar included); the others stay as they are.
package enum SchoolTable: String, CaseIterable, Sendable {
    // In the order they apply: the rules name the reasons.
    case reasons = "reasons.csv"
    case calendar = "calendar.csv"
    case serviceSlots = "service_slots.csv"
    case rules = "rules.csv"

    /// Its name in a URL: `reasons`, `calendar`, `service-slots`, `rules`.
    package var slug: String { self == .serviceSlots ? "service-slots" : String(rawValue.dropLast(4)) }

    package init?(slug: String) {
        guard let table = SchoolTable.allCases.first(where: { $0.slug == slug }) else { return nil }
        self = table
    }

    /// Its columns as the app shows them (the file's, without `school_id`).
    package var columns: [String] {
        switch self {
        case .reasons: ["code", "label", "requires_detail", "service_sessions"]
        case .calendar: ["date", "end_date", "name"]
        case .serviceSlots: ["weekday", "time", "place", "capacity"]
        case .rules: ["reason", "count", "days", "notify", "label", "urgent", "across_years"]
        }
    }
}

extension School {
    /// The school with the default reasons and `own` (one with a default's
    /// code takes its place, at the end), its calendar and 봉사 as they are.
    func with(ownReasons own: [Reason]) -> School {
        var catalogue = Reason.defaults
        for reason in own {
            catalogue.removeAll { $0.code == reason.code }
            catalogue.append(reason)
        }
        return School(
            id: id, name: name, timeZone: timeZone, digestMinute: digestMinute,
            reasons: Dictionary(uniqueKeysWithValues: catalogue.map { ($0.code, $0) }), reasonOrder: catalogue.map(\.code),
            calendar: calendar, service: service, yearStarts: yearStarts)
    }
}

extension Roster {
    /// `table` of `school` as it is served now, as its file writes it
    /// (header first, the school's rows, `school_id` left out): what the
    /// admin edits. Reading it back gives the same school.
    package func table(_ table: SchoolTable, of schoolID: String) -> String {
        ([table.columns] + tableRows(table, of: schoolID)).map { $0.map(CSV.quoted).joined(separator: ",") }.joined(separator: "\n")
            + "\n"
    }

    /// The rows of `table` of `school` as it is served now, each its fields.
    package func tableRows(_ table: SchoolTable, of schoolID: String) -> [[String]] {
        guard let school = school(schoolID) else { return [] }
        var rows: [[String]] = []
        switch table {
        case .reasons:
            for reason in school.orderedReasons where !Reason.defaults.contains(reason) {
                rows.append([reason.code, reason.label, String(reason.requiresDetail), String(reason.serviceSessions)])
            }
        case .calendar:
            // Consecutive days off with one name are one row, as they were written.
            var first: (day: Int, name: String)?
            var last = 0
            for (day, name) in school.calendar.daysOff.sorted(by: { $0.key < $1.key }) {
                if let open = first, open.name == name, day == last + 1 {
                    last = day
                    continue
                }
                if let open = first { rows.append(Roster.calendarRow(open.day, last, open.name)) }
                first = (day, name)
                last = day
            }
            if let open = first { rows.append(Roster.calendarRow(open.day, last, open.name)) }
        case .serviceSlots:
            for slot in school.service.slots {
                rows.append([CommunityServiceSlot.weekdays[slot.weekday], slot.time, slot.place, String(slot.capacity)])
            }
        case .rules:
            for rule in rules[schoolID] ?? [] {
                rows.append([
                    rule.reason ?? "*", String(rule.count), String(rule.days), rule.notifyText, rule.label, String(rule.urgent),
                    String(rule.acrossYears)
                ])
            }
        }
        return rows
    }

    /// What `text` as `school`'s `table` would change, each row checked as
    /// its file's are: the rows then, those it adds and those it removes.
    package func tableChange(_ table: SchoolTable, of school: String, text: String) throws(RosterError) -> (
        rows: [[String]], added: [[String]], removed: [[String]]
    ) {
        let after = try applying([
            RosterVersion(schoolId: school, version: 1, students: nil, tables: [table: text], madeBy: "", madeAt: "")
        ])
        let (before, now) = (tableRows(table, of: school), after.tableRows(table, of: school))
        return (now, now.filter { !before.contains($0) }, before.filter { !now.contains($0) })
    }

    private static func calendarRow(_ first: Int, _ last: Int, _ name: String) -> [String] {
        [Timestamp.dateString(civil: first), last == first ? "" : Timestamp.dateString(civil: last), name]
    }

    /// `school` with `tables` in place of what it had of each, and its
    /// rules: each table read as its file is, the rules (given or kept)
    /// checked against the reasons. The first broken row is the error.
    static func applying(_ tables: [SchoolTable: String], to school: School, rules: [SchoolRule]) throws(RosterError) -> (
        School, [SchoolRule]
    ) {
        let fixed = ["school_id": school.id]
        var schools = [school.id: school]
        if let text = tables[.reasons] {
            let own = try readReasons(.text(text), fixed: fixed)
            if let other = own.keys.first(where: { $0 != school.id }) {
                throw RosterError(file: SchoolTable.reasons.rawValue, line: nil, reason: "unknown school '\(other)'")
            }
            schools[school.id] = school.with(ownReasons: own[school.id] ?? [])
        }
        if let text = tables[.calendar] {
            schools[school.id]?.calendar = SchoolCalendar()
            try readCalendar(.text(text), into: &schools, fixed: fixed)
        }
        if let text = tables[.serviceSlots] {
            schools[school.id]?.service.slots = []
            try readServiceSlots(.text(text), into: &schools, fixed: fixed)
        }
        let served = schools[school.id] ?? school
        if let text = tables[.rules] { return (served, try readRules(.text(text), schools: schools, fixed: fixed)[school.id] ?? []) }
        for rule in rules {
            if let reason = rule.reason, served.reason(reason) == nil {
                throw RosterError(
                    file: SchoolTable.reasons.rawValue, line: nil,
                    reason: "the rule '\(rule.label)' counts reason '\(reason)', which this table no longer has; change the rule first")
            }
        }
        return (served, rules)
    }
}
