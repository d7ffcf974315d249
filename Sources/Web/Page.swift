import Foundation
import Guidance
import HTTP

/// A server-rendered page: one HTML document in Korean, the shared style
/// sheet and scripts from `/assets` (never inline, never from a CDN), and
/// headers that keep it to itself.
package enum Page {
    /// Scripts and styles from this server only; photos from anywhere over
    /// https (the roster's `photo_url`); no framing, no form posts elsewhere.
    package static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; connect-src 'self'; "
        + "manifest-src 'self'; worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    /// - Parameters:
    ///   - main: the page's content, already escaped.
    ///   - data: `data-*` attributes of `<body>` the page's script reads; escaped here.
    ///   - scripts: the page's own scripts under `/assets`, after the shared one, in order.
    ///   - manifest: the web app manifest of an installable page.
    package static func response(
        title: String, main: String, data: [(String, String)] = [], scripts: [String] = [], manifest: String? = nil, status: Int = 200,
        headers: [(String, String)] = []
    ) -> Response {
        let attributes = data.map { " data-\($0.0)=\"\(HTML.escape($0.1))\"" }.joined()
        let tags = scripts.isEmpty ? "" : (["common.js"] + scripts).map { "<script src=\"/assets/\($0)\" defer></script>" }.joined()
        let html = """
            <!doctype html>
            <html lang="ko">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title))</title>
            <link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
            <link rel="stylesheet" href="/assets/style.css">
            \(manifest.map { "<link rel=\"manifest\" href=\"\(HTML.escape($0))\">\n<meta name=\"theme-color\" content=\"#1f5fbf\">" } ?? "")
            \(tags)
            </head>
            <body\(attributes)>
            \(main)
            </body>
            </html>

            """
        return Response(status: status, headers: securityHeaders + headers, body: Array(html.utf8))
    }

    static let securityHeaders = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "same-origin"),
        ("Cache-Control", "no-store")
    ]

    /// A page for a signed-in teacher: the bar on top (the school, who is
    /// signed in, the sign-out button) over `main`, titled `title`; `<body>` tells the
    /// script the teacher, their school and its time zone, and `data`.
    package static func signedIn(
        title: String, teacher: Teacher, school: School?, main: String, data: [(String, String)] = [], scripts: [String],
        manifest: String? = nil
    ) -> Response {
        // One row for the school and the buttons, one line under it for who
        // is signed in; the gate's offline state takes that line's place
        // (`#offline`), so it never moves or covers a control.
        let bar = """
            <header class="bar">
            <h1>\(HTML.escape(school?.name ?? teacher.schoolID))</h1>
            <a class="devices" href="/session/devices">기기 연결</a>
            <form method="post" action="/session/end"><button type="submit" class="secondary">로그아웃</button></form>
            <p class="who">\(HTML.escape(teacher.name)) · \(HTML.escape(roleName(teacher)))</p>
            <p id="offline" class="offline" role="status" hidden></p>
            </header>

            """
        let context = [("teacher", teacher.id), ("school", teacher.schoolID), ("time-zone", school?.timeZone.identifier ?? "")]
        // Who the page is for: the app's service worker keeps class lists and
        // photos for this teacher only, and empties them for anyone else (`sw.js`).
        return response(
            title: title, main: bar + main, data: context + data, scripts: scripts, manifest: manifest,
            headers: [("X-Signed-In", teacher.schoolID + "/" + teacher.id)])
    }

    /// Where a digest opens in the app (e-mails and the notifier's old
    /// addresses link there): `/digests/{digestId}`.
    package static func digestPath(of digestID: String) -> String {
        let segment = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))
        return "/digests/" + (digestID.addingPercentEncoding(withAllowedCharacters: segment) ?? "")
    }

    /// The teacher's roles as the school says them (`1학년 3반 담임 · 교문 지도`).
    package static func roleName(_ teacher: Teacher) -> String {
        Teacher.Role.allCases.filter(teacher.has).map { role in
            switch role {
            case .homeroom: "\(teacher.grade ?? 0)학년 \(teacher.classNumber ?? 0)반 담임"
            case .volunteerDuty: "\(teacher.grade ?? 0)학년 봉사 담당"
            case .gate: "교문 지도"
            case .admin: "학생부장"
            }
        }.joined(separator: " · ")
    }
}
