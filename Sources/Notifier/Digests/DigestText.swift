import Common
import Guidance
import Store

/// A digest in the words teachers use (docs/design.md, "Words"), the one
/// place they are chosen for every channel: the subject, the plain text
/// (inbox, e-mail, webhooks) and the parts the HTML e-mail lays out. A
/// digest is a day's 교문 지도 명단; a later revision is its `N차 정정`, whose
/// entries are 추가된 기록 and 삭제된 기록.
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
        self.init(
            school: school, date: digest.date, recipient: digest.recipient, revision: digest.revision, entries: digest.entries,
            counts: digest.counts)
    }

    /// `1차 정정` for the second revision; nil for the first. The pages
    /// write the same from `revision`.
    static func amendmentName(revision: Int) -> String? {
        revision > 1 ? "\(revision - 1)차 정정" : nil
    }

    /// "12월 1일(화) 1학년 3반 교문 지도 명단"; "12월 7일(월) 1학년 봉사 명단";
    /// "12월 10일(목) 전교 교내봉사 지남·불참"
    var title: String {
        let group =
            recipient.grade == 0 ? "전교" : recipient.classNumber.map { "\(recipient.grade)학년 \($0)반" } ?? "\(recipient.grade)학년"
        let kind =
            switch recipient.scope {
            case .service: "봉사 명단"
            case .overdue: "교내봉사 지남·불참"
            default: "교문 지도 명단"
            }
        return "\(Timestamp.koreanDay(date)) \(group) \(kind)"
    }

    /// The weekly 봉사 명단 counts students (명), a day's list guidances (건).
    private var weekly: Bool { recipient.scope == .service }
    private var overdue: Bool { recipient.scope == .overdue }
    private var unit: String { weekly ? "명" : "건" }

    var subject: String {
        let added = entries.count { $0.change == .added }
        let removed = entries.count { $0.change == .removed }
        guard let amendment = DigestText.amendmentName(revision: revision) else {
            return "[\(school.name)] \(title) \(added)\(unit)"
        }
        let changes = [added > 0 ? "추가 \(added)\(unit)" : nil, removed > 0 ? (weekly ? "빠짐" : "삭제") + " \(removed)\(unit)" : nil].compactMap
        { $0 }
        return "[\(school.name)] \(title) \(amendment): \(changes.joined(separator: ", "))"
    }

    /// The opening sentences.
    var introduction: [String] {
        if let amendment = DigestText.amendmentName(revision: revision) {
            return ["\(title)의 \(amendment)입니다. 바뀐 " + (weekly ? "학생만" : "기록만") + " 적었습니다."]
        }
        switch recipient.scope {
        case .service: return ["\(title)입니다. 봉사가 남은 학생 \(entries.count)명입니다."]
        case .grade: return ["\(title)입니다.", "아래 학생들을 봉사활동 명단에 올려 주세요."]
        case .class: return ["\(title)입니다."]
        case .overdue:
            // Not yet due: a 불참, or a seat after the due date; the rest fell due unserved (or were served late).
            let ahead = entries.compactMap(\.overdue).filter { $0.servedOn == nil && ($0.dueDate ?? date) >= date }
            let missed = ahead.count { $0.misses > 0 }
            let late = ahead.count { $0.misses == 0 }
            let parts = [
                entries.count > ahead.count ? "기한까지 하지 않은 교내봉사 \(entries.count - ahead.count)건" : nil,
                missed > 0 ? "불참 \(missed)건" : nil, late > 0 ? "기한 내 자리 없음 \(late)건" : nil
            ]
            var lines = ["\(title)입니다. " + parts.compactMap { $0 }.joined(separator: ", ") + "입니다."]
            // How many seats the sittings lack, by due date: what the school must add.
            let short = Dictionary(grouping: ahead.filter(\.isSeatedLate), by: { $0.dueDate ?? "" }).sorted { $0.key < $1.key }
            if !short.isEmpty {
                lines.append(
                    "기한 안의 교내봉사 자리가 모자랍니다: "
                        + short.map { "\(Timestamp.koreanDay($0.key))까지 \($0.value.count)석" }.joined(separator: ", ")
                        + ". 봉사 일정을 더하거나 자리를 늘려야 기한 안에 마칠 수 있습니다.")
            }
            return lines
        // A rule notice is worded once, when it is written (`RuleNotices`);
        // a 보호자 안내 is the teacher's own text.
        case .rule, .guardian: return []
        }
    }

    /// The entries in order, under a heading in an amendment: added first, then cancelled.
    var sections: [(heading: String?, entries: [DigestEntry])] {
        let added = entries.filter { $0.change == .added }
        let removed = entries.filter { $0.change == .removed }
        guard revision > 1 else { return [(nil, added)] }
        let headings =
            overdue
            ? ("바뀐 내용 \(added.count)건 (늦게 했거나 새로 지남)", "앞서 알린 내용 \(removed.count)건")
            : weekly
                ? ("새로 봉사가 남은 학생 \(added.count)명", "명단에서 빠진 학생 \(removed.count)명 (봉사를 마쳤거나 지도가 삭제됨)")
                : ("추가된 기록 \(added.count)건", "삭제된 기록 \(removed.count)건 (교문에서 지운 기록)")
        return [(headings.0, added), (headings.1, removed)].filter { !$0.entries.isEmpty }
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
                if recipient.classNumber == nil && entry.student.classNumber != currentClass {
                    currentClass = entry.student.classNumber
                    lines.append(
                        recipient.grade == 0
                            ? "[\(entry.student.grade)학년 \(entry.student.classNumber)반]" : "[\(entry.student.classNumber)반]")
                }
                lines.append("• " + line(entry))
            }
        }
        if let summary { lines += ["", summary] }
        return lines.joined(separator: "\n")
    }

    /// "12번 김민지 — 기타 (길에 껌을 뱉음), 오전 7:52 · 최근 7일 2회 · 최근 30일 3회 · 남은 봉사 2회";
    /// in the 봉사 명단 "12번 김민지 — 남은 봉사 2회 (봉사 3회 중 1회 완료) · 최근 지도 11월 27일(금) 복장 불량"
    func line(_ entry: DigestEntry) -> String {
        return "\(entry.student.number)번 \(entry.student.name) — \(what(entry))" + (weekly ? " · " : ", ") + particulars(entry)
    }

    /// What an entry is about: the reason; in the 봉사 명단 the service left.
    func what(_ entry: DigestEntry) -> String {
        if let duty = entry.overdue { return DigestText.overdue(duty, on: date) }
        return weekly ? service(entry) ?? "" : reason(entry)
    }

    /// The rest of an entry's line: "오전 7:52 · 최근 7일 2회 · 최근 30일 3회 · 남은 봉사 2회";
    /// in the 봉사 명단 "최근 지도 11월 27일(금) 복장 불량".
    func particulars(_ entry: DigestEntry) -> String {
        if entry.overdue != nil { return "지도 \(lastGuidance(entry))" }
        if weekly { return "최근 지도 \(lastGuidance(entry))" }
        return ([time(entry)] + [frequency(entry), service(entry)].compactMap { $0 }).joined(separator: " · ")
    }

    /// "남은 봉사 2회", in the 봉사 명단 with "(봉사 3회 중 1회 완료)" (", 1회 종결"
    /// when sessions were closed); nil for entries written before it was kept.
    func service(_ entry: DigestEntry) -> String? {
        guard let service = entry.service else { return nil }
        let closed = service.closed > 0 ? ", \(service.closed)회 종결" : ""
        return "남은 봉사 \(service.outstanding)회" + (weekly ? " (봉사 \(service.owed)회 중 \(service.served)회 완료\(closed))" : "")
    }

    /// On `date`: "교내봉사 기한 12월 9일(수) 지남 · 다음 배정 일정 12월 11일(금) 16:00 본관 앞"; a 불참
    /// before the due date "교내봉사 불참 1회 · 다음 배정 일정 12월 8일(화) 16:00 상담실"; a seat
    /// after the due date "교내봉사 기한 12월 9일(수) · 기한 내 자리 없음 · 다음 배정 일정 12월 15일(화) …"; a
    /// sitting already past that nobody marked "… 지남 · 12월 8일(화) 배정 일정에 완료·불참 기록 없음"
    /// (never "next" for a past day); served late "교내봉사 기한 12월 9일(수) · 12월 10일(목) 늦게 완료".
    static func overdue(_ duty: CommunityServiceDuty, on date: String) -> String {
        let seat =
            duty.slot.map { slot in
                slot.date < date
                    ? "\(Timestamp.koreanDay(slot.date)) 배정 일정에 완료·불참 기록 없음"
                    : "다음 배정 일정 \(Timestamp.koreanDay(slot.date)) \(slot.time) \(slot.place)"
            } ?? "배정 일정 없음"
        // Said whenever the seat is after the due date, before that date passes.
        let late = duty.isSeatedLate ? "기한 내 자리 없음 · " : ""
        let due = "교내봉사 기한 \(Timestamp.koreanDay(duty.dueDate ?? ""))"
        if let served = duty.servedOn { return "\(due) · \(Timestamp.koreanDay(served)) 늦게 완료" }
        guard let dueDate = duty.dueDate, dueDate < date else {
            // Not yet due: a 불참 and where the session went, or a seat after the due date.
            return duty.misses > 0 ? "교내봉사 불참 \(duty.misses)회 · \(late)\(seat)" : "\(due) · \(late)\(seat)"
        }
        return "\(due) 지남 · \(seat)"
    }

    /// "11월 27일(금) 복장 불량": the day and reason of the student's newest guidance.
    func lastGuidance(_ entry: DigestEntry) -> String {
        let day = Timestamp.parse(entry.occurredAt).map { Timestamp.localDate($0, in: school.timeZone) } ?? entry.occurredAt
        return "\(Timestamp.koreanDay(day)) \(entry.reason.label)"
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

    /// "최근 7일 2회 · 최근 30일 3회"; nil for entries written before it was counted.
    func frequency(_ entry: DigestEntry) -> String? {
        entry.frequency.map { "최근 7일 \($0.last7Days)회 · 최근 30일 \($0.last30Days)회" }
    }
}
