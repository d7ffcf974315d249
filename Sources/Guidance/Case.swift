import Crypto

/// What the school does about a student after the record (issue 66): a
/// rule crossing opens one, a teacher can open one from the student's
/// record, and teachers move it through the school's states until it is
/// closed. A case is its opening plus its steps, in the order the student's
/// topic partition holds them: every replica and every replay fold the same
/// steps into the same case.
package struct GuidanceCase: Sendable, Equatable {
    /// The school's words for where a case stands.
    package enum State: String, Sendable, CaseIterable {
        /// 확인 전: opened, nobody has looked yet.
        case new
        /// 상담 예정: a talk with the student is planned (on `nextDate`).
        case counselingPlanned = "counseling-planned"
        /// 상담 완료
        case counseled
        /// 보호자 상담: the guardians are involved.
        case guardianCounseling = "guardian-counseling"
        /// 선도위원회 회부: taken to the school's discipline committee.
        case referred
        /// 종결: done.
        case closed
        /// 철회: a deletion undid the records that opened it.
        case withdrawn

        package var label: String {
            switch self {
            case .new: "확인 전"
            case .counselingPlanned: "상담 예정"
            case .counseled: "상담 완료"
            case .guardianCounseling: "보호자 상담"
            case .referred: "선도위원회 회부"
            case .closed: "종결"
            case .withdrawn: "철회"
            }
        }

        /// Whether someone still has to act on it.
        package var isOpen: Bool { self != .closed && self != .withdrawn }

        /// The states a teacher may move an open case to: any open state
        /// but 확인 전 (a case once looked at stays looked at), or 종결. 철회
        /// is the records' to decide, never a teacher's.
        package static let chosen: [State] = [.counselingPlanned, .counseled, .guardianCounseling, .referred, .closed]
    }

    /// Why a case was opened.
    package enum Origin: String, Sendable {
        /// A school rule crossed (`SchoolRule.crossings`).
        case rule
        /// Opened by hand from the student's record.
        case teacher
        /// 교내봉사 missed twice (`GuidanceCase.missedSittings`).
        case service
    }

    /// Two 불참 of 교내봉사 not taken back, within a year, open a case for the
    /// grade's volunteer-duty teacher and the school's admins (학생부장); each
    /// two more, another. A rule like a school's, counted over the
    /// student's 불참 records instead of their guidances.
    package static func missedSittings(school: String) -> SchoolRule {
        SchoolRule(
            schoolID: school, reason: CommunityServiceRecord.Outcome.missed.rawValue, count: 2, days: SchoolRule.daysRange.upperBound,
            notify: [.volunteerDuty, .admin], label: "교내봉사 불참 2회")
    }

    package let caseId: String
    package let schoolId: String
    package let studentId: String
    package let origin: Origin
    /// What opened it, in words: the rule's label, or the teacher's note.
    package let label: String
    /// The roles that hold it until it is handed to one teacher: the
    /// rule's `notify` (`homeroom+admin`).
    package let roles: Set<Teacher.Role>
    /// The rule crossed (`SchoolRule.key`), for a rule's case.
    package var ruleKey: String?
    package var holder: String?
    package var state: State
    /// `YYYY-MM-DD`, school-local: when it is next to be looked at.
    package var nextDate: String?
    /// RFC 3339, UTC.
    package let openedAt: String
    package var changedAt: String

    package init(
        caseId: String, schoolId: String, studentId: String, origin: Origin, label: String, roles: Set<Teacher.Role>,
        holder: String? = nil, state: State = .new, nextDate: String? = nil, openedAt: String, changedAt: String? = nil
    ) {
        self.caseId = caseId
        self.schoolId = schoolId
        self.studentId = studentId
        self.origin = origin
        self.label = label
        self.roles = roles
        self.holder = holder
        self.state = state
        self.nextDate = nextDate
        self.openedAt = openedAt
        self.changedAt = changedAt ?? openedAt
    }

    /// The id of the case a rule crossing opens: the same on every replica
    /// and in every replay, so a crossing opens one case however often it
    /// is decided. UUID-shaped, like every other id of the contract.
    package static func id(school: String, student: String, ruleKey: String, ordinal: Int) -> String {
        var hex = Array(SHA256.hex(SHA256.hash(utf8: "case\u{1}\(school)\u{1}\(student)\u{1}\(ruleKey)\u{1}\(ordinal)")).prefix(32))
        // Version 8 (RFC 9562's custom UUID), variant 10.
        hex[12] = "8"
        hex[16] = "a"
        let text = String(hex)
        func part(_ from: Int, _ to: Int) -> Substring { text.dropFirst(from).prefix(to - from) }
        return [part(0, 8), part(8, 12), part(12, 16), part(16, 20), part(20, 32)].joined(separator: "-")
    }

    /// Whether `teacher` is one of those who hold it: the teacher it was
    /// handed to, or, until it is handed to one, a teacher of its roles for
    /// the student's seat (`seat`: the student's grade and class).
    package func isHeld(by teacher: Teacher, seat: (grade: Int, classNumber: Int)) -> Bool {
        guard teacher.schoolID == schoolId else { return false }
        if let holder { return holder == teacher.id }
        return roles.contains { role in
            switch role {
            case .admin: teacher.has(.admin)
            case .homeroom: teacher.has(.homeroom) && teacher.grade == seat.grade && teacher.classNumber == seat.classNumber
            case .volunteerDuty: teacher.has(.volunteerDuty) && teacher.grade == seat.grade
            default: false
            }
        }
    }

    /// The case after `step`, or why the step does not apply: the one
    /// place that decides what a teacher may do to a case.
    package func applying(_ step: CaseStep.Action) -> Result<GuidanceCase, CaseStep.Refusal> {
        var next = self
        if case .reopen = step {
            guard state == .withdrawn else { return .failure(.alreadyOpen) }
            next.state = .new
            return .success(next)
        }
        guard state.isOpen else { return .failure(.closed(state)) }
        switch step {
        case .open:
            return .failure(.alreadyOpen)
        case .move(let state, let nextDate):
            guard State.chosen.contains(state) else { return .failure(.notChosen(state)) }
            guard state != self.state || nextDate != self.nextDate else { return .failure(.unchanged(state)) }
            next.state = state
            next.nextDate = state.isOpen ? nextDate : nil
        case .note, .guardianNotice:
            break
        case .handOver(let teacher):
            guard teacher != holder else { return .failure(.sameHolder(teacher)) }
            next.holder = teacher
        case .withdraw:
            next.state = .withdrawn
            next.nextDate = nil
        case .reopen:
            break
        }
        return .success(next)
    }
}

extension GuidanceCase {
    /// The case after `steps` in time order, from as it opened (확인 전);
    /// with each step's refusal, nil for one that applied (the opening's own
    /// `open` step among them). A nil action is one this version does not
    /// know. The one fold of the store's cases and of 현황's "as of a day".
    package func folding(_ steps: [(action: CaseStep.Action?, at: String)]) -> (GuidanceCase, refusals: [String?]) {
        var folded = self
        let refusals = steps.map { step -> String? in
            switch step.action {
            case .open?:
                return nil
            case let action?:
                switch folded.applying(action) {
                case .success(let next):
                    folded = next
                    folded.changedAt = step.at
                    return nil
                case .failure(let refusal):
                    return refusal.description
                }
            case nil:
                return "unknown action"
            }
        }
        return (folded, refusals)
    }
}

/// One thing done to a case, by a teacher or by the records: what a
/// `guidance.case.step` event says, and one line of the case's history.
package struct CaseStep: Sendable, Equatable {
    package enum Action: Sendable, Equatable {
        /// Opened by hand (the case's first step; a rule's case opens without one).
        case open
        /// To a chosen state, with the date it is next looked at.
        case move(GuidanceCase.State, nextDate: String?)
        /// A note only.
        case note
        /// Handed to another teacher of the school.
        case handOver(to: String)
        /// 보호자 안내: the note goes to the parents through the school's
        /// webhook (the school's SMS or 알림장 system); the state stays.
        case guardianNotice
        /// 철회: the records no longer make the crossing (the store's step, never a teacher's).
        case withdraw
        /// The records make a withdrawn crossing again: 확인 전 once more (the store's step).
        case reopen

        /// The contract's name of the action.
        package var name: String {
            switch self {
            case .open: "open"
            case .move: "move"
            case .note: "note"
            case .handOver: "hand-over"
            case .guardianNotice: "guardian-notice"
            case .withdraw: "withdraw"
            case .reopen: "reopen"
            }
        }
    }

    /// Why a step changed nothing, kept with it in the history.
    package enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case closed(GuidanceCase.State)
        case alreadyOpen
        case notChosen(GuidanceCase.State)
        case unchanged(GuidanceCase.State)
        case sameHolder(String)
        case unknownCase

        package var description: String {
            switch self {
            case .closed(let state): "the case is \(state.label) (\(state.rawValue)) already"
            case .alreadyOpen: "the case is open already"
            case .notChosen(let state): "\(state.label) (\(state.rawValue)) is not a state a teacher moves a case to"
            case .unchanged(let state): "the case is \(state.label) (\(state.rawValue)) already"
            case .sameHolder(let teacher): "the case is held by \(teacher) already"
            case .unknownCase: "no such case of this student"
            }
        }
    }

    package let eventId: String
    package let caseId: String
    package let schoolId: String
    package let grade: Int
    package let studentId: String
    package let action: Action
    package let note: String?
    package let by: String
    /// RFC 3339, UTC.
    package let at: String

    package init(
        eventId: String, caseId: String, schoolId: String, grade: Int, studentId: String, action: Action, note: String?, by: String,
        at: String
    ) {
        self.eventId = eventId
        self.caseId = caseId
        self.schoolId = schoolId
        self.grade = grade
        self.studentId = studentId
        self.action = action
        self.note = note
        self.by = by
        self.at = at
    }
}

extension Roster {
    /// Why the roster does not know what a case step names (the student, the
    /// teacher who took it, the one it is handed to, at the step's school),
    /// or nil: the one check of the ingest and the notifier.
    package func caseProblem(_ step: CaseStep) -> String? {
        guard school(step.schoolId) != nil else { return "schoolId: unknown school '\(step.schoolId)'" }
        guard knownStudent(school: step.schoolId, id: step.studentId) != nil else {
            return "studentId: no student '\(step.studentId)' at this school"
        }
        guard knownTeacher(step.by)?.schoolID == step.schoolId else { return "by: unknown teacher '\(step.by)' at this school" }
        if case .handOver(let to) = step.action, knownTeacher(to)?.schoolID != step.schoolId {
            return "to: unknown teacher '\(to)' at this school"
        }
        return nil
    }
}
