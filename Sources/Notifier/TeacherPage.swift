import Foundation
import Guidance
import HTTP
import ServiceSupport
import Web

/// The teacher page at `/` and `/digests/{digestId}` (where e-mails link):
/// the inbox, newest first, with unread ones marked; a digest opened from it
/// (or by its link) grouped by class and marked read; today's list in the
/// teacher's scope; for admins, the run button and the failed deliveries.
/// The page is a shell; `teacher.js` fills it from the API.
struct TeacherPage: Sendable {
    /// The page's behaviour, `Assets/teacher.js` (what it does is said at its top).
    static let script = Asset(name: "teacher.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.teacherJS)

    static let title = "지도 알림함"
    let signIn: SignIn

    func routes(into router: inout GuardedRouter) {
        signIn.routes(into: &router, script: TeacherPage.script)
        router.get("/", .open) { request, caller in
            signIn.page(request, caller, next: "/") { render($0, caller.roster, opening: nil) }
        }
        router.get("/digests/{digestId}", .open) { request, caller in
            let digestID = request.parameter("digestId")
            return signIn.page(request, caller, next: TeacherPage.path(of: digestID)) {
                render($0, caller.roster, opening: digestID)
            }
        }
    }

    /// One column on a phone: an admin's work first (sending today's lists,
    /// what failed), then the day; a homeroom or volunteer-duty teacher's
    /// 알림함 first, then their scope's day. Only homeroom and volunteer-duty
    /// teachers receive lists, so only they get an 알림함. The 봉사 명단 is a
    /// volunteer-duty teacher's daily work, so it comes before their day;
    /// everyone else's after it. A teacher of several roles gets each part.
    private func render(_ teacher: Teacher, _ roster: Roster, opening digestID: String?) -> Response {
        let receivesLists = teacher.hasAny(of: [.homeroom, .volunteerDuty])
        let serviceFirst = teacher.has(.volunteerDuty)
        let main = """
            <main class="columns">
            \(teacher.has(.admin) ? TeacherPage.adminSection : "")
            \(receivesLists ? TeacherPage.inboxSection : "")
            \(serviceFirst ? TeacherPage.serviceSection(teacher) : "")
            <section class="card" aria-labelledby="today-title">
            <h2 id="today-title" tabindex="-1">오늘 명단 <span id="today-date" class="meta"></span></h2>
            <fieldset><legend>보기</legend><div id="filters" class="choices">\(filters(teacher, roster))</div></fieldset>
            <label for="today-search">이름으로 찾기</label>
            <input type="search" id="today-search" autocomplete="off" enterkeyhint="search">
            <div id="today-body"></div>
            <p id="today-status" class="status" role="status" aria-live="polite"></p>
            </section>
            \(serviceFirst ? "" : TeacherPage.serviceSection(teacher))
            \(receivesLists ? TeacherPage.settingsSection : "")
            </main>
            """
        var data = [("roles", teacher.roleText)]
        if let digestID { data.append(("open", digestID)) }
        return Page.signedIn(
            title: TeacherPage.title, teacher: teacher, school: roster.school(teacher.schoolID), main: main, data: data,
            script: TeacherPage.script.name)
    }

    /// The notes' 전체 / 우리 반 / 우리 학년 for today's list, which every
    /// teacher of the school may read: a homeroom teacher's class and grade,
    /// a volunteer-duty teacher's grade (and its classes), an admin's or gate
    /// teacher's grades, and the whole school; the narrowest first. Each
    /// value is the list's query.
    private func filters(_ teacher: Teacher, _ roster: Roster) -> String {
        var options: [(label: String, query: String)] = []
        let seats = roster.seats(school: teacher.schoolID)
        if teacher.has(.homeroom) {
            options.append(("우리 반", "grade=\(teacher.grade ?? 0)&classNumber=\(teacher.classNumber ?? 0)"))
            if !teacher.has(.volunteerDuty) { options.append(("우리 학년", "grade=\(teacher.grade ?? 0)")) }
        }
        if teacher.has(.volunteerDuty) {
            let grade = teacher.grade ?? 0
            options.append(("우리 학년", "grade=\(grade)"))
            for entry in seats where entry.grade == grade {
                options += entry.classes.map { ("\($0.classNumber)반", "grade=\(grade)&classNumber=\($0.classNumber)") }
            }
        }
        options.append(("전체", "scope=school"))
        if teacher.hasAny(of: [.admin, .gate]) {
            options += seats.map { ("\($0.grade)학년", "grade=\($0.grade)") }
        }
        var seen: Set<String> = []
        options = options.filter { seen.insert($0.query).inserted }
        return options.enumerated().map { index, option in
            "<label><input type=\"radio\" name=\"filter\" value=\"\(HTML.escape(option.query))\"\(index == 0 ? " checked" : "")>\(HTML.escape(option.label))</label>"
        }.joined()
    }

    /// Where a digest opens on this page (e-mails link here).
    static func path(of digestID: String) -> String {
        let segment = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))
        return "/digests/" + (digestID.addingPercentEncoding(withAllowedCharacters: segment) ?? "")
    }

    /// Each teacher's own choices, and their devices.
    private static let settingsSection = """
        <section class="card" aria-labelledby="settings-title">
        <h2 id="settings-title">설정</h2>
        <label class="check"><input type="checkbox" id="email-lists" disabled> 명단을 이메일로도 받기</label>
        <p class="meta">끄면 다음 명단부터 이메일은 가지 않고 알림함에만 옵니다.</p>
        <p id="settings-status" class="status" role="status" aria-live="polite"></p>
        <p><a class="tall" href="/session/devices">기기 연결 · 다른 기기 모두 로그아웃</a></p>
        </section>
        """

    private static let inboxSection = """
        <section class="card" aria-labelledby="inbox-title">
        <h2 id="inbox-title" tabindex="-1">알림함 <span id="unread-count" class="badge" hidden></span></h2>
        <ul id="inbox" class="plain"></ul>
        <p id="inbox-empty" class="meta" hidden>아직 받은 명단이 없습니다. 교문 지도 명단은 매일 정해진 시각에 옵니다.</p>
        <p id="inbox-status" class="status" role="status" aria-live="polite"></p>
        </section>
        <section class="card" id="digest" hidden aria-labelledby="digest-subject">
        <h2 id="digest-subject" tabindex="-1"></h2>
        <p id="digest-meta" class="meta"></p>
        <div id="digest-body"></div>
        <div class="actions"><button type="button" id="digest-close" class="secondary">알림함으로</button></div>
        </section>
        """

    /// The 봉사 명단: the caller's scope, students with service left first;
    /// volunteer-duty teachers and admins record `봉사 완료` and take it back.
    private static func serviceSection(_ teacher: Teacher) -> String {
        let scope = if teacher.has(.admin) {
            "학교 전체에서 봉사가 남은 학생이 먼저 나옵니다."
        } else if teacher.has(.volunteerDuty) {
            "우리 학년에서 봉사가 남은 학생이 먼저 나옵니다. 봉사를 마친 학생은 봉사 완료를 누르세요."
        } else {
            "우리 반 학생들이 받은 지도만큼 남은 봉사입니다. 봉사 지도 교사가 봉사를 기록합니다."
        }
        let body = """
            <p class="meta">\(scope)</p>
            <label for="service-search">이름으로 찾기</label>
            <input type="search" id="service-search" autocomplete="off" enterkeyhint="search">
            <label for="service-class">반</label>
            <select id="service-class"><option value="">모든 반</option></select>
            <div id="service-body"></div>
            <p id="service-status" class="status" role="status" aria-live="polite"></p>
            """
        // An admin's is the whole school, read when opened (like the 접속 기록).
        guard !teacher.has(.admin) else {
            return """
                <section class="card" aria-labelledby="service-title">
                <details id="service"><summary id="service-title">봉사 명단 (학교 전체) <span id="service-count" class="meta"></span></summary>
                \(body)
                </details>
                </section>
                """
        }
        return """
            <section class="card" aria-labelledby="service-title">
            <h2 id="service-title" tabindex="-1">봉사 명단 <span id="service-count" class="meta"></span></h2>
            \(body)
            </section>
            """
    }

    private static let adminSection = """
        <section class="card" aria-labelledby="admin-title">
        <h2 id="admin-title">관리</h2>
        <p class="meta">오늘 명단을 담임과 봉사 지도 교사에게 지금 보냅니다. 정해진 시각에도 저절로 보내집니다.</p>
        <div class="actions"><button type="button" id="run">오늘 명단 보내기</button></div>
        <p id="run-status" class="status" role="status" aria-live="polite"></p>
        <h3 id="failed-title" tabindex="-1">보내지 못한 알림</h3>
        <ul id="failed" class="plain"></ul>
        <p id="failed-empty" class="meta">없습니다.</p>
        <p id="failed-status" class="status" role="status" aria-live="polite"></p>
        </section>
        <section class="card" aria-labelledby="access-title">
        <details id="access"><summary id="access-title">접속 기록 (최근 7일)</summary>
        <p class="meta">누가 언제 어떤 학생 정보를 보았는지입니다. 730일 동안 보관됩니다. 한 교사가 하루에 본 사진은 한 줄로 묶입니다.</p>
        <label for="access-kind">종류</label>
        <select id="access-kind"><option value="">모든 종류</option></select>
        <label for="access-teacher">교사</label>
        <select id="access-teacher"><option value="">모든 교사</option></select>
        <label for="access-student">학생 이름으로 찾기</label>
        <input type="search" id="access-student" autocomplete="off" enterkeyhint="search">
        <ul id="access-list" class="plain"></ul>
        <p id="access-status" class="status" role="status" aria-live="polite"></p>
        <button type="button" id="access-more" class="secondary" hidden>더 보기</button>
        </details>
        </section>
        """
}
