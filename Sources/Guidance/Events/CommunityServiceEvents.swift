import Common

/// Volunteer service a student served (봉사 완료), or a sitting they missed
/// (불참), recorded by the grade's volunteer-duty teacher or an admin; or
/// sessions an admin closed with a reason (종결: at the new school year, a
/// transfer): what a `CommunityServiceRecorded` event says and the notifier
/// stores.
package struct CommunityServiceRecord: Sendable, Equatable {
    package enum Outcome: String, Sendable {
        case served
        /// A no-show at the sitting of `dutyId`: owed again at the next sitting with room.
        case missed
        /// `sessions` no longer owed, not served (종결), the note saying why:
        /// off the student's account and their sittings, by an admin.
        case closed

        package static let names = "served, missed or closed"
    }

    package let serviceId: String
    package let schoolId: String
    package let grade: Int
    package let studentId: String
    /// The school-local day it was served, `YYYY-MM-DD`.
    package let date: String
    package let sessions: Int
    package let note: String?
    package let recordedBy: String
    /// RFC 3339, UTC.
    package let recordedAt: String
    package var outcome = Outcome.served
    /// The scheduled session (`CommunityServiceDuty.dutyId`) it serves or missed;
    /// nil: the student's earliest open sessions.
    package var dutyId: String?

    package init(
        serviceId: String, schoolId: String, grade: Int, studentId: String, date: String, sessions: Int, note: String?,
        recordedBy: String, recordedAt: String, outcome: Outcome = .served, dutyId: String? = nil
    ) {
        self.outcome = outcome
        self.dutyId = dutyId
        self.serviceId = serviceId
        self.schoolId = schoolId
        self.grade = grade
        self.studentId = studentId
        self.date = date
        self.sessions = sessions
        self.note = note
        self.recordedBy = recordedBy
        self.recordedAt = recordedAt
    }
}

/// The `guidance.service.recorded` event on `Topics.service`, keyed
/// `school/grade` like the student's guidances. The first event of a
/// `serviceId` wins; a withdrawal wins over it whatever the order.
/// Version 2 added `outcome` and `dutyId`; version 1 reads as served.
package struct CommunityServiceRecorded: Sendable, Equatable {
    package let eventId: String
    package var record: CommunityServiceRecord

    package init(eventId: String, record: CommunityServiceRecord) {
        self.eventId = eventId
        self.record = record
    }

    /// Sessions one record may hold.
    package static let sessionsRange = 1...20

    package var json: [UInt8] {
        var writer = JSONWriter(capacity: 448)
        writer.field("schemaVersion", CommunityServiceRecorded.schemaVersion)
        writer.field("type", EventType.communityServiceRecorded.rawValue)
        writer.field("eventId", eventId)
        writer.field("serviceId", record.serviceId)
        writer.field("schoolId", record.schoolId)
        writer.field("grade", record.grade)
        writer.field("studentId", record.studentId)
        writer.field("date", record.date)
        writer.field("sessions", record.sessions)
        writer.field("note", record.note)
        writer.field("recordedBy", record.recordedBy)
        writer.field("recordedAt", record.recordedAt)
        writer.field("outcome", record.outcome.rawValue)
        writer.field("dutyId", record.dutyId)
        return writer.finish()
    }

    package static let schemaVersion = 2

    package init(json fields: JSONFields) throws(FieldError) {
        var outcome = CommunityServiceRecord.Outcome.served
        var dutyId: String?
        if try fields.integer("schemaVersion") >= 2 {
            let name = try fields.string("outcome")
            guard let named = CommunityServiceRecord.Outcome(rawValue: name) else {
                throw FieldError(field: "outcome", message: "'\(name)' is not \(CommunityServiceRecord.Outcome.names)")
            }
            outcome = named
            dutyId = try fields.optionalString("dutyId")
            if outcome == .missed && dutyId == nil { throw FieldError(field: "dutyId", message: "is required for a missed sitting") }
        }
        self.init(
            eventId: try fields.string("eventId"),
            record: CommunityServiceRecord(
                serviceId: try fields.string("serviceId"), schoolId: try fields.string("schoolId"),
                grade: try fields.integer("grade", in: Student.seatRange), studentId: try fields.string("studentId"),
                date: try fields.string("date"), sessions: try fields.integer("sessions", in: CommunityServiceRecorded.sessionsRange),
                note: try fields.optionalString("note"), recordedBy: try fields.string("recordedBy"),
                recordedAt: try fields.string("recordedAt"), outcome: outcome, dutyId: dutyId))
    }
}

/// A service record taken back (`guidance.service.withdrawn`).
package struct CommunityServiceWithdrawn: Sendable, Equatable {
    package let eventId: String
    package let serviceId: String
    package let schoolId: String
    package let grade: Int
    package let studentId: String
    package let withdrawnBy: String
    package let occurredAt: String

    package init(
        eventId: String, serviceId: String, schoolId: String, grade: Int, studentId: String, withdrawnBy: String, occurredAt: String
    ) {
        self.eventId = eventId
        self.serviceId = serviceId
        self.schoolId = schoolId
        self.grade = grade
        self.studentId = studentId
        self.withdrawnBy = withdrawnBy
        self.occurredAt = occurredAt
    }

    package var json: [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.field("schemaVersion", 1)
        writer.field("type", EventType.communityServiceWithdrawn.rawValue)
        writer.field("eventId", eventId)
        writer.field("serviceId", serviceId)
        writer.field("schoolId", schoolId)
        writer.field("grade", grade)
        writer.field("studentId", studentId)
        writer.field("withdrawnBy", withdrawnBy)
        writer.field("occurredAt", occurredAt)
        return writer.finish()
    }

    package init(json fields: JSONFields) throws(FieldError) {
        self.init(
            eventId: try fields.string("eventId"), serviceId: try fields.string("serviceId"), schoolId: try fields.string("schoolId"),
            grade: try fields.integer("grade", in: Student.seatRange), studentId: try fields.string("studentId"),
            withdrawnBy: try fields.string("withdrawnBy"), occurredAt: try fields.string("occurredAt"))
    }
}

extension Roster {
    /// The record as kept (id lowercased, note trimmed), or every rule it
    /// breaks, each naming its field: the one check of the ingest (a
    /// request) and the notifier (an event). `date` lies between `firstDay`
    /// and `today`. `sameGrade`: the student must be in the record's grade
    /// (the ingest, where a teacher picked it); the notifier takes the grade
    /// as it was when the record was made (a record belongs to the student,
    /// and a grade change in March is no reason to drop it).
    package func checkedService(_ event: CommunityServiceRecord, today: String, firstDay: String?, sameGrade: Bool = true)
        throws(Registration
        .Invalid) -> CommunityServiceRecord
    {
        guard school(event.schoolId) != nil else {
            throw Registration.Invalid(
                problems: [FieldError(field: "schoolId", message: "unknown school '\(event.schoolId)'")], awaitingRoster: true)
        }
        var problems: [FieldError] = []
        var unknown = 0
        // The notifier's check: a student a later roster version no longer lists was the school's when recorded.
        switch sameGrade ? student(school: event.schoolId, id: event.studentId) : knownStudent(school: event.schoolId, id: event.studentId)
        {
        case nil:
            problems.append(FieldError(field: "studentId", message: "no student '\(event.studentId)' at this school"))
            unknown += 1
        case let student? where sameGrade && student.grade != event.grade:
            // The ingest's check: the teacher's view of the grade is behind.
            problems.append(
                FieldError(field: "grade", message: "student '\(event.studentId)' is in grade \(student.grade), not \(event.grade)"))
            unknown += 1
        default:
            break
        }
        // The notifier's: a teacher a later roster version no longer lists recorded it as the school's.
        let recorder = sameGrade ? teachers[event.recordedBy] : knownTeacher(event.recordedBy)
        if recorder?.schoolID != event.schoolId {
            problems.append(FieldError(field: "recordedBy", message: "unknown teacher '\(event.recordedBy)' at this school"))
            if recorder == nil { unknown += 1 }
        }
        if Timestamp.parseDate(event.date) == nil {
            problems.append(FieldError(field: "date", message: "must be a date, YYYY-MM-DD"))
        } else if event.date > today {
            problems.append(FieldError(field: "date", message: "must not be after the school's today (\(today))"))
        } else if let firstDay, event.date < firstDay {
            problems.append(FieldError(field: "date", message: "must not be before \(firstDay) (RETENTION_DAYS)"))
        }
        if let duty = event.dutyId, !CommunityServiceDuty.isID(duty) {
            problems.append(FieldError(field: "dutyId", message: "must be a session id, <guidanceId>/<n>"))
        }
        if event.outcome == .missed && event.dutyId == nil {
            problems.append(FieldError(field: "dutyId", message: "is required for 불참 (outcome missed)"))
        }
        if event.outcome == .missed && event.sessions != 1 {
            problems.append(FieldError(field: "sessions", message: "must be 1 for 불참 (outcome missed)"))
        }
        // A blank note is refused below, as every note is.
        if event.outcome == .closed && event.note == nil {
            problems.append(FieldError(field: "note", message: "is required for 종결 (outcome closed): the reason"))
        }
        if !CommunityServiceRecorded.sessionsRange.contains(event.sessions) {
            problems.append(
                FieldError(
                    field: "sessions", message: "must be a whole number from 1 to \(CommunityServiceRecorded.sessionsRange.upperBound)"))
        }
        var note: String?
        do {
            note = try Reason.detail(event.note)
        } catch {
            problems.append(FieldError(field: "note", message: error.description))
        }
        guard problems.isEmpty else { throw Registration.Invalid(problems: problems, awaitingRoster: unknown == problems.count) }
        return CommunityServiceRecord(
            serviceId: event.serviceId.lowercased(), schoolId: event.schoolId, grade: event.grade, studentId: event.studentId,
            date: event.date,
            sessions: event.sessions, note: note, recordedBy: event.recordedBy, recordedAt: event.recordedAt, outcome: event.outcome,
            dutyId: event.dutyId?.lowercased())
    }
}

/// A sitting a school adds once (봉사 → 교내봉사 일정, by an admin): a day,
/// time and place with room, beside the weekly ones of `service_slots.csv`.
/// The `guidance.service.sitting` event on `Topics.communityService`, keyed
/// `school/0`; the first event of a `sittingId` wins. Applied, it seats the
/// sessions that had no seat by their due date, in due order.
package struct CommunityServiceSittingAdded: Sendable, Equatable {
    package let eventId: String
    package let sittingId: String
    package let schoolId: String
    package let slot: SlotTime
    package let capacity: Int
    package let addedBy: String
    /// RFC 3339, UTC.
    package let addedAt: String

    package init(
        eventId: String, sittingId: String, schoolId: String, slot: SlotTime, capacity: Int, addedBy: String, addedAt: String
    ) {
        self.eventId = eventId
        self.sittingId = sittingId
        self.schoolId = schoolId
        self.slot = slot
        self.capacity = capacity
        self.addedBy = addedBy
        self.addedAt = addedAt
    }

    /// How far ahead a sitting may be added, in days.
    package static let daysAhead = 120
    package static let maxPlaceLength = 40

    package var json: [UInt8] {
        var writer = JSONWriter(capacity: 320)
        writer.field("schemaVersion", 1)
        writer.field("type", EventType.communityServiceSittingAdded.rawValue)
        writer.field("eventId", eventId)
        writer.field("sittingId", sittingId)
        writer.field("schoolId", schoolId)
        writer.field("date", slot.date)
        writer.field("time", slot.time)
        writer.field("place", slot.place)
        writer.field("capacity", capacity)
        writer.field("addedBy", addedBy)
        writer.field("addedAt", addedAt)
        return writer.finish()
    }

    package init(json fields: JSONFields) throws(FieldError) {
        self.init(
            eventId: try fields.string("eventId"), sittingId: try fields.string("sittingId"), schoolId: try fields.string("schoolId"),
            slot: SlotTime(date: try fields.string("date"), time: try fields.string("time"), place: try fields.string("place")),
            capacity: try fields.integer("capacity", in: CommunityServicePolicy.capacityRange), addedBy: try fields.string("addedBy"),
            addedAt: try fields.string("addedAt"))
    }
}

extension Roster {
    /// The sitting as kept (ids lowercased, place trimmed), or every rule
    /// it breaks, each naming its field: the ingest's check (with `today`:
    /// from the school's today up to `daysAhead` after it) and the
    /// notifier's (without: a replay of a sitting long past is no error).
    /// The school must have a 교내봉사 schedule, and a sitting may not fall
    /// on one of its weekly sittings' day and time.
    package func checkedSitting(_ sitting: CommunityServiceSittingAdded, today: String?) throws(Registration.Invalid)
        -> CommunityServiceSittingAdded
    {
        guard let school = school(sitting.schoolId) else {
            throw Registration.Invalid(
                problems: [FieldError(field: "schoolId", message: "unknown school '\(sitting.schoolId)'")], awaitingRoster: true)
        }
        var problems: [FieldError] = []
        if school.service.dueDays == nil {
            problems.append(FieldError(field: "schoolId", message: "school '\(school.id)' has no 교내봉사 schedule (service_due_days)"))
        }
        if !RandomID.isUUID(sitting.sittingId) { problems.append(FieldError(field: "sittingId", message: "must be a UUID")) }
        // The notifier's check (no `today`) takes a teacher who left since.
        if (today == nil ? knownTeacher(sitting.addedBy) : teachers[sitting.addedBy])?.schoolID != sitting.schoolId {
            problems.append(FieldError(field: "addedBy", message: "unknown teacher '\(sitting.addedBy)' at this school"))
        }
        let slot = sitting.slot
        if let day = Timestamp.civilDay(slot.date) {
            if let today, let now = Timestamp.civilDay(today), day < now || day > now + CommunityServiceSittingAdded.daysAhead {
                problems.append(
                    FieldError(
                        field: "date",
                        message: "must be from the school's today (\(today)) to \(CommunityServiceSittingAdded.daysAhead) days after it"))
            }
            let weekday = Timestamp.daysSinceMonday(civil: day)
            if school.calendar.isSchoolDay(day), school.service.slots.contains(where: { $0.weekday == weekday && $0.time == slot.time }) {
                problems.append(FieldError(field: "time", message: "a weekly sitting is at \(slot.time) on \(slot.date) already"))
            }
        } else {
            problems.append(FieldError(field: "date", message: "must be a date, YYYY-MM-DD"))
        }
        if Roster.minuteOfDay(slot.time) == nil || slot.time.count != 5 {
            problems.append(FieldError(field: "time", message: "must be HH:MM"))
        }
        var place = ""
        do {
            place = try Reason.detail(slot.place) ?? ""
            // Counted as the contract's maxLength counts: code points, before trimming.
            if slot.place.unicodeScalars.count > CommunityServiceSittingAdded.maxPlaceLength {
                problems.append(
                    FieldError(field: "place", message: "must be at most \(CommunityServiceSittingAdded.maxPlaceLength) characters"))
            }
        } catch {
            problems.append(FieldError(field: "place", message: error.description))
        }
        if !CommunityServicePolicy.capacityRange.contains(sitting.capacity) {
            problems.append(
                FieldError(
                    field: "capacity", message: "must be a whole number from 1 to \(CommunityServicePolicy.capacityRange.upperBound)"))
        }
        guard problems.isEmpty else { throw Registration.Invalid(problems: problems, awaitingRoster: false) }
        return CommunityServiceSittingAdded(
            eventId: sitting.eventId, sittingId: sitting.sittingId.lowercased(), schoolId: sitting.schoolId,
            slot: SlotTime(date: slot.date, time: slot.time, place: place), capacity: sitting.capacity, addedBy: sitting.addedBy,
            addedAt: sitting.addedAt)
    }
}
