import Access
import Common
import Foundation
import Guidance
import HTTP
import Store
import Wiring

/// What a school's data-protection officer asks for, admins of the school
/// only: the access log (접속 기록), and one student's records exported (JSON,
/// or CSV for spreadsheets) or erased. Each of these reads or erasures is
/// itself recorded in the access log.
struct DataProtectionHandlers: Sendable {
    let store: SQLStore
    let accessLog: AccessLog
    let clock: @Sendable () -> Double
    let logger: Logger

    func routes(into router: inout GuardedRouter) {
        let admins = Access.school(roles: [.admin])
        router.get("/v1/schools/{schoolId}/access-log", admins, readAccessLog)
        router.get("/v1/schools/{schoolId}/students/{studentId}/records", admins, export)
        router.delete("/v1/schools/{schoolId}/students/{studentId}/records", admins, erase)
    }

    // MARK: - Access log

    struct AccessLogJSON: Encodable, Sendable {
        struct Item: Encodable, Sendable {
            let accessId: String
            let at: String
            let teacherId: String
            let teacherName: String?
            let action: String
            let target: String
            /// The student's name, for the kinds whose target is a student.
            let targetName: String?
            let client: String

            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(accessId, forKey: .accessId)
                try container.encode(at, forKey: .at)
                try container.encode(teacherId, forKey: .teacherId)
                try container.encode(teacherName, forKey: .teacherName)
                try container.encode(action, forKey: .action)
                try container.encode(target, forKey: .target)
                try container.encode(targetName, forKey: .targetName)
                try container.encode(client, forKey: .client)
            }

            enum CodingKeys: String, CodingKey { case accessId, at, teacherId, teacherName, action, target, targetName, client }
        }

        let schoolId: String
        let from: String
        let to: String
        /// How many records match in the period, of which `items` are the newest `limit`.
        let total: Int
        let items: [Item]
    }

    /// `from` and `to` are RFC 3339 instants or school-local days
    /// (`YYYY-MM-DD`, from its start; `to` through its end); by default the
    /// last 7 days. Only `teacherId`'s, of one `action`, of one `studentId`,
    /// of the students whose roster name holds `studentName`, when asked.
    /// Newest first, at most `limit` (default 500, at most 5,000), with the
    /// `total` that match; students named as the roster names them.
    @Sendable func readAccessLog(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let now = clock()
        let to = try instant(request, "to", school: school, endOfDay: true) ?? now + 1
        let from = try instant(request, "from", school: school, endOfDay: false) ?? to - 7 * 86_400
        guard from < to else { throw HTTPError(FieldError(field: "from", message: "must be before to")) }
        let teacher = request.query["teacherId"]
        // Students by id, by name (searched in the roster: the log holds ids only), or both.
        let byID = request.query["studentId"].map { [$0] }
        let name = request.query["studentName"]?.trimmingCharacters(in: .whitespaces) ?? ""
        let named = name.isEmpty ? nil : caller.roster.students(school: school.id).filter { $0.name.contains(name) }.map(\.id)
        let students = named.map { named in byID.map { $0.filter(named.contains) } ?? named } ?? byID
        let action = try request.query["action"].map { (name) throws(HTTPError) in
            guard let known = AccessRecord.Action(rawValue: name) else {
                throw HTTPError(
                    FieldError(
                        field: "action", message: "must be one of " + AccessRecord.Action.allCases.map(\.rawValue).joined(separator: ", ")))
            }
            return known
        }
        let limit = try request.integerQuery("limit", in: 1...5000) ?? 500
        let store = self.store
        let (records, total) = try await store.blocking {
            try store.accessLog(school: school.id, from: from, to: to, teacher: teacher, action: action, students: students, limit: limit)
        }
        accessLog.record(
            caller, .accessLog, school: school.id,
            target: request.query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&"))
        let roster = caller.roster
        return .json(
            AccessLogJSON(
                schoolId: school.id, from: Timestamp.format(from), to: Timestamp.format(to), total: total,
                items: records.map {
                    AccessLogJSON.Item(
                        accessId: $0.accessId, at: $0.at, teacherId: $0.teacherId, teacherName: roster.teachers[$0.teacherId]?.name,
                        action: $0.action.rawValue, target: $0.target,
                        targetName: AccessRecord.Action.studentTargets.contains($0.action)
                            ? roster.student(school: school.id, id: $0.target)?.name : nil,
                        client: $0.client)
                }))
    }

    private func instant(_ request: Request, _ name: String, school: School, endOfDay: Bool) throws(HTTPError) -> Double? {
        guard let text = request.query[name] else { return nil }
        if let instant = Timestamp.parse(text) { return instant }
        if let (year, month, day) = Timestamp.parseDate(text) {
            // The school-local day's start: midnight UTC moved by the zone's offset that day.
            let midnight = Double(Timestamp.daysFromCivil(year: year, month: month, day: day) + (endOfDay ? 1 : 0)) * 86_400
            return midnight - Double(school.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: midnight)))
        }
        throw HTTPError(FieldError(field: name, message: "must be an RFC 3339 timestamp or YYYY-MM-DD"))
    }

    // MARK: - Export and erasure

    struct Export: Encodable, Sendable {
        struct Guidance: Encodable, Sendable {
            let guidanceId: String
            let date: String
            let occurredAt: String
            let student: StudentRef
            let reason: ReasonRef
            let recordedBy: String
            let deletedBy: String?
            let deletedAt: String?
            let digests: [String]

            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(guidanceId, forKey: .guidanceId)
                try container.encode(date, forKey: .date)
                try container.encode(occurredAt, forKey: .occurredAt)
                try container.encode(student, forKey: .student)
                try container.encode(reason, forKey: .reason)
                try container.encode(recordedBy, forKey: .recordedBy)
                try container.encode(deletedBy, forKey: .deletedBy)
                try container.encode(deletedAt, forKey: .deletedAt)
                try container.encode(digests, forKey: .digests)
            }

            enum CodingKeys: String, CodingKey {
                case guidanceId, date, occurredAt, student, reason, recordedBy, deletedBy, deletedAt, digests
            }
        }

        struct Appearance: Encodable, Sendable {
            let digestId: String
            let teacherId: String
            let date: String
            let revision: Int
            let guidanceId: String
            let change: String
        }

        let schoolId: String
        let studentId: String
        let exportedAt: String
        let guidances: [Guidance]
        let digests: [Appearance]
        /// Volunteer service recorded (봉사), in the JSON only: the CSV is one row per guidance.
        let services: [CommunityService]
        /// The school rules the student crossed, in the JSON only.
        let crossings: [Crossing]
        /// The sessions of 교내봉사 owed, as scheduled, in the JSON only.
        let duties: [CommunityServiceDuty]
        /// 교내봉사 owed, served, closed (종결), missed (불참) and served late, in the JSON only.
        let serviceCounts: CommunityServiceCounts
        /// Their cases with every step, in the JSON only.
        let cases: [Case]

        struct Case: Encodable, Sendable {
            let caseId: String
            /// `rule` or `teacher`.
            let origin: String
            let label: String
            let state: String
            /// The state in the school's words (`상담 예정`).
            let stateLabel: String
            let holder: String?
            let nextDate: String?
            let openedAt: String
            let changedAt: String
            let steps: [Step]

            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(caseId, forKey: .caseId)
                try container.encode(origin, forKey: .origin)
                try container.encode(label, forKey: .label)
                try container.encode(state, forKey: .state)
                try container.encode(stateLabel, forKey: .stateLabel)
                try container.encode(holder, forKey: .holder)
                try container.encode(nextDate, forKey: .nextDate)
                try container.encode(openedAt, forKey: .openedAt)
                try container.encode(changedAt, forKey: .changedAt)
                try container.encode(steps, forKey: .steps)
            }

            enum CodingKeys: String, CodingKey {
                case caseId, origin, label, state, stateLabel, holder, nextDate, openedAt, changedAt, steps
            }
        }

        /// A line of a case's history: a teacher's step, or the records'
        /// own (`withdraw`, `reopen`; `by` empty). `refused`: why it changed nothing.
        struct Step: Encodable, Sendable {
            let stepId: String
            let action: String
            let state: String?
            let nextDate: String?
            let to: String?
            let note: String?
            let by: String
            let at: String
            let refused: String?

            init(_ line: SQLStore.CaseHistoryLine) {
                stepId = line.stepId
                action = line.action
                state = line.state
                nextDate = line.nextDate
                to = line.to
                note = line.note
                by = line.by
                at = line.at
                refused = line.refused
            }

            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(stepId, forKey: .stepId)
                try container.encode(action, forKey: .action)
                try container.encode(state, forKey: .state)
                try container.encode(nextDate, forKey: .nextDate)
                try container.encode(to, forKey: .to)
                try container.encode(note, forKey: .note)
                try container.encode(by, forKey: .by)
                try container.encode(at, forKey: .at)
                try container.encode(refused, forKey: .refused)
            }

            enum CodingKeys: String, CodingKey { case stepId, action, state, nextDate, to, note, by, at, refused }
        }

        struct Crossing: Encodable, Sendable {
            let label: String
            /// `SchoolRule.key`: `*/3/7` is any reason, 3 within 7 days.
            let rule: String
            let date: String
            /// False once a deletion undid it (its notice withdrawn).
            let active: Bool
            let guidanceIds: [String]
        }

        /// `records` of the student as exported now.
        init(_ records: StudentRecords, school: String, student: String, exportedAt: String) {
            schoolId = school
            studentId = student
            self.exportedAt = exportedAt
            guidances = records.guidances.map { item in
                Guidance(
                    guidanceId: item.record.guidanceId, date: item.record.date, occurredAt: item.record.occurredAt,
                    student: item.record.student,
                    reason: item.record.reason, recordedBy: item.record.recordedBy, deletedBy: item.deletedBy, deletedAt: item.deletedAt,
                    digests: records.digests.filter { $0.guidanceId == item.record.guidanceId }.map(\.digestId))
            }
            digests = records.digests.map {
                Appearance(
                    digestId: $0.digestId, teacherId: $0.teacherId, date: $0.date, revision: $0.revision, guidanceId: $0.guidanceId,
                    change: $0.change.rawValue)
            }
            services = records.services.map {
                CommunityService(
                    serviceId: $0.record.serviceId, date: $0.record.date, sessions: $0.record.sessions, note: $0.record.note,
                    recordedBy: $0.record.recordedBy, recordedAt: $0.record.recordedAt, withdrawnBy: $0.withdrawnBy,
                    withdrawnAt: $0.withdrawnAt, outcome: $0.record.outcome.rawValue, dutyId: $0.record.dutyId)
            }
            duties = records.duties
            serviceCounts = CommunityServiceCounts(records.standing, duties: records.duties)
            cases = records.cases.map { item in
                Case(
                    caseId: item.caseId, origin: item.origin.rawValue, label: item.label, state: item.state.rawValue,
                    stateLabel: item.state.label, holder: item.holder,
                    nextDate: item.nextDate, openedAt: item.openedAt, changedAt: item.changedAt,
                    steps: records.caseSteps.filter { $0.caseId == item.caseId }.map(Step.init))
            }
            crossings = records.crossings.map {
                Crossing(
                    label: $0.rule.label, rule: $0.ruleKey, date: $0.date, active: $0.active, guidanceIds: $0.records.map(\.guidanceId))
            }
        }

        struct CommunityService: Encodable, Sendable {
            let serviceId: String
            let date: String
            let sessions: Int
            let note: String?
            let recordedBy: String
            let recordedAt: String
            let withdrawnBy: String?
            let withdrawnAt: String?
            /// `served`, or `missed` (불참 at a sitting, nothing served).
            let outcome: String
            let dutyId: String?

            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(serviceId, forKey: .serviceId)
                try container.encode(date, forKey: .date)
                try container.encode(sessions, forKey: .sessions)
                try container.encode(note, forKey: .note)
                try container.encode(recordedBy, forKey: .recordedBy)
                try container.encode(recordedAt, forKey: .recordedAt)
                try container.encode(withdrawnBy, forKey: .withdrawnBy)
                try container.encode(withdrawnAt, forKey: .withdrawnAt)
                try container.encode(outcome, forKey: .outcome)
                try container.encode(dutyId, forKey: .dutyId)
            }

            enum CodingKeys: String, CodingKey {
                case serviceId, date, sessions, note, recordedBy, recordedAt, withdrawnBy, withdrawnAt, outcome, dutyId
            }
        }
    }

    /// Everything stored about the student: JSON, or with `Accept: text/csv`
    /// one row per guidance, UTF-8 with a byte-order mark (spreadsheet
    /// programs then read Korean right).
    @Sendable func export(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let studentID = try DataProtectionHandlers.studentID(request)
        let store = self.store
        let records = try await store.blocking { try store.records(school: school.id, student: studentID) }
        guard caller.roster.student(school: school.id, id: studentID) != nil || !records.isEmpty else {
            throw HTTPError.notFound("no student '\(studentID)' at this school, and nothing stored about that id")
        }
        accessLog.record(caller, .export, school: school.id, target: studentID)
        let export = Export(records, school: school.id, student: studentID, exportedAt: Timestamp.format(clock()))
        return DataProtectionHandlers.csvAnswer(request, export) ?? .json(export)
    }

    /// With `Accept: text/csv`, `export` as a CSV file; nil otherwise.
    static func csvAnswer(_ request: Request, _ export: Export) -> Response? {
        guard wantsCSV(request) else { return nil }
        return csvFile(csv(export), name: "records-\(export.studentId.filter { $0.isLetter || $0.isNumber || $0 == "-" }).csv")
    }

    static func wantsCSV(_ request: Request) -> Bool { (request.header("accept") ?? "").contains("text/csv") }

    /// `text` as a file a spreadsheet opens: UTF-8 with a byte-order mark
    /// (then Korean reads right), saved as `name`.
    static func csvFile(_ text: String, name: String) -> Response {
        Response(
            status: 200,
            headers: [("Content-Type", "text/csv; charset=utf-8"), ("Content-Disposition", "attachment; filename=\"\(name)\"")],
            body: [0xEF, 0xBB, 0xBF] + Array(text.utf8))
    }

    /// One row per guidance; the header names the columns in Korean and English.
    static func csv(_ export: Export) -> String {
        let header = [
            "guidanceId", "날짜(date)", "시각(occurredAt)", "학년(grade)", "반(class)", "번호(number)", "이름(name)", "사유(reason)",
            "상세(detail)", "기록(recordedBy)", "삭제(deletedBy)", "삭제 시각(deletedAt)", "명단(digests)"
        ]
        var lines = [header.map(field).joined(separator: ",")]
        for item in export.guidances {
            lines.append(
                [
                    item.guidanceId, item.date, item.occurredAt, String(item.student.grade), String(item.student.classNumber),
                    String(item.student.number),
                    item.student.name, item.reason.label, item.reason.detail ?? "", item.recordedBy, item.deletedBy ?? "",
                    item.deletedAt ?? "",
                    item.digests.joined(separator: " ")
                ].map(field).joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// RFC 4180: quoted when it holds a comma, quote or line break; a
    /// leading `=`, `+`, `-`, `@`, tab or carriage return is prefixed with
    /// `'` so a spreadsheet does not run it as a formula. The first Unicode
    /// scalar, not the first `Character`: `=` followed by a combining mark,
    /// a ZWJ or a variation selector is one grapheme that is not `"="`.
    static func field(_ value: String) -> String {
        var text = value
        if let first = text.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) { text = "'" + text }
        return CSV.quoted(text)
    }

    struct Erased: Encodable, Sendable {
        let schoolId: String
        let guidances: Int
        let digests: Int
    }

    /// The path's student id. `(erased)`, what erased students become in
    /// stored digests, is nobody's: not exported (it would gather every
    /// erased student's leftovers), not erased again.
    static func studentID(_ request: Request) throws(HTTPError) -> String {
        let id = request.parameter("studentId")
        guard id != SQLStore.erasedID else { throw HTTPError.notFound("'\(id)' names no student: it stands for students already erased") }
        return id
    }

    /// Erases the student's records from the store (see `SQLStore.erase`).
    @Sendable func erase(_ request: Request, _ caller: Caller) async throws -> Response {
        let school = try caller.school(of: request)
        let studentID = try DataProtectionHandlers.studentID(request)
        let store = self.store
        // As the export answers: an id that is neither a student of the
        // school nor anything stored is 404, not an erasure of nothing.
        if caller.roster.student(school: school.id, id: studentID) == nil,
            try await store.blocking({ try store.records(school: school.id, student: studentID) }).isEmpty
        {
            throw HTTPError.notFound("no student '\(studentID)' at this school, and nothing stored about that id")
        }
        let erased = try await store.blocking {
            try store.erase(school: school.id, student: studentID) { digest in
                // A rule notice names the student only in its entries; a
                // 보호자 안내's text is the teacher's, and may name them.
                if digest.scope == .rule { return (digest.subject, digest.text) }
                if digest.scope == .guardian { return (digest.subject, "(삭제된 학생의 보호자 안내)") }
                let text = DigestText(digest, school: school)
                return (text.subject, text.body)
            }
        }
        accessLog.record(caller, .erase, school: school.id, target: SQLStore.erasedID)
        logger.info(
            "a student's records were erased",
            [
                "school": school.id, "guidances": String(erased.guidances), "digests": String(erased.digests),
                "by": caller.teacher?.id ?? "(authentication off)"
            ])
        return .json(Erased(schoolId: school.id, guidances: erased.guidances, digests: erased.digests))
    }
}
