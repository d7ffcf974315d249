import Guidance
import HTTP
import ServiceSupport
import Web

/// The gate page at `/`: sign in with a gate or admin token, pick grade →
/// class → number and see the student's name and photo, pick a reason,
/// register; today's registrations on this device, each with 삭제. The page
/// is a shell; `gate.js` fills it from the API with the session cookie.
struct GatePage: Sendable {
    static let title = "교문 지도"
    let signIn: SignIn

    func routes(into router: inout GuardedRouter) {
        signIn.routes(into: &router, script: GatePage.script)
        router.get("/", .open) { request, caller in
            signIn.page(request, caller, next: "/") { teacher in
                Page.signedIn(
                    title: GatePage.title, teacher: teacher, school: caller.roster.school(teacher.schoolID), main: GatePage.main,
                    script: GatePage.script.name)
            }
        }
    }

    private static let main = """
        <main class="columns">
        <form id="register" class="card" novalidate>
        <h2>학생 확인</h2>
        <div class="seat">
        <div><label for="grade">학년</label><select id="grade" name="grade" required><option value="">선택</option></select></div>
        <div><label for="class">반</label><select id="class" name="class" required><option value="">선택</option></select></div>
        <div><label for="number">번호</label><select id="number" name="number" required><option value="">선택</option></select></div>
        </div>
        <div id="student" class="student" aria-live="polite"></div>
        <p id="student-error" class="error" role="alert"></p>
        <fieldset aria-describedby="reason-error">
        <legend>사유</legend>
        <div id="reasons" class="choices"></div>
        </fieldset>
        <p id="reason-error" class="error" role="alert"></p>
        <div id="detail-row" hidden>
        <label for="detail">상세 내용</label>
        <textarea id="detail" name="detail" maxlength="200" aria-describedby="detail-error"></textarea>
        <p id="detail-error" class="error" role="alert"></p>
        </div>
        <div class="actions"><button type="submit" id="submit">등록</button></div>
        <p id="register-status" class="status" role="status" aria-live="polite"></p>
        </form>
        <section class="card" aria-labelledby="today-title">
        <h2 id="today-title">오늘 등록한 지도</h2>
        <p class="meta">이 기기에서 오늘 등록한 지도입니다.</p>
        <ul id="today" class="plain"></ul>
        <p id="today-empty" class="meta">아직 없습니다.</p>
        <p id="today-status" class="status" role="status" aria-live="polite"></p>
        </section>
        </main>
        """
}
