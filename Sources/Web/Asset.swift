import Access
import Crypto
import HTTP

/// A file the pages load from `/assets/<name>`: kept in the binary (each
/// target's `Assets/` folder, embedded by the EmbedFiles build plugin), so a
/// service serves its pages with nothing beside it, and a school's network
/// that blocks CDNs changes nothing.
package struct Asset: Sendable {
    package let name: String
    let contentType: String
    let body: [UInt8]
    /// The body's digest: a browser asks again and gets 304 until it changes.
    let etag: String

    package init(name: String, contentType: String, text: String) {
        self.init(name: name, contentType: contentType, bytes: Array(text.utf8))
    }

    package init(name: String, contentType: String, bytes: [UInt8]) {
        self.name = name
        self.contentType = contentType
        body = bytes
        etag = "\"" + SHA256.hex(SHA256.hash(body)).prefix(16) + "\""
    }

    /// The style sheet, the script and the icons every page shares.
    package static let shared = [styleSheet, commonScript, signInScript, icon, icon192, icon512]

    /// The tab's and home screen's icon: a school gate, drawn (no font needed).
    static let icon = Asset(name: "icon.svg", contentType: "image/svg+xml", text: EmbeddedFiles.iconSVG)
    /// The home screen's icons of the installed app (its manifest names them).
    static let icon192 = Asset(name: "icon-192.png", contentType: "image/png", bytes: EmbeddedFiles.icon192PNG)
    static let icon512 = Asset(name: "icon-512.png", contentType: "image/png", bytes: EmbeddedFiles.icon512PNG)
    /// Both pages' look (`Assets/style.css`).
    static let styleSheet = Asset(name: "style.css", contentType: "text/css; charset=utf-8", text: EmbeddedFiles.styleCSS)
    /// What both pages' scripts share (`Assets/common.js`): API calls, problem+json in Korean, elements from text.
    static let commonScript = Asset(name: "common.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.commonJS)
    /// The sign-in page's (`Assets/signin.js`): a session that ended leaves no student's name or photo on the device.
    static let signInScript = Asset(name: "signin.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.signinJS)

    /// Serves `assets` (plus the shared ones) at `/assets/{name}`.
    package static func routes(_ assets: [Asset], into router: inout GuardedRouter) {
        let byName = Dictionary(uniqueKeysWithValues: (shared + assets).map { ($0.name, $0) })
        router.get("/assets/{name}", .open) { request, _ in
            guard let asset = byName[request.parameter("name")] else {
                throw HTTPError.notFound("no asset named '\(request.parameter("name"))'")
            }
            return asset.response(to: request)
        }
    }

    /// The asset, or 304 when the browser has it: asked again every time
    /// (`no-cache`), so a new release is seen at once.
    package func response(to request: Request) -> Response {
        let headers = [("ETag", etag), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff")]
        if request.header("if-none-match") == etag { return Response(status: 304, headers: headers) }
        return Response(status: 200, headers: [("Content-Type", contentType)] + headers, body: body)
    }
}
