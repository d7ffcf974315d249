import Foundation
import HTTP

/// A web page's session: the teacher's token in an `HttpOnly`,
/// `SameSite=Strict` cookie (`Secure` when the public address is https), so
/// the page's script never sees it and other sites' pages never send it. Each
/// service has its own name: cookies do not tell ports apart.
public struct SessionCookie: Sendable {
    public let name: String
    public let secure: Bool

    public init(name: String, publicURL: String?) {
        self.name = name
        secure = publicURL?.lowercased().hasPrefix("https://") ?? false
    }

    /// The `Set-Cookie` value that signs the browser in. The token is
    /// percent-encoded, so no character of it can end the cookie early.
    public func set(_ token: String) -> String {
        let value = token.addingPercentEncoding(withAllowedCharacters: SessionCookie.valueCharacters) ?? ""
        return "\(name)=\(value); \(attributes)"
    }

    /// The `Set-Cookie` value that signs the browser out.
    public var clear: String { "\(name)=; Max-Age=0; \(attributes)" }

    private var attributes: String { "Path=/; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "") }

    /// The token in the request's `Cookie` header, if it carries this cookie.
    public func token(in request: Request) -> String? {
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
