import Common
import Guidance
import Kafka
import Store

/// Turns consumed messages into store events, or says why it cannot. Every
/// event is held to the rules ingest applies, on identity: the school, the
/// student's id, the recorder, the reason and the time window (the
/// notifier's roster decides, see the README). The student keeps the seat
/// (and the grade) the event recorded, so a class or grade change between
/// ingest's roster and ours, or while this service was down, drops nothing.
struct EventDecoder: Sendable {
    let roster: Roster
    let topics: Topics
    /// Registrations for school days a purge would remove are refused: a
    /// replay must never bring a purged day back.
    var retention = Retention()
    /// Seconds since the epoch on the service's clock, for the school's today.
    var now: Double

    func decode(_ message: ConsumedMessage) -> Result<StoredEvent, DecodeFailure> {
        guard let value = message.value else { return .failure(DecodeFailure(reason: "the message's value is null")) }
        guard !value.isEmpty else { return .failure(DecodeFailure(reason: "the message's value is empty")) }
        do throws(FieldError) {
            let fields = JSONFields(try JSONReader.object(value))
            let version = try fields.integer("schemaVersion")
            let type = try fields.string("type")
            // Version 2 is a service record's (`outcome`, `dutyId`).
            guard version == 1 || (version == CommunityServiceRecorded.schemaVersion && type == EventType.communityServiceRecorded.rawValue)
            else { return .failure(DecodeFailure(reason: "unsupported schemaVersion \(version) of \(type)")) }
            switch message.topic {
            case topics.registered where type == EventType.registered.rawValue:
                return registered(try GuidanceRegistered(json: fields))
            case topics.deleted where type == EventType.deleted.rawValue:
                return deleted(try GuidanceDeleted(json: fields))
            case topics.communityService where type == EventType.communityServiceRecorded.rawValue:
                return communityServiceRecorded(try CommunityServiceRecorded(json: fields))
            case topics.communityService where type == EventType.communityServiceWithdrawn.rawValue:
                return communityServiceWithdrawn(try CommunityServiceWithdrawn(json: fields))
            case topics.communityService where type == EventType.communityServiceSittingAdded.rawValue:
                return sittingAdded(try CommunityServiceSittingAdded(json: fields))
            case topics.cases where type == EventType.caseStep.rawValue:
                return caseStep(try CaseStep(json: fields))
            case topics.access where type == AccessRecord.type:
                return accessed(try AccessRecord.records(json: fields))
            default:
                return .failure(DecodeFailure(reason: "event type '\(type)' does not belong on \(message.topic)"))
            }
        } catch {
            return .failure(DecodeFailure(reason: "not a guidance event: \(error)"))
        }
    }

    private func registered(_ event: GuidanceRegistered) -> Result<StoredEvent, DecodeFailure> {
        if let problem = idProblem(event.eventId, event.guidanceId) { return .failure(problem) }
        guard let occurred = Timestamp.parse(event.occurredAt) else {
            return .failure(DecodeFailure(reason: "occurredAt '\(event.occurredAt)' is not RFC 3339"))
        }
        guard let recorded = Timestamp.parse(event.recordedAt) else {
            return .failure(DecodeFailure(reason: "recordedAt '\(event.recordedAt)' is not RFC 3339"))
        }
        let student = event.student
        let registration: Registration
        do {
            registration = try roster.registration(
                school: event.schoolId, studentID: student.studentId,
                recordedSeat: (student.grade, student.classNumber, student.number),
                reasonCode: event.reason.code, detail: event.reason.detail, recordedBy: event.recordedBy,
                occurredAt: occurred, recordedAt: recorded, pastDays: retention.windowDays)
        } catch {
            return .failure(DecodeFailure(reason: error.description, awaitingRoster: error.awaitingRoster))
        }
        let date = Timestamp.localDate(occurred, in: registration.school.timeZone)
        if let kept = retention.firstKeptDay(today: Timestamp.localDate(now, in: registration.school.timeZone)), date < kept {
            return .failure(
                DecodeFailure(reason: "occurredAt: its school day \(date) is older than RETENTION_DAYS (\(retention.days)) keeps"))
        }
        return .success(
            .registered(
                GuidanceRecord(
                    guidanceId: event.guidanceId.lowercased(), schoolId: event.schoolId,
                    date: date, student: StudentRef(registration.student),
                    reason: ReasonRef(code: registration.reason.code, label: registration.reason.label, detail: registration.detail),
                    occurredAt: Timestamp.format(occurred), recordedBy: event.recordedBy,
                    serviceSessions: registration.reason.serviceSessions)))
    }

    /// A service record, held to the ingest's rules (`Roster.communityServiceProblems`)
    /// on the notifier's clock: a day after the school's today, or before
    /// what `RETENTION_DAYS` keeps, is refused.
    private func communityServiceRecorded(_ event: CommunityServiceRecorded) -> Result<StoredEvent, DecodeFailure> {
        if let problem = idProblem(event.eventId, event.record.serviceId, name: "serviceId") { return .failure(problem) }
        let today = roster.school(event.record.schoolId).map { Timestamp.localDate(now, in: $0.timeZone) } ?? ""
        // A day's worth of clock skew between the ingest and this replica is not an error.
        let tomorrow = Timestamp.civilDay(today).map { Timestamp.dateString(civil: $0 + 1) } ?? today
        do {
            // By identity, as registrations are: the grade is the one the ingest saw.
            return .success(
                .communityServiceRecorded(
                    try roster.checkedService(
                        event.record, today: tomorrow, firstDay: retention.firstKeptDay(today: today), sameGrade: false)))
        } catch {
            return .failure(DecodeFailure(reason: error.description, awaitingRoster: error.awaitingRoster))
        }
    }

    private func communityServiceWithdrawn(_ event: CommunityServiceWithdrawn) -> Result<StoredEvent, DecodeFailure> {
        if let problem = idProblem(event.eventId, event.serviceId, name: "serviceId") ?? gradeProblem(event.schoolId, event.grade) {
            return .failure(problem)
        }
        guard let occurred = Timestamp.parse(event.occurredAt) else {
            return .failure(DecodeFailure(reason: "occurredAt '\(event.occurredAt)' is not RFC 3339"))
        }
        return .success(
            .communityServiceWithdrawn(
                serviceId: event.serviceId.lowercased(), schoolId: event.schoolId, grade: event.grade, studentId: event.studentId,
                withdrawnBy: event.withdrawnBy, occurredAt: Timestamp.format(occurred)))
    }

    /// A one-off sitting, held to the ingest's rules but its date: a replay
    /// of one long past is no error.
    private func sittingAdded(_ event: CommunityServiceSittingAdded) -> Result<StoredEvent, DecodeFailure> {
        if let problem = idProblem(event.eventId, event.sittingId, name: "sittingId") { return .failure(problem) }
        guard let added = Timestamp.parse(event.addedAt) else {
            return .failure(DecodeFailure(reason: "addedAt '\(event.addedAt)' is not RFC 3339"))
        }
        do {
            let checked = try roster.checkedSitting(event, today: nil)
            return .success(
                .sittingAdded(
                    CommunityServiceSittingAdded(
                        eventId: checked.eventId, sittingId: checked.sittingId, schoolId: checked.schoolId, slot: checked.slot,
                        capacity: checked.capacity, addedBy: checked.addedBy, addedAt: Timestamp.format(added))))
        } catch {
            return .failure(DecodeFailure(reason: error.description, awaitingRoster: error.awaitingRoster))
        }
    }

    /// A case's step, held to the ingest's rules on identity: the school
    /// and grade, the student, the teacher who took it (and the one it is
    /// handed to) of the school, a note as a reason's detail is.
    private func caseStep(_ step: CaseStep) -> Result<StoredEvent, DecodeFailure> {
        if let problem = idProblem(step.eventId, step.caseId, name: "caseId") ?? gradeProblem(step.schoolId, step.grade) {
            return .failure(problem)
        }
        guard let at = Timestamp.parse(step.at) else { return .failure(DecodeFailure(reason: "at '\(step.at)' is not RFC 3339")) }
        if let problem = roster.caseProblem(step) { return .failure(DecodeFailure(reason: problem, awaitingRoster: true)) }
        let note: String?
        do {
            note = try Reason.detail(step.note)
        } catch {
            return .failure(DecodeFailure(reason: "note: \(error.description)"))
        }
        let kept = CaseStep(
            eventId: step.eventId.lowercased(), caseId: step.caseId.lowercased(), schoolId: step.schoolId, grade: step.grade,
            studentId: step.studentId, action: step.action, note: note, by: step.by, at: Timestamp.format(at))
        // A 보호자 안내 takes along what the roster says now: the student's
        // seat, the school's webhook, the names it must not carry.
        guard case .guardianNotice = step.action, let school = roster.school(step.schoolId),
            let student = roster.student(school: step.schoolId, id: step.studentId)
        else { return .success(.caseStep(kept)) }
        let names = Dictionary(
            roster.teachers.values.filter { $0.schoolID == school.id }.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        return .success(
            .guardianNotice(
                kept,
                GuardianNotice(
                    student: StudentRef(student), schoolName: school.name, webhook: roster.webhooks[school.id]?.url,
                    date: Timestamp.localDate(at, in: school.timeZone), teacherNames: names, decidedAt: now)))
    }

    private func deleted(_ event: GuidanceDeleted) -> Result<StoredEvent, DecodeFailure> {
        if let problem = idProblem(event.eventId, event.guidanceId) ?? gradeProblem(event.schoolId, event.grade) {
            return .failure(problem)
        }
        guard let occurred = Timestamp.parse(event.occurredAt) else {
            return .failure(DecodeFailure(reason: "occurredAt '\(event.occurredAt)' is not RFC 3339"))
        }
        return .success(
            .deleted(
                guidanceId: event.guidanceId.lowercased(), schoolId: event.schoolId, grade: event.grade,
                deletedBy: event.deletedBy, occurredAt: Timestamp.format(occurred)))
    }

    private func accessed(_ records: [AccessRecord]) -> Result<StoredEvent, DecodeFailure> {
        for record in records {
            guard RandomID.isUUID(record.accessId) else {
                return .failure(DecodeFailure(reason: "accessId '\(record.accessId)' is not a UUID"))
            }
            guard Timestamp.parse(record.at) != nil else { return .failure(DecodeFailure(reason: "at '\(record.at)' is not RFC 3339")) }
        }
        return .success(.accessed(records))
    }

    /// A school or grade the roster does not list (yet): held, then dead-lettered.
    private func gradeProblem(_ school: String, _ grade: Int) -> DecodeFailure? {
        guard roster.school(school) != nil else {
            return DecodeFailure(reason: "schoolId unknown school '\(school)'", awaitingRoster: true)
        }
        guard roster.hasGrade(grade, in: school) else {
            return DecodeFailure(reason: "grade: school '\(school)' has no grade \(grade)", awaitingRoster: true)
        }
        return nil
    }

    private func idProblem(_ eventID: String, _ id: String, name: String = "guidanceId") -> DecodeFailure? {
        if !RandomID.isUUID(eventID) { return DecodeFailure(reason: "eventId '\(eventID)' is not a UUID") }
        if !RandomID.isUUID(id) { return DecodeFailure(reason: "\(name) '\(id)' is not a UUID") }
        return nil
    }
}

struct DecodeFailure: Error, Sendable {
    let reason: String
    /// The event names an id the roster does not list yet: held while the
    /// roster may still reload (`RosterHold`), then dead-lettered.
    var awaitingRoster = false
}
