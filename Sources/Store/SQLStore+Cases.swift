import Common
import Guidance

/// Cases (issue 66): a rule crossing opens one in the transaction that
/// decided the crossing, a teacher's `guidance.case.step` event opens or
/// moves one. A case's row holds its opening; where it stands (state,
/// holder, next date) is the fold of its steps in time order through
/// `GuidanceCase.applying`, written again after every step, so a step that
/// arrives before its case (a replay reads the topics side by side) is
/// folded in when the case opens, and a replay or a second replica finds
/// the same case.
extension SQLStore {
    /// Version 17: cases and their steps. `refused` says why a step changed
    /// nothing (two teachers moved the case at once, say), as the last fold
    /// found.
    static let cases = """
        CREATE TABLE IF NOT EXISTS cases (
            case_id TEXT PRIMARY KEY,
            school_id TEXT NOT NULL,
            student_id TEXT NOT NULL,
            origin TEXT NOT NULL,
            label TEXT NOT NULL,
            roles TEXT NOT NULL,
            opened_by TEXT,
            opened_at TEXT NOT NULL,
            rule_key TEXT,
            ordinal INTEGER,
            guidance_ids TEXT,
            state TEXT NOT NULL,
            holder TEXT,
            next_date TEXT,
            changed_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS cases_of_student ON cases(school_id, student_id);
        CREATE INDEX IF NOT EXISTS cases_open ON cases(school_id) WHERE state NOT IN ('closed', 'withdrawn');
        CREATE TABLE IF NOT EXISTS case_steps (
            step_id TEXT PRIMARY KEY,
            case_id TEXT NOT NULL,
            school_id TEXT NOT NULL,
            student_id TEXT NOT NULL,
            action TEXT NOT NULL,
            state TEXT,
            next_date TEXT,
            to_teacher TEXT,
            note TEXT,
            actor TEXT NOT NULL,
            at TEXT NOT NULL,
            refused TEXT,
            notice TEXT
        );
        CREATE INDEX IF NOT EXISTS case_steps_of_case ON case_steps(case_id, at, step_id);
        """

    static let caseColumns =
        "case_id, school_id, student_id, origin, label, roles, opened_by, opened_at, state, holder, next_date, changed_at, guidance_ids, rule_key"

    static func guidanceCase(_ row: [SQLValue]) -> GuidanceCase {
        var opened = GuidanceCase(
            caseId: row[0].string ?? "", schoolId: row[1].string ?? "", studentId: row[2].string ?? "",
            origin: GuidanceCase.Origin(rawValue: row[3].string ?? "") ?? .teacher, label: row[4].string ?? "",
            roles: Set((row[5].string ?? "").split(separator: "+").compactMap { Teacher.Role(rawValue: String($0)) }),
            holder: row[9].string, state: GuidanceCase.State(rawValue: row[8].string ?? "") ?? .new, nextDate: row[10].string,
            openedAt: row[7].string ?? "", changedAt: row[11].string ?? "")
        opened.ruleKey = row[13].string
        return opened
    }

    /// The case a crossing that just became active opens, or opens again
    /// (확인 전) if the records had withdrawn it, at the time of its last
    /// record: a replay opens it at the same time, and folds the same steps
    /// after it.
    static func openCase(
        crossing rule: SchoolRule, ordinal: Int, guidanceIds: String, school: String, student: String, at now: String,
        origin: GuidanceCase.Origin = .rule, in database: any SQLDatabase
    ) throws(StoreError) {
        let id = GuidanceCase.id(school: school, student: student, ruleKey: rule.key, ordinal: ordinal)
        let opened = try database.run(
            """
            INSERT INTO cases (case_id, school_id, student_id, origin, label, roles, opened_at, rule_key, ordinal, guidance_ids,
                state, changed_at)
            VALUES ($1, $2, $3, $10, $4, $5, $6, $7, $8, $9, 'new', $6)
            ON CONFLICT (case_id) DO NOTHING
            """,
            [
                .text(id), .text(school), .text(student), .text(rule.label), .text(rule.notifyText), .text(now), .text(rule.key),
                .integer(Int64(ordinal)), .text(guidanceIds), .text(origin.rawValue)
            ])
        if opened == 0 {
            try systemStep(.reopen, case: id, school: school, student: student, now: now, in: database)
        }
        try refold(id, in: database)
    }

    /// 철회: the case of a crossing the records no longer make, at the
    /// deletion's time (the decision's, when no deletion of the batch undid it).
    static func withdrawCase(rule: SchoolRule, ordinal: Int, school: String, student: String, at now: String, in database: any SQLDatabase)
        throws(StoreError)
    {
        let id = GuidanceCase.id(school: school, student: student, ruleKey: rule.key, ordinal: ordinal)
        try systemStep(.withdraw, case: id, school: school, student: student, now: now, in: database)
        try refold(id, in: database)
    }

    /// The cases of students' 불참 (`GuidanceCase.missedSittings`), brought
    /// to what their 불참 records not taken back say, in the transaction
    /// that applied them: a second 불참 opens one, a 되돌리기 that leaves one
    /// withdraws it. `students`: those whose 불참 the batch recorded or took
    /// back, with the time of the newest.
    static func decideMissedCases(_ students: [StudentKey: String], in database: any SQLDatabase) throws(StoreError) {
        for (key, at) in students.sorted(by: { $0.key < $1.key }) {
            let rule = GuidanceCase.missedSittings(school: key.school)
            let missed = try database.query(
                """
                SELECT service_id, local_date, recorded_at FROM service_records
                WHERE school_id = $1 AND student_id = $2 AND recorded = 1 AND withdrawn = 0 AND outcome = $3
                ORDER BY local_date, recorded_at, service_id
                """, [.text(key.school), .text(key.student), .text(CommunityServiceRecord.Outcome.missed.rawValue)]
            ) {
                SchoolRule.Counted(
                    guidanceId: $0[0].string ?? "", date: $0[1].string ?? "", reasonCode: rule.reason ?? "", occurredAt: $0[2].string ?? "")
            }
            let crossings = rule.crossings(of: missed)
            let stored = try database.query(
                "SELECT ordinal, state FROM cases WHERE school_id = $1 AND student_id = $2 AND rule_key = $3",
                [.text(key.school), .text(key.student), .text(rule.key)]
            ) { ($0[0].int ?? 0, GuidanceCase.State(rawValue: $0[1].string ?? "") ?? .new) }
            let states = Dictionary(stored, uniquingKeysWith: { first, _ in first })
            for (index, counted) in crossings.enumerated() where states[index + 1] == nil || states[index + 1] == .withdrawn {
                try openCase(
                    crossing: rule, ordinal: index + 1, guidanceIds: counted.map(\.guidanceId).joined(separator: " "), school: key.school,
                    student: key.student, at: counted.last?.occurredAt ?? at, origin: .service, in: database)
            }
            for (ordinal, state) in states where ordinal > crossings.count && state.isOpen {
                try withdrawCase(rule: rule, ordinal: ordinal, school: key.school, student: key.student, at: at, in: database)
            }
        }
    }

    private static func systemStep(
        _ action: CaseStep.Action, case id: String, school: String, student: String, now: String, in database: any SQLDatabase
    ) throws(StoreError) {
        try database.run(
            """
            INSERT INTO case_steps (step_id, case_id, school_id, student_id, action, actor, at) VALUES ($1, $2, $3, $4, $5, '', $6)
            ON CONFLICT (step_id) DO NOTHING
            """, [.text("\(id)/\(action.name)/\(now)"), .text(id), .text(school), .text(student), .text(action.name), .text(now)])
    }

    /// A teacher's step, once per event id; `open` opens the case it names
    /// (held by the teacher who opened it), a 보호자 안내 the case allows is
    /// written as a digest with one webhook delivery (`sendNotice`). Returns
    /// why it is refused when the case belongs to another school or student.
    static func record(_ step: CaseStep, notice: GuardianNotice? = nil, in database: any SQLDatabase) throws(StoreError) -> String? {
        let owner = try database.query("SELECT school_id, student_id FROM cases WHERE case_id = $1", [.text(step.caseId)]).first
        if let owner, owner[0].string != step.schoolId || owner[1].string != step.studentId {
            return "case \(step.caseId) is another student's"
        }
        if case .open = step.action, owner == nil {
            try database.run(
                """
                INSERT INTO cases (case_id, school_id, student_id, origin, label, roles, opened_by, opened_at, state, holder, changed_at)
                VALUES ($1, $2, $3, 'teacher', $4, '', $5, $6, 'new', $5, $6)
                ON CONFLICT (case_id) DO NOTHING
                """,
                [.text(step.caseId), .text(step.schoolId), .text(step.studentId), .text(step.note ?? ""), .text(step.by), .text(step.at)])
        }
        var state: String?
        var nextDate: String?
        var to: String?
        switch step.action {
        case .move(let chosen, let date):
            state = chosen.rawValue
            nextDate = date
        case .handOver(let teacher):
            to = teacher
        case .open, .note, .withdraw, .reopen, .guardianNotice:
            break
        }
        let written = try database.run(
            """
            INSERT INTO case_steps (step_id, case_id, school_id, student_id, action, state, next_date, to_teacher, note, actor, at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (step_id) DO NOTHING
            """,
            [
                .text(step.eventId), .text(step.caseId), .text(step.schoolId), .text(step.studentId), .text(step.action.name), state.sql,
                nextDate.sql, to.sql, step.note.sql, .text(step.by), .text(step.at)
            ])
        if written > 0 {
            try refold(step.caseId, in: database)
            if case .guardianNotice = step.action { try sendNotice(step, notice, in: database) }
        }
        return nil
    }

    /// A 보호자 안내 is sent once, when its step is first written and its
    /// case allowed it: a digest of scope `guardian` with one delivery to
    /// the school's webhook, through the outbox like any digest. Not sent,
    /// and the step says why (`notice`): the case did not allow it, the
    /// school has no webhook, the step is more than a day old (a replay
    /// into a new store must not write to parents again), or the text
    /// names a teacher who recorded one of the student's guidances (the
    /// gate teacher is never named to parents).
    private static func sendNotice(_ step: CaseStep, _ notice: GuardianNotice?, in database: any SQLDatabase) throws(StoreError) {
        let refused = try database.query("SELECT refused FROM case_steps WHERE step_id = $1", [.text(step.eventId)]).first?.first?.string
        let exists = try !database.query("SELECT 1 FROM cases WHERE case_id = $1", [.text(step.caseId)]).isEmpty
        var outcome: String
        if let refused {
            outcome = "not sent: \(refused)"
        } else if !exists {
            outcome = "not sent: the case is not open here"
        } else if let notice {
            let recorders = try database.query(
                "SELECT DISTINCT recorded_by FROM guidances WHERE school_id = $1 AND student_id = $2 AND registered = 1",
                [.text(step.schoolId), .text(step.studentId)]
            ) { $0[0].string ?? "" }
            let named = recorders.compactMap { notice.teacherNames[$0] }.filter { !$0.isEmpty && (step.note ?? "").contains($0) }
            if notice.webhook == nil {
                outcome = "not sent: the school has no webhook (webhooks.csv)"
            } else if (Timestamp.parse(step.at) ?? 0) < notice.decidedAt - 86_400 {
                outcome = "not sent: the step is more than a day old (a replay)"
            } else if !named.isEmpty {
                outcome = "not sent: it names the teacher who recorded the guidance"
            } else {
                let digest = notice.digest(of: step)
                try database.run(
                    """
                    INSERT INTO digests (digest_id, teacher_id, school_id, date, scope, grade, class_number, revision, created_at, read, subject,
                        text, entries, counts)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, 1, $9, $10, $11, $12)
                    ON CONFLICT (digest_id) DO NOTHING
                    """,
                    [
                        .text(digest.digestId), .text(digest.teacherId), .text(digest.schoolId), .text(digest.date),
                        .text(digest.scope.rawValue), .integer(Int64(digest.grade)), digest.classNumber.sql, .text(digest.createdAt),
                        .text(digest.subject), .text(digest.text), .text(DigestColumns.entries(digest.entries)),
                        .text(DigestColumns.counts(digest.counts))
                    ])
                for statement in SQLStore.enqueue(
                    [(digest, [DeliveryTarget(channel: .webhook, target: notice.webhook ?? "")])], in: database)
                {
                    try database.run(statement.sql, statement.parameters)
                }
                outcome = digest.digestId
            }
        } else {
            outcome = "not sent: the roster did not know the student"
        }
        try database.run("UPDATE case_steps SET notice = $2 WHERE step_id = $1", [.text(step.eventId), .text(outcome)])
    }

    /// Folds the case's steps, in time order, into where it stands; each
    /// step keeps why it changed nothing. A case not opened yet stays
    /// unwritten: its opening folds the steps that came first.
    static func refold(_ id: String, in database: any SQLDatabase) throws(StoreError) {
        guard let row = try database.query("SELECT \(caseColumns) FROM cases WHERE case_id = $1", [.text(id)]).first else { return }
        var steps: [(id: String, action: CaseStep.Action?, at: String, was: String?)] = []  // in time order below
        try database.forEachRow(
            "SELECT step_id, action, state, next_date, to_teacher, at, refused FROM case_steps WHERE case_id = $1 ORDER BY at, step_id",
            [.text(id)]
        ) { step in
            let action = caseAction(name: step[1].string ?? "", state: step[2].string, nextDate: step[3].string, to: step[4].string)
            steps.append((step[0].string ?? "", action, step[5].string ?? "", step[6].string))
        }
        steps = inTimeOrder(steps, at: \.at, id: \.id)
        let (folded, refusals) = asOpened(row).folding(steps.map { ($0.action, $0.at) })
        for (step, refused) in zip(steps, refusals) where refused != step.was {
            try database.run("UPDATE case_steps SET refused = $2 WHERE step_id = $1", [.text(step.id), refused.sql])
        }
        try database.run(
            "UPDATE cases SET state = $2, holder = $3, next_date = $4, changed_at = $5 WHERE case_id = $1",
            [.text(id), .text(folded.state.rawValue), folded.holder.sql, folded.nextDate.sql, .text(folded.changedAt)])
    }

    /// Steps in the order they were taken: by their time as an instant, then
    /// by id. Not by the text: a time on a whole second is written without
    /// milliseconds (`…:36Z`), which sorts after `…:36.341Z` as text, and a
    /// step taken 341 ms after another was folded before it.
    static func inTimeOrder<Step>(_ steps: [Step], at: (Step) -> String, id: (Step) -> String) -> [Step] {
        steps.map { (Timestamp.parse(at($0)) ?? 0, id($0), $0) }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
    }

    /// A case's row as the case opened: 확인 전, held by whoever opened it
    /// by hand (`opened_by`), what its steps are folded onto.
    private static func asOpened(_ row: [SQLValue]) -> GuidanceCase {
        var opened = guidanceCase(row)
        (opened.state, opened.holder, opened.nextDate, opened.changedAt) = (.new, row[6].string, nil, opened.openedAt)
        return opened
    }

    private static func caseAction(name: String, state: String?, nextDate: String?, to: String?) -> CaseStep.Action? {
        switch name {
        case "open": .open
        case "note": .note
        case "withdraw": .withdraw
        case "reopen": .reopen
        case "guardian-notice": .guardianNotice
        case "hand-over": to.map { .handOver(to: $0) }
        case "move": state.flatMap(GuidanceCase.State.init(rawValue:)).map { .move($0, nextDate: nextDate) }
        default: nil
        }
    }

    /// A line of a case's history.
    package struct CaseHistoryLine: Sendable, Equatable {
        package let caseId: String
        package let stepId: String
        package let action: String
        package let state: String?
        package let nextDate: String?
        package let to: String?
        package let note: String?
        /// The teacher's id; empty for the records' own steps (철회, reopened).
        package let by: String
        package let at: String
        package let refused: String?
        /// A 보호자 안내's outcome: the digest that carries it to the school's
        /// webhook, or `not sent: why`.
        package var notice: String? = nil
    }

    static let stepColumns = "case_id, step_id, action, state, next_date, to_teacher, note, actor, at, refused, notice"

    static func historyLine(_ step: [SQLValue]) -> CaseHistoryLine {
        CaseHistoryLine(
            caseId: step[0].string ?? "", stepId: step[1].string ?? "", action: step[2].string ?? "", state: step[3].string,
            nextDate: step[4].string, to: step[5].string, note: step[6].string, by: step[7].string ?? "", at: step[8].string ?? "",
            refused: step[9].string, notice: step[10].string)
    }

    /// The school's cases, open ones only unless `closedToo`, of `students`
    /// (nil: every student), newest change first.
    package func cases(school: String, students: [String]? = nil, closedToo: Bool = false) throws(StoreError) -> [GuidanceCase] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            var sql = "SELECT \(SQLStore.caseColumns) FROM cases WHERE school_id = $1"
            var parameters: [SQLValue] = [.text(school)]
            if !closedToo { sql += " AND state NOT IN ('closed', 'withdrawn')" }
            if let students {
                guard !students.isEmpty else { return [] }
                sql += " AND student_id IN (" + (2...(students.count + 1)).map { "$\($0)" }.joined(separator: ", ") + ")"
                parameters += students.map(SQLValue.text)
            }
            return try database.query(sql + " ORDER BY changed_at DESC, case_id", parameters) { SQLStore.guidanceCase($0) }
        }
    }

    /// One case of the school with its history, oldest step first; nil when there is none.
    package func guidanceCase(school: String, id: String) throws(StoreError) -> (GuidanceCase, [String], [CaseHistoryLine])? {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.snapshot { () throws(StoreError) -> (GuidanceCase, [String], [CaseHistoryLine])? in
                guard
                    let row = try database.query(
                        "SELECT \(SQLStore.caseColumns) FROM cases WHERE case_id = $1 AND school_id = $2", [.text(id), .text(school)]
                    ).first
                else { return nil }
                let lines = SQLStore.inTimeOrder(
                    try database.query(
                        "SELECT \(SQLStore.stepColumns) FROM case_steps WHERE case_id = $1 ORDER BY at, step_id", [.text(id)],
                        as: SQLStore.historyLine),
                    at: \.at, id: \.stepId)
                let counted = (row[12].string ?? "").split(separator: " ").map(String.init)
                return (SQLStore.guidanceCase(row), counted, lines)
            }
        }
    }
}

extension SQLStore {
    /// What 현황's "is it working" counts for a school from `from` through
    /// `to` (school-local days), read in one snapshot.
    package struct FollowUp: Sendable {
        /// 교내봉사 records of those days, served and missed (불참), not withdrawn.
        package var records: [CommunityServiceRecord] = []
        /// Sessions served on those days, with their due dates.
        package var served: [CommunityServiceDuty] = []
        /// Every case of the school, as it opened, with its steps in time order.
        package var cases: [(opened: GuidanceCase, steps: [(action: CaseStep.Action?, at: String)])] = []
    }

    package func followUp(school: String, from: String, to: String) throws(StoreError) -> FollowUp {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.snapshot { () throws(StoreError) -> FollowUp in
                var facts = FollowUp()
                let days: [SQLValue] = [.text(school), .text(from), .text(to)]
                facts.records = try database.query(
                    """
                    SELECT \(SQLStore.communityServiceRecordColumns) FROM service_records
                    WHERE school_id = $1 AND recorded = 1 AND withdrawn = 0 AND local_date >= $2 AND local_date <= $3
                    """, days, as: SQLStore.communityServiceRecord)
                facts.served = try database.query(
                    """
                    SELECT \(SQLStore.dutyColumns) FROM service_duties d
                    WHERE d.school_id = $1 AND d.cancelled = 0 AND d.served_on >= $2 AND d.served_on <= $3 AND \(SQLStore.notClosed)
                    """, days
                ) { SQLStore.duty($0[...]) }
                var steps: [String: [(action: CaseStep.Action?, at: String, id: String)]] = [:]
                try database.forEachRow(
                    """
                    SELECT case_id, action, state, next_date, to_teacher, at, step_id FROM case_steps
                    WHERE case_id IN (SELECT case_id FROM cases WHERE school_id = $1) ORDER BY case_id, at, step_id
                    """, [.text(school)]
                ) { step in
                    let action = SQLStore.caseAction(
                        name: step[1].string ?? "", state: step[2].string, nextDate: step[3].string, to: step[4].string)
                    steps[step[0].string ?? "", default: []].append((action, step[5].string ?? "", step[6].string ?? ""))
                }
                facts.cases = try database.query(
                    "SELECT \(SQLStore.caseColumns) FROM cases WHERE school_id = $1 ORDER BY opened_at, case_id", [.text(school)]
                ) { row in
                    let opened = SQLStore.asOpened(row)
                    return (opened, SQLStore.inTimeOrder(steps[opened.caseId] ?? [], at: \.at, id: \.id).map { ($0.action, $0.at) })
                }
                return facts
            }
        }
    }
}
