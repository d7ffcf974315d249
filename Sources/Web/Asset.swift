import Crypto
import HTTP
import ServiceSupport

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
        self.name = name
        self.contentType = contentType
        body = Array(text.utf8)
        etag = "\"" + SHA256.hex(SHA256.hash(body)).prefix(16) + "\""
    }

    /// The style sheet, the script and the icon every page shares.
    package static let shared = [styleSheet, commonScript, icon]

    /// The tab's and home screen's icon: a school gate, drawn (no font needed).
    static let icon = Asset(name: "icon.svg", contentType: "image/svg+xml", text: EmbeddedFiles.iconSVG)
    /// Both pages' look (`Assets/style.css`).
    static let styleSheet = Asset(name: "style.css", contentType: "text/css; charset=utf-8", text: EmbeddedFiles.styleCSS)
    /// What both pages' scripts share (`Assets/common.js`): API calls, problem+json in Korean, elements from text.
    static let commonScript = Asset(name: "common.js", contentType: "text/javascript; charset=utf-8", text: EmbeddedFiles.commonJS)

    /// Serves `assets` (plus the shared ones) at `/assets/{name}`.
    package static func routes(_ assets: [Asset], into router: inout GuardedRouter) {
        let byName = Dictionary(uniqueKeysWithValues: (shared + assets).map { ($0.name, $0) })
        router.get("/assets/{name}", .open) { request, _ in
            guard let asset = byName[request.parameter("name")] else { throw HTTPError.notFound("no asset named '\(request.parameter("name"))'") }
            let headers = [("ETag", asset.etag), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff")]
            if request.header("if-none-match") == asset.etag { return Response(status: 304, headers: headers) }
            return Response(status: 200, headers: [("Content-Type", asset.contentType)] + headers, body: asset.body)
        }
    }
}
