import Foundation
import HTTP
import Sessions

/// A web page's session cookie: a signed session (`Sessions`), never a
/// token, in an `HttpOnly`, `SameSite=Strict` cookie (`Secure` when the
/// public address is https) that expires with the session, so the page's
/// script never sees it and other sites' pages never send it. Each service
/// has its own name: cookies do not tell ports apart.
package struct SessionCookie: Sendable {
    /// The app's cookie (guidance-ingest; its name from when the ingest
    /// served only the gate) and the notifier's, which the app's reads
    /// carry there re-sealed (`Forwarding`).
    package static let app = "gate_session"
    package static let notifier = "teacher_session"

    package let name: String
    package let secure: Bool

    package init(name: String, publicURL: String?) {
        self.name = name
        secure = publicURL?.lowercased().hasPrefix("https://") ?? false
    }

    /// The `Set-Cookie` value that signs the browser in for `maxAge`. The
    /// value is percent-encoded, so no character of it can end the cookie early.
    package func set(_ value: String, maxAge: Duration) -> String {
        let encoded = value.addingPercentEncoding(withAllowedCharacters: SessionCookie.valueCharacters) ?? ""
        return "\(name)=\(encoded); Max-Age=\(maxAge.components.seconds); \(attributes)"
    }

    /// The `Set-Cookie` value that signs the browser out.
    package var clear: String { "\(name)=; Max-Age=0; \(attributes)" }

    private var attributes: String { "Path=/; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "") }

    /// The value of this cookie in the request's `Cookie` header, if any.
    package func value(in request: Request) -> String? {
        guard let header = request.header("cookie") else { return nil }
        for pair in header.split(separator: ";") {
            let trimmed = pair.drop { $0 == " " }
            guard trimmed.hasPrefix(name + "=") else { continue }
            let value = trimmed.dropFirst(name.count + 1)
            return value.isEmpty ? nil : value.removingPercentEncoding
        }
        return nil
    }

    private static let valueCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
}
