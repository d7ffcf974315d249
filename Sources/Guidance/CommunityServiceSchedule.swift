import Common

/// A school's days: Monday to Friday less its holidays and vacations
/// (`calendar.csv`). Days are days since 1970-01-01 or `YYYY-MM-DD`.
package struct SchoolCalendar: Sendable, Equatable {
    /// Days off by day, each with its name (`개교기념일`).
    package private(set) var daysOff: [Int: String] = [:]

    package init() {}

    /// How far `schoolDay(_:after:)` looks: a year of vacations at most.
    static let horizon = 400

    mutating func close(from first: Int, through last: Int, name: String) {
        for day in first...last { daysOff[day] = name }
    }

    package func isSchoolDay(_ day: Int) -> Bool {
        Timestamp.daysSinceMonday(civil: day) < 5 && daysOff[day] == nil
    }

    package func isSchoolDay(_ date: String) -> Bool {
        Timestamp.civilDay(date).map(isSchoolDay) ?? false
    }

    /// The name of the holiday or vacation `date` falls in.
    package func dayOff(_ date: String) -> String? {
        Timestamp.civilDay(date).flatMap { daysOff[$0] }
    }

    /// The `count`-th school day after `date` (1: the next school day).
    package func schoolDay(_ count: Int, after date: String) -> String? {
        guard var day = Timestamp.civilDay(date) else { return nil }
        var left = count
        for _ in 0..<SchoolCalendar.horizon {
            day += 1
            if isSchoolDay(day) {
                left -= 1
                if left == 0 { return Timestamp.dateString(civil: day) }
            }
        }
        return nil
    }

    /// The last school day before `date`.
    package func schoolDay(before date: String) -> String? {
        guard var day = Timestamp.civilDay(date) else { return nil }
        for _ in 0..<SchoolCalendar.horizon {
            day -= 1
            if isSchoolDay(day) { return Timestamp.dateString(civil: day) }
        }
        return nil
    }

    /// Whether `date` is its week's first school day, when the weekly 봉사
    /// 명단 goes out (a Monday, or the Wednesday after a Monday and
    /// Tuesday off).
    package func isWeekStart(_ date: String) -> Bool {
        guard let day = Timestamp.civilDay(date), isSchoolDay(day) else { return false }
        let monday = day - Timestamp.daysSinceMonday(civil: day)
        return !(monday..<day).contains(where: isSchoolDay)
    }
}

/// A weekly time and place where 교내봉사 is served (`service_slots.csv`).
package struct CommunityServiceSlot: Sendable, Equatable {
    package static let weekdays = ["mon", "tue", "wed", "thu", "fri"]

    /// 0 for Monday … 4 for Friday.
    package let weekday: Int
    /// `HH:MM`, school-local.
    package let time: String
    package let place: String
    package let capacity: Int

    package init(weekday: Int, time: String, place: String, capacity: Int) {
        self.weekday = weekday
        self.time = time
        self.place = place
        self.capacity = capacity
    }
}

/// One sitting of a slot: a school day, its time and place.
package struct SlotTime: Sendable, Equatable, Hashable, Codable {
    package let date: String
    package let time: String
    package let place: String

    package init(date: String, time: String, place: String) {
        self.date = date
        self.time = time
        self.place = place
    }
}

/// How a school schedules the 교내봉사 a guidance owes (`schools.csv`'s
/// `service_due_days`, `service_slots.csv`). Empty: sessions have no due
/// date and no slot.
package struct CommunityServicePolicy: Sendable, Equatable {
    /// Sessions are due within this many school days after the guidance's day.
    package var dueDays: Int?
    /// In weekday and time order.
    package var slots: [CommunityServiceSlot] = []

    package init(dueDays: Int? = nil, slots: [CommunityServiceSlot] = []) {
        self.dueDays = dueDays
        self.slots = slots
    }

    package static let dueDaysRange = 1...60
    package static let capacityRange = 1...500

    package var isEmpty: Bool { dueDays == nil && slots.isEmpty }

    /// One-off sittings (`CommunityServiceSittingAdded`) by day, each with its room.
    package typealias AddedSittings = [String: [(SlotTime, capacity: Int)]]

    /// The slots' sittings on school days after `date`, and the `added`
    /// ones on any day, in time order, as far as `SchoolCalendar.horizon` looks.
    package func sittings(after date: String, calendar: SchoolCalendar, added: AddedSittings = [:]) -> some Sequence<
        (SlotTime, capacity: Int)
    > {
        let first = (Timestamp.civilDay(date) ?? 0) + 1
        let slots = self.slots
        return (first..<first + SchoolCalendar.horizon).lazy.flatMap { day in
            let weekday = Timestamp.daysSinceMonday(civil: day)
            let weekly =
                calendar.isSchoolDay(day)
                ? slots.filter { $0.weekday == weekday }.map {
                    (SlotTime(date: Timestamp.dateString(civil: day), time: $0.time, place: $0.place), capacity: $0.capacity)
                } : []
            guard !added.isEmpty, let extra = added[Timestamp.dateString(civil: day)] else { return weekly }
            return (weekly + extra).sorted { $0.0.time < $1.0.time }
        }
    }

    /// The first sitting after `date` with room, given how many each holds:
    /// on or before the due date when one has room, else the first after it
    /// (one rule: sittings are taken in time order; a seat after the due
    /// date is `lateSeat`, and said). Nil without sittings, or when every
    /// sitting of the horizon is full.
    package func firstSitting(after date: String, calendar: SchoolCalendar, added: AddedSittings = [:], taken: (SlotTime) -> Int)
        -> SlotTime?
    {
        guard !slots.isEmpty || !added.isEmpty else { return nil }
        return sittings(after: date, calendar: calendar, added: added).first { taken($0.0) < $0.capacity }?.0
    }
}

/// One session of 교내봉사 a guidance owes, as the notifier scheduled it:
/// `guidanceId/n` for its n-th session.
package struct CommunityServiceDuty: Sendable, Equatable, Codable {
    package enum State: String, Sendable, Codable {
        /// 예정: a sitting is ahead.
        case scheduled
        /// 완료
        case served
        /// 종결: closed without being served, for `closedReason`.
        case closed
        /// 불참: missed at least once, at a later sitting now.
        case missed
        /// 지남: past its due date, not served.
        case overdue
        /// 확인 필요: its sitting has passed and nobody marked it 완료 or 불참
        /// (before its due date; after it, 지남 says so).
        case unconfirmed
        /// 기한 내 자리 없음: every sitting up to its due date was full when
        /// it was placed (or moved by a 불참), so its seat is after the due
        /// date. Said, never silent: the grade's volunteer-duty teacher and
        /// the admins hear of it the next school day, before it falls due.
        case lateSeat
    }

    package let dutyId: String
    package let studentId: String
    package let guidanceId: String
    package let dueDate: String?
    package let slot: SlotTime?
    /// The day it was served, and by which service record.
    package let servedOn: String?
    package let serviceId: String?
    package let misses: Int
    /// Why it was closed (종결) on `servedOn` instead of served; nil: not closed.
    package let closedReason: String?

    package init(
        dutyId: String, studentId: String, guidanceId: String, dueDate: String?, slot: SlotTime?, servedOn: String?, serviceId: String?,
        misses: Int, closedReason: String? = nil
    ) {
        self.closedReason = closedReason
        self.dutyId = dutyId
        self.studentId = studentId
        self.guidanceId = guidanceId
        self.dueDate = dueDate
        self.slot = slot
        self.servedOn = servedOn
        self.serviceId = serviceId
        self.misses = misses
    }

    private enum CodingKeys: String, CodingKey {
        case dutyId, studentId, guidanceId, dueDate, slot, servedOn, serviceId, misses, closedReason
    }

    /// Every field, `null` where there is none: the contract's `ServiceSession`.
    package func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(dutyId, forKey: .dutyId)
        try container.encode(studentId, forKey: .studentId)
        try container.encode(guidanceId, forKey: .guidanceId)
        try container.encode(dueDate, forKey: .dueDate)
        try container.encode(slot, forKey: .slot)
        try container.encode(servedOn, forKey: .servedOn)
        try container.encode(serviceId, forKey: .serviceId)
        try container.encode(misses, forKey: .misses)
        try container.encode(closedReason, forKey: .closedReason)
    }

    package static func id(guidance: String, session: Int) -> String { "\(guidance)/\(session)" }

    /// `<guidance uuid>/<n>`, n from 1 to `Reason.maxServiceSessions`.
    package static func isID(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, RandomID.isUUID(String(parts[0])), let n = Int(parts[1]) else { return false }
        return (1...Reason.maxServiceSessions).contains(n)
    }

    /// Its state on the school's `today`.
    package func state(today: String) -> State {
        if servedOn != nil { return closedReason == nil ? .served : .closed }
        if let dueDate, dueDate < today { return .overdue }
        if let slot, slot.date < today { return .unconfirmed }
        if isSeatedLate { return .lateSeat }
        return misses > 0 ? .missed : .scheduled
    }

    /// Whether it was served after its due date.
    package var isServedLate: Bool {
        guard let servedOn, let dueDate, closedReason == nil else { return false }
        return servedOn > dueDate
    }

    /// Whether it is open and its sitting comes after its due date.
    package var isSeatedLate: Bool {
        guard servedOn == nil, let dueDate, let slot else { return false }
        return slot.date > dueDate
    }
}

/// A student's 교내봉사 in numbers: sessions owed, served and closed (by
/// the records), 불참 marked and not taken back, and sessions served after their
/// due date. The 봉사 명단, the student's record and the export say the same.
package struct CommunityServiceCounts: Sendable, Equatable, Encodable {
    package let owed: Int
    package let served: Int
    package let closed: Int
    package let missed: Int
    package let late: Int

    package init(_ standing: CommunityServiceStanding, duties: [CommunityServiceDuty]) {
        owed = standing.owed
        served = standing.served
        closed = standing.closed
        missed = duties.reduce(0) { $0 + $1.misses }
        late = duties.count(where: \.isServedLate)
    }
}
