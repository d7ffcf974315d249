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
            let entries = (current.filter { !reportedIDs.contains($0.guidanceId) }.map(added)
                + reported.filter { !currentIDs.contains($0.guidanceId) }.map(removed))
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

    private func added(_ record: GuidanceRecord) -> DigestEntry {
        DigestEntry(guidanceId: record.guidanceId, student: record.student, reason: record.reason, occurredAt: record.occurredAt, change: .added)
    }

    /// An entry told before, taken back as it was told.
    private func removed(_ told: DigestEntry) -> DigestEntry {
        DigestEntry(guidanceId: told.guidanceId, student: told.student, reason: told.reason, occurredAt: told.occurredAt, change: .removed)
    }

    static func order(_ a: DigestEntry, _ b: DigestEntry) -> Bool {
        (a.student.grade, a.student.classNumber, a.student.number, a.occurredAt, a.guidanceId)
            < (b.student.grade, b.student.classNumber, b.student.number, b.occurredAt, b.guidanceId)
    }
}

/// The Korean subject and body of a digest, readable as a message.
struct DigestText {
    let subject: String
    let body: String

    init(school: School, date: String, recipient: Recipient, revision: Int, entries: [DigestEntry], counts: [String: Int]) {
        let day = DigestText.dayLabel(date)
        let group = recipient.classNumber.map { "\(recipient.grade)학년 \($0)반" } ?? "\(recipient.grade)학년"
        let added = entries.filter { $0.change == .added }
        let removed = entries.filter { $0.change == .removed }
        var lines: [String] = []
        if revision == 1 {
            subject = "[\(school.name)] \(day) \(group) 교문 지도 \(added.count)건"
            lines.append("\(day) \(group) 교문 지도 명단입니다.")
            if recipient.scope == .grade {
                lines.append("아래 학생들을 봉사활동 명단에 올려 주세요.")
            }
        } else {
            var changes: [String] = []
            if !added.isEmpty { changes.append("추가 \(added.count)건") }
            if !removed.isEmpty { changes.append("취소 \(removed.count)건") }
            subject = "[\(school.name)] [정정 \(revision)판] \(day) \(group) 교문 지도 \(changes.joined(separator: ", "))"
            lines.append("\(day) \(group) 교문 지도 명단 정정(\(revision)판)입니다. 바뀐 내용만 적었습니다.")
        }
        for (title, part) in [("추가", added), ("취소", removed)] where !part.isEmpty {
            lines.append("")
            if revision > 1 { lines.append("■ \(title)") }
            var currentClass: Int?
            for entry in part {
                if recipient.scope == .grade && entry.student.classNumber != currentClass {
                    currentClass = entry.student.classNumber
                    lines.append("[\(entry.student.classNumber)반]")
                }
                lines.append("• " + DigestText.line(entry, zone: school))
            }
        }
        if !counts.isEmpty {
            let summary = school.reasonOrder.compactMap { code in
                counts[code].map { "\(school.reason(code)?.label ?? code) \($0)건" }
            }
            lines.append("")
            lines.append("사유별: " + summary.joined(separator: " · "))
        }
        body = lines.joined(separator: "\n")
    }

    /// "12번 김민지 — 기타 (길에 껌을 뱉음), 07:52"
    static func line(_ entry: DigestEntry, zone school: School) -> String {
        var reason = entry.reason.label
        if let detail = entry.reason.detail, !detail.isEmpty { reason += " (\(detail))" }
        return "\(entry.student.number)번 \(entry.student.name) — \(reason), \(localTime(entry.occurredAt, school: school))"
    }

    static func localTime(_ occurredAt: String, school: School) -> String {
        guard let instant = Timestamp.parse(occurredAt) else { return occurredAt }
        return Timestamp.localTime(instant, in: school.timeZone)
    }

    /// "2026-11-30" → "11월 30일(월)"
    static func dayLabel(_ date: String) -> String {
        guard let (year, month, day) = Timestamp.parseDate(date) else { return date }
        let weekdays = ["목", "금", "토", "일", "월", "화", "수"]
        let days = Timestamp.daysFromCivil(year: year, month: month, day: day)
        return "\(month)월 \(day)일(\(weekdays[((days % 7) + 7) % 7]))"
    }
}
