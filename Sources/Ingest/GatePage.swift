import Foundation
import Guidance
import HTTP
import ServiceSupport
import Web

/// The gate page at `/`, for gate and admin teachers: three taps (grade,
/// class, number as button grids), the face check (the photo large, the
/// name large), a reason, 등록 — and the school's day from any device. The
/// page is a shell with the school's grades, classes and reasons in it (no
/// request before the first tap); `gate.js` does the rest with the session
/// cookie, keeping what is not yet acknowledged in a per-device queue.
struct GatePage: Sendable {
    /// The page's behaviour, `Assets/gate.js` (what it does is said at its top).
    static let script = Asset(name: "gate.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.gateJS)

    /// The installed app: its manifest, and the service worker that opens it
    /// offline and keeps the opened classes' names and photos for the face
    /// check until sign-out (`Assets/sw.js` says what it keeps).
    static let manifest = Asset(name: "manifest.webmanifest", contentType: "application/manifest+json", text: EmbeddedFiles.manifestWEBMANIFEST)
    static let worker = Asset(name: "sw.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.swJS)

    static let title = "교문 지도"
    let signIn: SignIn

    func routes(into router: inout GuardedRouter) {
        signIn.routes(into: &router, script: GatePage.script)
        router.get("/", .open) { request, caller in
            signIn.page(request, caller, next: "/") { teacher in
                Page.signedIn(
                    title: GatePage.title, teacher: teacher, school: caller.roster.school(teacher.schoolID),
                    main: GatePage.main + GatePage.schoolData(caller.roster, school: teacher.schoolID), script: GatePage.script.name,
                    manifest: "/manifest.webmanifest")
            }
        }
        // At the root: a worker controls the pages under its own path.
        router.get("/sw.js", .open) { request, _ in GatePage.worker.response(to: request) }
        router.get("/manifest.webmanifest", .open) { request, _ in GatePage.manifest.response(to: request) }
    }

    /// The school's seats and reasons as a JSON data block the script reads
    /// (`type="application/json"` is never run, so the strict CSP holds).
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

    private static let main = """
        <p id="offline" class="banner" role="status" hidden></p>
        <main class="gate">
        <div id="seat-bar" class="seat-bar" hidden>
        <label>학년 <select id="grade-select"></select></label>
        <label>반 <select id="class-select"></select></label>
        </div>
        <section id="pick" class="card" aria-labelledby="step-title">
        <div class="crumbs" hidden><button type="button" id="back" class="secondary">이전</button><p id="picked" class="meta"></p></div>
        <h2 id="step-title" tabindex="-1">학년</h2>
        <div id="grid" class="grid" role="group" aria-labelledby="step-title"></div>
        </section>
        <section id="check" class="card" aria-labelledby="student-name" hidden>
        <div class="crumbs"><button type="button" id="check-back" class="secondary">번호 다시 고르기</button><p id="seat" class="meta"></p></div>
        <div class="face">
        <div class="portrait"><img id="photo" alt="" hidden><p id="photo-state" class="photo-state">사진 불러오는 중</p></div>
        <h2 id="student-name" class="big-name" tabindex="-1"></h2>
        </div>
        <p id="already" class="already" role="status"></p>
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
        </main>

        """
}
