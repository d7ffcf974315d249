import Access
import Foundation
import Guidance
import HTTP
import Web

/// The one app for every teacher, at `/` (and `/digests/{digestId}`, where
/// e-mails link): one sign-in, then a tab for each thing the teacher may do.
///
/// - 교문 지도 (gate and admin teachers): three taps (grade, class, number as
///   button grids), the face check, a reason, 등록 — and the school's day as
///   recorded at the gate; `gate.js` keeps what is not yet acknowledged in a
///   per-device queue, and the service worker opens it offline.
/// - 명단 (everyone): today's list by 우리 반 / 우리 학년 / 전체 and a name.
/// - 봉사 (homeroom, volunteer-duty, admin): the 봉사 명단.
/// - 알림함 (those who receive lists): the digests, newest first.
/// - 관리 (admins): sending today's lists, failed deliveries, the school's roster (명부), the access record.
/// - 설정 (everyone): lists by e-mail or not, devices, signing out elsewhere.
///
/// The ingest is the part that must stay up at the gate, so it serves the
/// app; what the notifier holds the app reads through it (`NotifierReads`)
/// with the teacher's own session. The page is a shell; `app.js` switches
/// tabs, `gate.js`, `teacher.js` and `overview.js` fill them.
struct AppPage: Sendable {
    /// Tabs (`Assets/app.js`), the gate (`gate.js`), the lists and the rest (`teacher.js`), 현황 (`overview.js`),
    /// 할 일 (`cases.js`), 관리 → 명부 (`roster.js`).
    static let scripts = [
        Asset(name: "app.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.appJS),
        Asset(name: "gate.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.gateJS),
        Asset(name: "teacher.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.teacherJS),
        Asset(name: "overview.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.overviewJS),
        Asset(name: "cases.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.casesJS),
        Asset(name: "roster.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.rosterJS)
    ]

    /// The installed app: its manifest, and the service worker that opens it
    /// offline and keeps the opened classes' names and photos for the face
    /// check until sign-out (`Assets/sw.js` says what it keeps).
    static let manifest = Asset(
        name: "manifest.webmanifest", contentType: "application/manifest+json", text: EmbeddedFiles.manifestWEBMANIFEST)
    static let worker = Asset(name: "sw.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.swJS)

    /// The app's name, for every role (the gate is one of its tabs); a
    /// signed-in teacher's page is titled with their school's name too.
    static let title = "생활지도"
    let signIn: SignIn

    /// Every teacher of a school may use the app; each tab checks again what it reads.
    static let roles: Set<Teacher.Role> = Set(Teacher.Role.allCases)

    func routes(into router: inout GuardedRouter) {
        signIn.routes(into: &router, scripts: AppPage.scripts)
        router.get("/", .open) { request, caller in
            signIn.page(request, caller, next: "/") { render($0, caller.roster, opening: nil) }
        }
        router.get("/digests/{digestId}", .open) { request, caller in
            let digestID = request.parameter("digestId")
            return signIn.page(request, caller, next: Page.digestPath(of: digestID)) { render($0, caller.roster, opening: digestID) }
        }
        // At the root: a worker controls the pages under its own path.
        router.get("/sw.js", .open) { request, _ in AppPage.worker.response(to: request) }
        router.get("/manifest.webmanifest", .open) { request, _ in AppPage.manifest.response(to: request) }
    }

    /// A tab: its id (`#gate` opens it), its name, and its panel.
    private struct Tab {
        let id: String
        let name: String
        let panel: String
    }

    private func tabs(_ teacher: Teacher, _ roster: Roster) -> [Tab] {
        let receivesLists = teacher.hasAny(of: [.homeroom, .volunteerDuty])
        let holdsCases = teacher.hasAny(of: [.homeroom, .volunteerDuty, .admin])
        let todo = Tab(id: "todo", name: "할 일", panel: AppPage.todo(teacher, roster))
        var tabs: [Tab] = []
        // The 학생부장 (an admin) starts the day at what is theirs to do.
        if teacher.has(.admin) { tabs.append(todo) }
        if teacher.hasAny(of: [.gate, .admin]) {
            tabs.append(Tab(id: "gate", name: "교문 지도", panel: AppPage.gate + AppPage.schoolData(roster, school: teacher.schoolID)))
        }
        tabs.append(
            Tab(
                id: "lists", name: "명단",
                panel: AppPage.lists(filters(teacher, roster), otherDays: teacher.hasAny(of: [.admin, .homeroom, .volunteerDuty]))))
        if teacher.hasAny(of: [.homeroom, .volunteerDuty, .admin]) {
            tabs.append(Tab(id: "overview", name: "현황", panel: AppPage.overview))
            tabs.append(Tab(id: "service", name: "봉사", panel: AppPage.service(teacher, school: roster.school(teacher.schoolID))))
        }
        // The school's own time: "매일 08:50에", not "정해진 시각에".
        let time = roster.school(teacher.schoolID).map { Roster.clock($0.digestMinute) }
        let when = time.map { "매일 \($0)에" } ?? "매일 정해진 시각에"
        if holdsCases && !teacher.has(.admin) { tabs.append(todo) }
        // An admin hears of rules' crossings (학생부장 상담 대상, 선도위원회 검토 대상) in the 알림함 too.
        if receivesLists || teacher.has(.admin) { tabs.append(Tab(id: "inbox", name: "알림함", panel: AppPage.inbox(when: when))) }
        if teacher.has(.admin) {
            tabs.append(Tab(id: "admin", name: "관리", panel: AppPage.admin(teachers: teacherOptions(teacher, roster), when: when)))
        }
        tabs.append(Tab(id: "settings", name: "설정", panel: AppPage.settings(receivesLists: receivesLists)))
        return tabs
    }

    /// The tab bar under the page's bar, and one panel per tab; the first
    /// tab is shown until the script opens the one asked for.
    private func render(_ teacher: Teacher, _ roster: Roster, opening digestID: String?) -> Response {
        let tabs = tabs(teacher, roster)
        let bar = tabs.enumerated().map { index, tab in
            "<a role=\"tab\" id=\"tab-\(tab.id)\" href=\"#\(tab.id)\" aria-controls=\"panel-\(tab.id)\" aria-selected=\"\(index == 0)\""
                + (index == 0 ? "" : " tabindex=\"-1\"") + ">\(tab.name)"
                + (tab.id == "inbox" ? " <span id=\"unread-count\" class=\"badge\" hidden></span>" : "")
                + (tab.id == "todo" ? " <span id=\"todo-badge\" class=\"badge\" hidden></span>" : "") + "</a>"
        }.joined()
        let panels = tabs.enumerated().map { index, tab in
            "<div role=\"tabpanel\" id=\"panel-\(tab.id)\" aria-labelledby=\"tab-\(tab.id)\"\(index == 0 ? "" : " hidden")>\n\(tab.panel)</div>"
        }.joined(separator: "\n")
        // A student's record opens over the tabs, for whoever reads other days' lists.
        let record = teacher.hasAny(of: [.admin, .homeroom, .volunteerDuty]) ? AppPage.record : ""
        let main = """
            <nav class="tabs" aria-label="메뉴"><div role="tablist">\(bar)</div></nav>
            <main class="app">
            \(panels)
            \(record)</main>

            """
        var data = [("roles", teacher.roleText)]
        if let digestID { data.append(("open", digestID)) }
        // 현황's script only where its tab is: a gate teacher's first load on a slow network stays light.
        var scripts = AppPage.scripts.map(\.name).filter {
            ($0 != "overview.js" || tabs.contains { $0.id == "overview" }) && ($0 != "cases.js" || tabs.contains { $0.id == "todo" })
                && ($0 != "roster.js" || tabs.contains { $0.id == "admin" })
        }
        // Where the gate is the first tab, it is usable before the other tabs' scripts arrive (`app.js` loads them after).
        if tabs.first?.id == "gate" {
            data.append(("later", scripts.filter { $0 != "app.js" && $0 != "gate.js" }.joined(separator: " ")))
            scripts = ["app.js", "gate.js"]
        }
        let school = roster.school(teacher.schoolID)
        return Page.signedIn(
            title: "\(school?.name ?? teacher.schoolID) \(AppPage.title)", teacher: teacher, school: school, main: main, data: data,
            scripts: scripts, manifest: "/manifest.webmanifest")
    }

    /// The school's seats and reasons as a JSON data block the gate's script
    /// reads (`type="application/json"` is never run, so the strict CSP holds).
    static func schoolData(_ roster: Roster, school: String) -> String {
        struct Data: Encodable {
            let grades: [IngestHandlers.Classes.Grade]
            let reasons: [Reason]
        }
        let data = Data(grades: IngestHandlers.Classes.grades(roster, school: school), reasons: roster.school(school)?.orderedReasons ?? [])
        let encoded = (try? JSONEncoder().encode(data)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        // "</script" inside the data must not end the block.
        return "<script type=\"application/json\" id=\"school-data\">\(encoded.replacingOccurrences(of: "</", with: "<\\/"))</script>\n"
    }

    /// The notes' 전체 / 우리 반 / 우리 학년 for today's list, which every
    /// teacher of the school may read: a homeroom teacher's class and grade,
    /// a volunteer-duty teacher's grade (and its classes), an admin's or gate
    /// teacher's grades, and the whole school; the narrowest first. Each
    /// value is the list's query; a choice the teacher may also read on
    /// another day (`Teacher.mayReadOtherDays`) is marked `data-other-days`.
    private func filters(_ teacher: Teacher, _ roster: Roster) -> String {
        var options: [(label: String, grade: Int?, classNumber: Int?)] = []
        let seats = roster.seats(school: teacher.schoolID)
        if teacher.has(.homeroom) {
            options.append(("우리 반", teacher.grade ?? 0, teacher.classNumber ?? 0))
            if !teacher.has(.volunteerDuty) { options.append(("우리 학년", teacher.grade ?? 0, nil)) }
        }
        if teacher.has(.volunteerDuty) {
            let grade = teacher.grade ?? 0
            options.append(("우리 학년", grade, nil))
            for entry in seats where entry.grade == grade {
                options += entry.classes.map { ("\($0.classNumber)반", grade, $0.classNumber) }
            }
        }
        options.append(("전체", nil, nil))
        if teacher.hasAny(of: [.admin, .gate]) {
            options += seats.map { ("\($0.grade)학년", $0.grade, nil) }
        }
        var seen: Set<String> = []
        var html = ""
        for option in options {
            let query = option.grade.map { "grade=\($0)" + (option.classNumber.map { "&classNumber=\($0)" } ?? "") } ?? "scope=school"
            guard seen.insert(query).inserted else { continue }
            let otherDays = teacher.mayReadOtherDays(grade: option.grade, classNumber: option.classNumber) ? " data-other-days" : ""
            let checked = html.isEmpty ? " checked" : ""
            html +=
                "<label><input type=\"radio\" name=\"filter\" value=\"\(HTML.escape(query))\"\(otherDays)\(checked)>\(HTML.escape(option.label))</label>"
        }
        return html
    }

    private static let gate = """
        <div class="gate">
        <div id="seat-bar" class="seat-bar" hidden>
        <label>학년 <select id="grade-select"></select></label>
        <label>반 <select id="class-select"></select></label>
        </div>
        <section id="pick" class="card" aria-labelledby="step-title">
        <div class="crumbs" hidden><button type="button" id="back" class="secondary">이전</button><button type="button" id="restart" class="secondary">처음으로</button><p id="picked" class="meta"></p></div>
        <h2 id="step-title" tabindex="-1">학년</h2>
        <div id="grid" class="grid" role="group" aria-labelledby="step-title"></div>
        </section>
        <section id="check" class="card" aria-labelledby="student-name" hidden>
        <div class="crumbs"><button type="button" id="check-back" class="secondary">번호 다시 고르기</button><button type="button" id="check-restart" class="secondary">처음으로</button><p id="seat" class="meta"></p></div>
        <div class="face">
        <div class="portrait"><img id="photo" alt="" hidden><p id="photo-state" class="photo-state">사진 불러오는 중</p></div>
        <div class="face-text">
        <h2 id="student-name" class="big-name" tabindex="-1"></h2>
        <p id="already" class="already" role="status"></p>
        <p id="standing" class="meta"></p>
        </div>
        </div>
        <fieldset><legend>사유</legend><div id="reasons" class="grid reasons"></div></fieldset>
        <p id="reason-error" class="error" role="alert"></p>
        <div id="detail-row" hidden>
        <label for="detail">상세 내용</label>
        <textarea id="detail" name="detail" maxlength="200" aria-describedby="detail-error"></textarea>
        <p id="detail-error" class="error" role="alert"></p>
        </div>
        <button type="button" id="submit" class="wide">등록</button>
        </section>
        <p id="register-status" class="status" role="status" aria-live="polite"></p>
        <section class="card" aria-labelledby="today-title">
        <h2 id="today-title" tabindex="-1">오늘 등록한 지도</h2>
        <p class="meta">학교 전체, 모든 기기에서 오늘 등록한 지도입니다(최근 것부터).</p>
        <label for="today-search">이름으로 찾기</label>
        <input type="search" id="today-search" autocomplete="off" enterkeyhint="search">
        <label class="check"><input type="checkbox" id="today-mine"> 내 기록만</label>
        <p id="today-status" class="status" role="status" aria-live="polite"></p>
        <p id="today-count" class="meta"></p>
        <ul id="today" class="plain"></ul>
        <p id="today-empty" class="meta" hidden>아직 없습니다.</p>
        <button type="button" id="today-more" class="secondary wide" hidden>더 보기</button>
        </section>
        </div>

        """

    /// 명단: a day's list by the chosen filter; another day than today, or
    /// the week or month holding it, only for a teacher who may read one
    /// (`otherDays`).
    private static func lists(_ filters: String, otherDays: Bool) -> String {
        let day = """
            <label for="list-day">날짜</label>
            <input type="date" id="list-day">
            <fieldset><legend>기간</legend><div class="choices">
            <label><input type="radio" name="span" value="day" checked>그날</label>
            <label><input type="radio" name="span" value="week">그 주</label>
            <label><input type="radio" name="span" value="month">그 달</label>
            </div></fieldset>

            """
        // 학생 찾기: students found by name or 학번 open their record, for whoever may open one.
        let found = otherDays ? "<ul id=\"found-students\" class=\"plain found\" aria-label=\"학생 기록 열기\"></ul>\n" : ""
        // The choices fold into one line on a phone, so that the rows start on the first screen.
        return """
            <section class="card" aria-labelledby="list-title">
            <h2 id="list-title" tabindex="-1"><span id="list-name">오늘 명단</span> <span id="list-date" class="meta"></span></h2>
            <details id="list-options" class="options"><summary>보기 <span id="list-shown" class="meta"></span></summary>
            <fieldset><legend>보기</legend><div id="filters" class="choices">\(filters)</div></fieldset>
            \(otherDays ? day : "")</details>
            <label for="list-search">이름·학번으로 찾기</label>
            <input type="search" id="list-search" autocomplete="off" enterkeyhint="search">
            \(found)<div id="list-body"></div>
            <p id="list-status" class="status" role="status" aria-live="polite"></p>
            </section>

            """
    }

    /// Each teacher's own choices, and their devices.
    private static func settings(receivesLists: Bool) -> String {
        let email = """
            <label class="check"><input type="checkbox" id="email-lists" disabled> 명단을 이메일로도 받기</label>
            <p class="meta">끄면 다음 명단부터 이메일은 가지 않고 알림함에만 옵니다.</p>
            <label class="check" id="push-choice" hidden><input type="checkbox" id="push-on"> 이 기기에서 알림 받기</label>
            <p class="meta" id="push-none" hidden></p>
            <p class="meta" id="push-note" hidden>잠금 화면에는 학생 이름 없이 명단 제목과 건수만 보입니다. 이름은 로그인한 앱에서 봅니다. 로그아웃하면 이 기기의 알림도 꺼집니다.</p>
            <form id="times" novalidate>
            <label for="list-time">명단 받는 시각 <span class="meta" id="school-time"></span></label>
            <input type="time" id="list-time" step="60" aria-describedby="list-time-note">
            <p class="meta" id="list-time-note">학교 시각보다 이르면 그때까지의 명단을 먼저 받고, 나머지는 학교 시각에 정정으로 받습니다. 늦으면 이메일·알림이 그 시각에 갑니다.</p>
            <label class="check"><input type="checkbox" id="quiet-on"> 방해 금지 시간 (이메일·알림을 보내지 않고 끝나면 한 번에)</label>
            <label for="quiet-from">방해 금지 시작</label>
            <input type="time" id="quiet-from" step="60">
            <label for="quiet-until">방해 금지 끝</label>
            <input type="time" id="quiet-until" step="60">
            <div class="actions"><button type="submit" id="times-save" disabled>시각 저장</button></div>
            </form>
            <p id="settings-status" class="status" role="status" aria-live="polite"></p>

            """
        return """
            <section class="card" aria-labelledby="settings-title">
            <h2 id="settings-title">설정</h2>
            \(receivesLists ? email : "")<p><a class="tall" href="/session/devices">기기 연결 · 다른 기기 모두 로그아웃</a></p>
            </section>

            """
    }

    /// 할 일: the cases the teacher holds, and one case opened over the
    /// list with its history and what may be done next (`cases.js`); whom
    /// a case may be handed to comes with the case file.
    private static func todo(_ teacher: Teacher, _ roster: Roster) -> String {
        let scope =
            teacher.has(.admin)
            ? """
            <fieldset class="choices"><legend class="visually-hidden">범위</legend>
            <label><input type="radio" name="todo-scope" value="mine" checked> 내 할 일</label>
            <label><input type="radio" name="todo-scope" value="school"> 학교 전체</label>
            </fieldset>
            """ : ""
        let states = GuidanceCase.State.chosen.map { "<option value=\"\($0.rawValue)\">\($0.label)</option>" }.joined()
        return """
            <section class="card" id="todo" aria-labelledby="todo-title">
            <h2 id="todo-title" tabindex="-1">할 일 <span id="todo-count" class="meta"></span></h2>
            \(scope)
            <ul id="todo-list" class="plain"></ul>
            <p id="todo-empty" class="meta" hidden>지금 할 일이 없습니다. 학교 규칙에 걸린 학생이 생기면 여기에 옵니다.</p>
            <p id="todo-status" class="status" role="status" aria-live="polite"></p>
            </section>
            <section class="card" id="case" hidden aria-labelledby="case-title">
            <h2 id="case-title" tabindex="-1"></h2>
            <p id="case-meta" class="meta"></p>
            <div id="case-body"></div>
            <form id="case-step">
            <h3 class="section">다음 단계</h3>
            <label for="case-state">상태</label>
            <select id="case-state">\(states)</select>
            <label for="case-date">다음 날짜 <span class="meta">(선택)</span></label>
            <input type="date" id="case-date">
            <label for="case-note">메모 <span class="meta">(선택, \(Reason.maxDetailLength)자까지)</span></label>
            <textarea id="case-note" rows="2" maxlength="\(Reason.maxDetailLength)"></textarea>
            <div class="actions"><button type="submit" id="case-save">저장</button></div>
            </form>
            \(roster.webhooks[teacher.schoolID] == nil ? "" : AppPage.guardianForm)
            <form id="case-hand">
            <label for="case-to">다른 선생님에게 넘기기</label>
            <select id="case-to"></select>
            <div class="actions"><button type="submit" class="secondary" id="case-hand-over">넘기기</button></div>
            </form>
            <p id="case-status" class="status" role="status" aria-live="polite"></p>
            <div class="actions"><button type="button" id="case-close" class="secondary">할 일로</button></div>
            </section>
            """
    }

    /// 보호자 안내: a text from a template, sent through the school's webhook
    /// (only where webhooks.csv has one).
    private static let guardianForm = """
        <form id="case-guardian">
        <h3 class="section">보호자 안내</h3>
        <p class="meta">학교의 문자·알림장 시스템으로 보냅니다. 지도한 교사의 이름은 넣지 않습니다.</p>
        <label for="guardian-text">보호자에게 보낼 글 <span class="meta">(\(Reason.maxDetailLength)자까지)</span></label>
        <textarea id="guardian-text" rows="4" maxlength="\(Reason.maxDetailLength)"></textarea>
        <div class="actions"><button type="submit" class="secondary" id="guardian-send">보호자 안내 보내기</button></div>
        </form>
        """

    private static func inbox(when: String) -> String {
        """
        <section class="card" aria-labelledby="inbox-title">
        <h2 id="inbox-title" tabindex="-1">알림함</h2>
        <label for="inbox-day">날짜 <span class="meta">(비우면 모두)</span></label>
        <input type="date" id="inbox-day">
        <ul id="inbox" class="plain"></ul>
        <p id="inbox-empty" class="meta" hidden>아직 받은 명단이 없습니다. 교문 지도 명단은 \(when) 옵니다.</p>
        <p id="inbox-status" class="status" role="status" aria-live="polite"></p>
        </section>
        <section class="card" id="digest" hidden aria-labelledby="digest-subject">
        <h2 id="digest-subject" tabindex="-1"></h2>
        <p id="digest-meta" class="meta"></p>
        <div id="digest-body"></div>
        <div class="actions"><button type="button" id="digest-close" class="secondary">알림함으로</button></div>
        </section>

        """
    }

    /// 현황: a week or a month of what the teacher may see, against the one before.
    private static let overview = """
        <section class="card" id="overview-card" aria-labelledby="overview-title">
        <h2 id="overview-title" tabindex="-1">현황 <span id="overview-scope" class="meta"></span></h2>
        <fieldset><legend>기간</legend><div class="choices">
        <label><input type="radio" name="period" value="week" checked>이번 주</label>
        <label><input type="radio" name="period" value="last-week">지난 주</label>
        <label><input type="radio" name="period" value="month">이번 달</label>
        <label><input type="radio" name="period" value="last-month">지난 달</label>
        </div></fieldset>
        <p id="overview-status" class="status" role="status" aria-live="polite"></p>
        <div id="overview-body"></div>
        </section>
        <section class="card record" id="report" hidden aria-labelledby="report-title">
        <div class="actions no-print"><button type="button" id="report-close" class="secondary">닫기</button><button type="button" id="report-print">인쇄</button><button type="button" id="report-csv" class="secondary">CSV로 저장</button></div>
        <label class="check no-print"><input type="checkbox" id="report-names"> 학생 이름 부록 넣기</label>
        <h2 id="report-title" tabindex="-1">월간 보고서</h2>
        <p id="report-meta" class="meta"></p>
        <p id="report-status" class="status" role="status" aria-live="polite"></p>
        <div id="report-body"></div>
        </section>

        """

    /// 학생 기록: one student's guidances, 봉사 and rule crossings, opened
    /// from a row's 기록 button; printable on A4 (only it prints) and saved
    /// as CSV.
    private static let record = """
        <section class="card record" id="record" hidden aria-labelledby="record-title">
        <div class="actions no-print"><button type="button" id="record-close" class="secondary">닫기</button><button type="button" id="record-print">인쇄</button><button type="button" id="record-csv" class="secondary">CSV로 저장</button></div>
        <h2 id="record-title" tabindex="-1">학생 기록</h2>
        <p id="record-meta" class="meta"></p>
        <p id="record-status" class="status" role="status" aria-live="polite"></p>
        <div id="record-body"></div>
        </section>

        """

    /// The 봉사 명단: the caller's scope, students with service left first;
    /// volunteer-duty teachers and admins record a session (`봉사 1회 완료`) and take it back.
    private static func service(_ teacher: Teacher, school: School?) -> String {
        let scope =
            if teacher.has(.admin) {
                "학교 전체에서 봉사가 남은 학생이 먼저 나옵니다."
            } else if teacher.has(.volunteerDuty) {
                "우리 학년에서 봉사가 남은 학생이 먼저 나옵니다. 봉사를 한 번 마칠 때마다 봉사 1회 완료를 누르세요."
            } else {
                "우리 반 학생들이 받은 지도만큼 남은 봉사입니다. 봉사 담당 교사가 봉사를 기록합니다."
            }
        // 오늘 교내봉사: who is due at today's sittings, for those who run them, where the school has sittings.
        let sittings =
            teacher.hasAny(of: [.volunteerDuty, .admin]) && !(school?.service.slots.isEmpty ?? true)
            ? """
            <section class="card" aria-labelledby="sitting-title">
            <h2 id="sitting-title" tabindex="-1">오늘 교내봉사 <span id="sitting-count" class="meta"></span></h2>
            <p class="meta">온 학생은 완료, 오지 않은 학생은 불참을 누르세요. 불참한 학생은 자리가 남은 다음 시간으로 옮겨집니다.</p>
            <label for="sitting-day">날짜</label>
            <input type="date" id="sitting-day">
            <div id="sitting-body"></div>
            <p id="sitting-status" class="status" role="status" aria-live="polite"></p>
            </section>

            """ : ""
        // 교내봉사 일정: four weeks of room against the sessions due; an admin adds a sitting there.
        let addSitting =
            teacher.has(.admin)
            ? """
            <form id="add-sitting" novalidate>
            <h3>봉사 일정 더하기</h3>
            <p class="meta">한 번만 여는 봉사 시간입니다. 기한 안에 자리가 없던 학생이 기한 순서대로 바로 배정됩니다.</p>
            <label for="add-sitting-date">날짜</label>
            <input type="date" id="add-sitting-date" required>
            <label for="add-sitting-time">시각</label>
            <input type="time" id="add-sitting-time" required value="16:00">
            <label for="add-sitting-place">장소</label>
            <input type="text" id="add-sitting-place" required maxlength="40" autocomplete="off">
            <label for="add-sitting-capacity">인원</label>
            <input type="number" id="add-sitting-capacity" required min="1" max="500" value="4" inputmode="numeric">
            <div class="actions"><button type="submit">일정 더하기</button></div>
            <p id="add-sitting-status" class="status" role="status" aria-live="polite"></p>
            </form>

            """ : ""
        let plan =
            teacher.hasAny(of: [.volunteerDuty, .admin]) && school?.service.dueDays != nil
            ? """
            <section class="card" aria-labelledby="plan-title">
            <h2 id="plan-title" tabindex="-1">교내봉사 일정</h2>
            <p class="meta">이번 주부터 4주 동안 학교 전체의 봉사 자리와, 그 주에 기한이 돌아오는 봉사입니다.</p>
            <p id="plan-short" class="short" hidden></p>
            <div id="plan-body"></div>
            <p id="plan-status" class="status" role="status" aria-live="polite"></p>
            \(addSitting)</section>

            """ : ""
        return sittings + plan + """
            <section class="card" aria-labelledby="service-title">
            <h2 id="service-title" tabindex="-1">교내봉사 명단 <span id="service-count" class="meta"></span></h2>
            <p class="meta">\(scope)</p>
            <label for="service-day">날짜 <span class="meta">(그날까지 받은 지도와 마친 봉사)</span></label>
            <input type="date" id="service-day">
            <label for="service-search">이름으로 찾기</label>
            <input type="search" id="service-search" autocomplete="off" enterkeyhint="search">
            <label for="service-class">반</label>
            <select id="service-class"><option value="">모든 반</option></select>
            <div id="service-body"></div>
            <p id="service-status" class="status" role="status" aria-live="polite"></p>
            </section>

            """
    }

    /// The school's teachers by name, for the access record's teacher filter.
    private func teacherOptions(_ teacher: Teacher, _ roster: Roster) -> String {
        roster.teachers.values.filter { $0.schoolID == teacher.schoolID }
            .sorted { ($0.name, $0.id) < ($1.name, $1.id) }
            .map { "<option value=\"\(HTML.escape($0.id))\">\(HTML.escape($0.name))</option>" }.joined()
    }

    private static func admin(teachers: String, when: String) -> String {
        """
        <section class="card" aria-labelledby="admin-title">
        <h2 id="admin-title">관리</h2>
        <p class="meta">오늘 명단을 담임과 봉사 담당 교사에게 지금 보냅니다. \(when) 자동으로도 보내집니다.</p>
        <div class="actions"><button type="button" id="run">오늘 명단 보내기</button></div>
        <p id="run-status" class="status" role="status" aria-live="polite"></p>
        <h3 id="failed-title" tabindex="-1">보내지 못한 알림</h3>
        <ul id="failed" class="plain"></ul>
        <p id="failed-empty" class="meta">없습니다.</p>
        <p id="failed-status" class="status" role="status" aria-live="polite"></p>
        </section>
        <section class="card" aria-labelledby="roster-title">
        <h2 id="roster-title">명부</h2>
        <p id="roster-current" class="meta"></p>
        <p class="meta">NEIS에서 받은 학생 명부(학년, 반, 번호, 성명)를 엑셀 파일(.xlsx)이나 CSV로 올리세요. 적용하기 전에 무엇이 바뀌는지 먼저 보여 줍니다.</p>
        <label for="roster-file">학생 명부 파일</label>
        <input type="file" id="roster-file" accept=".csv,.xlsx,text/csv,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet">
        <label for="roster-effective">적용일 (진급)</label>
        <input type="date" id="roster-effective" aria-describedby="roster-effective-help">
        <p id="roster-effective-help" class="meta">비워 두면 적용하는 즉시 바뀝니다. 새 학년도 명부는 새 학년 첫날을 고르세요. 그날 아침부터 모든 화면이 새 학년·반·번호로 바뀌고, 지난 기록은 그때의 학년·반·번호로 남습니다.</p>
        <div class="actions"><button type="button" id="roster-preview-button">미리 보기</button></div>
        <h3 id="roster-preview-title" tabindex="-1" class="visually-hidden">미리 보기</h3>
        <div id="roster-preview"></div>
        <div class="actions"><button type="button" id="roster-apply" hidden>적용</button></div>
        <p id="roster-status" class="status" role="status" aria-live="polite"></p>
        <h3>버전</h3>
        <ul id="roster-versions" class="plain"></ul>
        <p id="roster-versions-empty" class="meta">아직 올린 명부가 없습니다. 처음 등록된 명부를 쓰고 있습니다.</p>
        <h3 id="teachers-title">교사</h3>
        <p class="meta">교사 명단(성명, 이메일, 역할, 학년, 반)을 엑셀 파일이나 CSV로 올리세요. 역할은 담임, 봉사, 교문, 관리를 +로 이어 씁니다(예: 담임+교문). 명단에서 빠진 교사는 더 로그인할 수 없습니다.</p>
        <label for="teachers-file">교사 명단 파일</label>
        <input type="file" id="teachers-file" accept=".csv,.xlsx,text/csv,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet">
        <div class="actions"><button type="button" id="teachers-preview-button">교사 미리 보기</button></div>
        <div id="teachers-preview" tabindex="-1"></div>
        <div class="actions"><button type="button" id="teachers-apply" hidden>교사 적용</button></div>
        <p id="teachers-status" class="status" role="status" aria-live="polite"></p>
        <h3 id="photos-title">학생 사진</h3>
        <p class="meta">사진 파일을 학번(예: 10305.jpg는 1학년 3반 5번)이나 학생 ID로 이름 지어 ZIP 하나로 묶어 올리세요. 앱에 보이는 크기로만 줄여 보관하고 원본은 남기지 않습니다.</p>
        <label for="photos-file">사진 ZIP 파일</label>
        <input type="file" id="photos-file" accept=".zip,application/zip">
        <div class="actions"><button type="button" id="photos-preview-button">사진 미리 보기</button></div>
        <div id="photos-preview" tabindex="-1"></div>
        <div class="actions"><button type="button" id="photos-apply" hidden>사진 적용</button></div>
        <p id="photos-status" class="status" role="status" aria-live="polite"></p>
        <h3 id="tables-title">학교 설정</h3>
        <p class="meta">사유, 학사 일정(쉬는 날), 봉사 일정, 규칙을 표로 고칩니다. 한 줄에 하나씩, 첫 줄의 열 이름 순서대로 쉼표로 나누어 씁니다. 적용하기 전에 바뀌는 줄을 먼저 보여 줍니다.</p>
        <label for="tables-which">표</label>
        <select id="tables-which"><option value="reasons">사유</option><option value="calendar">학사 일정</option><option value="service-slots">봉사 일정</option><option value="rules">규칙</option></select>
        <p id="tables-help" class="meta"></p>
        <label for="tables-text">내용</label>
        <textarea id="tables-text" rows="8" spellcheck="false" autocomplete="off"></textarea>
        <div class="actions"><button type="button" id="tables-preview-button">설정 미리 보기</button></div>
        <div id="tables-preview" tabindex="-1"></div>
        <div class="actions"><button type="button" id="tables-apply" hidden>설정 적용</button></div>
        <p id="tables-status" class="status" role="status" aria-live="polite"></p>
        </section>
        <section class="card" aria-labelledby="access-title">
        <h2 id="access-title">접속 기록</h2>
        <p class="meta">누가 언제 어떤 학생 정보를 보았는지입니다. 730일 동안 보관됩니다. 한 교사가 하루에 본 사진은 한 줄로 묶입니다. 찾기와 건수는 고른 기간 전체에서 셉니다.</p>
        <label for="access-period">기간</label>
        <select id="access-period"><option value="7">최근 7일</option><option value="30">최근 30일</option><option value="365">최근 1년</option><option value="730">최근 2년</option></select>
        <label for="access-kind">종류</label>
        <select id="access-kind"><option value="">모든 종류</option></select>
        <label for="access-teacher">교사</label>
        <select id="access-teacher"><option value="">모든 교사</option>\(teachers)</select>
        <label for="access-student">학생 이름으로 찾기</label>
        <input type="search" id="access-student" autocomplete="off" enterkeyhint="search">
        <p id="access-count" class="meta"></p>
        <ul id="access-list" class="plain"></ul>
        <p id="access-status" class="status" role="status" aria-live="polite"></p>
        <button type="button" id="access-more" class="secondary" hidden>더 보기</button>
        </section>

        """
    }
}
