import Guidance
import Store

/// Decides what each recipient must be told about a school's day: the
/// difference between the active guidances and what the recipient already
/// has. The first revision lists every guidance; later ones only the changes.
/// Pure: the store calls it inside its transaction.
struct DigestPlanner: Sendable {
    let roster: Roster

    func plan(school: School, date: String, state: DeliveryState, createdAt: String) -> [Digest] {
        var recipients = roster.teachers(of: school.id, role: .homeroom).compactMap { teacher -> Recipient? in
            guard let grade = teacher.grade, let classNumber = teacher.classNumber else { return nil }
            return Recipient(teacherId: teacher.id, scope: .class, grade: grade, classNumber: classNumber)
        }
        recipients += roster.teachers(of: school.id, role: .volunteerDuty).compactMap { teacher -> Recipient? in
            teacher.grade.map { Recipient(teacherId: teacher.id, scope: .grade, grade: $0, classNumber: nil) }
        }
        return recipients.compactMap { recipient -> Digest? in
            let current = state.active.filter { covers(recipient, $0) }
            let reported = state.reported[recipient] ?? []
            let currentIDs = Set(current.map(\.guidanceId))
            let reportedIDs = Set(reported.map(\.guidanceId))
            let frequency = { (student: StudentRef) in state.frequencies[student.studentId] ?? Frequency(thisWeek: 0, thisMonth: 0) }
            let entries = (current.filter { !reportedIDs.contains($0.guidanceId) }.map { added($0, frequency($0.student)) }
                + reported.filter { !currentIDs.contains($0.guidanceId) }.map { removed($0, frequency($0.student)) })
                .sorted(by: DigestPlanner.order)
            guard !entries.isEmpty else { return nil }
            let revision = (state.revisions[recipient] ?? 0) + 1
            var counts: [String: Int] = [:]
            for entry in entries where entry.change == .added {
                counts[entry.reason.code, default: 0] += 1
            }
            let text = DigestText(school: school, date: date, recipient: recipient, revision: revision, entries: entries, counts: counts)
            return Digest(
                digestId: Digest.id(school: school.id, date: date, recipient: recipient, revision: revision),
                teacherId: recipient.teacherId, schoolId: school.id, date: date, scope: recipient.scope,
                grade: recipient.grade, classNumber: recipient.classNumber, revision: revision, createdAt: createdAt,
                read: false, subject: text.subject, text: text.body, entries: entries, counts: counts)
        }
    }

    private func covers(_ recipient: Recipient, _ record: GuidanceRecord) -> Bool {
        record.student.grade == recipient.grade && (recipient.classNumber == nil || record.student.classNumber == recipient.classNumber)
    }

    private func added(_ record: GuidanceRecord, _ frequency: Frequency) -> DigestEntry {
        DigestEntry(
            guidanceId: record.guidanceId, student: record.student, reason: record.reason, occurredAt: record.occurredAt, change: .added,
            frequency: frequency)
    }

    /// An entry told before, taken back as it was told, with the student's
    /// counts as they are now (the cancelled guidance no longer in them).
    private func removed(_ told: DigestEntry, _ frequency: Frequency) -> DigestEntry {
        DigestEntry(
            guidanceId: told.guidanceId, student: told.student, reason: told.reason, occurredAt: told.occurredAt, change: .removed,
            frequency: frequency)
    }

    static func order(_ a: DigestEntry, _ b: DigestEntry) -> Bool {
        (a.student.grade, a.student.classNumber, a.student.number, a.occurredAt, a.guidanceId)
            < (b.student.grade, b.student.classNumber, b.student.number, b.occurredAt, b.guidanceId)
    }
}

/// A digest in the words teachers use (docs/design.md, "Words"), the one
/// place they are chosen for every channel: the subject, the plain text
/// (inbox, e-mail, webhooks) and the parts the HTML e-mail lays out. A
/// digest is a day's 교문 지도 명단; a later revision is its `N차 정정`, whose
/// entries are 추가된 기록 and 취소된 기록.
struct DigestText {
    let school: School
    let date: String
    let recipient: Recipient
    let revision: Int
    let entries: [DigestEntry]
    let counts: [String: Int]

    init(school: School, date: String, recipient: Recipient, revision: Int, entries: [DigestEntry], counts: [String: Int]) {
        self.school = school
        self.date = date
        self.recipient = recipient
        self.revision = revision
        self.entries = entries
        self.counts = counts
    }

    init(_ digest: Digest, school: School) {
        self.init(school: school, date: digest.date, recipient: digest.recipient, revision: digest.revision, entries: digest.entries, counts: digest.counts)
    }

    /// `1차 정정` for the second revision; nil for the first. The pages
    /// write the same from `revision`.
    static func amendmentName(revision: Int) -> String? {
        revision > 1 ? "\(revision - 1)차 정정" : nil
    }

    /// "12월 1일(화) 1학년 3반 교문 지도 명단"
    var title: String {
        let group = recipient.classNumber.map { "\(recipient.grade)학년 \($0)반" } ?? "\(recipient.grade)학년"
        return "\(Timestamp.koreanDay(date)) \(group) 교문 지도 명단"
    }

    var subject: String {
        let added = entries.count { $0.change == .added }
        let removed = entries.count { $0.change == .removed }
        guard let amendment = DigestText.amendmentName(revision: revision) else {
            return "[\(school.name)] \(title) \(added)건"
        }
        let changes = [added > 0 ? "추가 \(added)건" : nil, removed > 0 ? "취소 \(removed)건" : nil].compactMap { $0 }
        return "[\(school.name)] \(title) \(amendment): \(changes.joined(separator: ", "))"
    }

    /// The opening sentences.
    var introduction: [String] {
        if let amendment = DigestText.amendmentName(revision: revision) {
            return ["\(title)의 \(amendment)입니다. 바뀐 기록만 적었습니다."]
        }
        return ["\(title)입니다."] + (recipient.scope == .grade ? ["아래 학생들을 봉사활동 명단에 올려 주세요."] : [])
    }

    /// The entries in order, under a heading in an amendment: added first, then cancelled.
    var sections: [(heading: String?, entries: [DigestEntry])] {
        let added = entries.filter { $0.change == .added }
        let removed = entries.filter { $0.change == .removed }
        guard revision > 1 else { return [(nil, added)] }
        return [("추가된 기록 \(added.count)건", added), ("취소된 기록 \(removed.count)건 (교문에서 지운 기록)", removed)].filter { !$0.entries.isEmpty }
    }

    /// "사유별: 복장 불량 3건 · 실내화 미착용 1건"; nil without added entries.
    var summary: String? {
        guard !counts.isEmpty else { return nil }
        let parts = school.reasonOrder.compactMap { code in counts[code].map { "\(school.reason(code)?.label ?? code) \($0)건" } }
        return "사유별: " + parts.joined(separator: " · ")
    }

    var body: String {
        var lines = introduction
        for section in sections {
            lines.append("")
            if let heading = section.heading { lines.append("■ " + heading) }
            var currentClass: Int?
            for entry in section.entries {
                if recipient.scope == .grade && entry.student.classNumber != currentClass {
                    currentClass = entry.student.classNumber
                    lines.append("[\(entry.student.classNumber)반]")
                }
                lines.append("• " + line(entry))
            }
        }
        if let summary { lines += ["", summary] }
        return lines.joined(separator: "\n")
    }

    /// "12번 김민지 — 기타 (길에 껌을 뱉음), 오전 7:52 · 이번 주 2회 · 이번 달 3회"
    func line(_ entry: DigestEntry) -> String {
        "\(entry.student.number)번 \(entry.student.name) — \(reason(entry)), \(time(entry))" + (frequency(entry).map { " · " + $0 } ?? "")
    }

    /// "기타 (길에 껌을 뱉음)"
    func reason(_ entry: DigestEntry) -> String {
        guard let detail = entry.reason.detail, !detail.isEmpty else { return entry.reason.label }
        return "\(entry.reason.label) (\(detail))"
    }

    /// "오전 7:52" on the school's clock.
    func time(_ entry: DigestEntry) -> String {
        Timestamp.parse(entry.occurredAt).map { Timestamp.koreanTime($0, in: school.timeZone) } ?? entry.occurredAt
    }

    /// "이번 주 2회 · 이번 달 3회"; nil for entries written before it was counted.
    func frequency(_ entry: DigestEntry) -> String? {
        entry.frequency.map { "이번 주 \($0.thisWeek)회 · 이번 달 \($0.thisMonth)회" }
    }
}
