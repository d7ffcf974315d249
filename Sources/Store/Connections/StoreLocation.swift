import Common
import Foundation
import Guidance

/// How the store is reached (`STORE_URL`).
package enum StoreLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    package static func parse(_ text: String) throws(ConfigurationError) -> StoreLocation {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw ConfigurationError(
                    variable: "STORE_URL", reason: "sqlite: needs a file path, e.g. sqlite:/var/lib/guidance/notifier.db")
            }
            return .sqlite(path: path)
        }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            return .postgres(url: text)
        }
        throw ConfigurationError(
            variable: "STORE_URL", reason: "'\(redacted(text))' is neither sqlite:<path> nor postgres://user:password@host:5432/db")
    }

    /// `STORE_URL`, with `STORE_PASSWORD` (any bytes, e.g. from `openssl
    /// rand -base64`) put into a `postgres://` URL percent-encoded. A URL
    /// libpq cannot read is refused here, naming the password when the
    /// likely cause is a raw `/`, `@`, `?` or `#` in it.
    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> StoreLocation {
        var location = try parse(environment.string("STORE_URL", default: "sqlite:guidance-notifier.db"))
        guard case .postgres(var url) = location else {
            if environment["STORE_PASSWORD"] != nil {
                throw ConfigurationError(variable: "STORE_PASSWORD", reason: "is for a postgres:// STORE_URL; this one is SQLite")
            }
            return location
        }
        if let password = environment.bytes("STORE_PASSWORD") {
            guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
                !url[scheme.upperBound..<at].contains(":"), !url[scheme.upperBound..<at].isEmpty
            else {
                throw ConfigurationError(
                    variable: "STORE_PASSWORD",
                    reason: "needs a STORE_URL with a user and no password, e.g. postgres://guidance@postgres:5432/guidance")
            }
            // Only RFC 3986's unreserved characters stay, as in a path segment.
            url.insert(contentsOf: ":" + String.percentEncoded(password), at: at)
            location = .postgres(url: url)
        }
        let advice =
            "if the password holds '/', '@', ':', '?', '#' or '%', percent-encode it, or give it alone in STORE_PASSWORD (any bytes work there)"
        // A password with a raw delimiter is read by libpq as part of the host,
        // the port, the database or the query, and its error text would then
        // quote a piece of it: refused here, the password never echoed.
        if let password = StoreLocation.password(in: url), StoreLocation.misread(password) {
            throw ConfigurationError(variable: "STORE_URL", reason: "the password in it cannot be read as it is: \(advice)")
        }
        switch SQLStore.postgresOptions(url) {
        case .failure(let error):
            // libpq's text quotes what it could not read: with a password in the URL, that may be the password.
            let detail = StoreLocation.password(in: url) == nil ? " (\(error.message))" : ""
            throw ConfigurationError(variable: "STORE_URL", reason: "libpq cannot read '\(redacted(url))'\(detail); \(advice)")
        case .success(let options):
            // A raw '/' in the password ends the host part early: libpq reads
            // `user:pass` as host and port and fails only when it connects.
            let port = options["port"] ?? ""
            if !port.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ",") }) || (options["dbname"] ?? "").contains("@") {
                throw ConfigurationError(
                    variable: "STORE_URL",
                    reason: "libpq reads its host and port as '\(options["host"] ?? "")' and a port that is not a number: \(advice)")
            }
        }
        return location
    }

    /// The password written in a URL's user part (between the first `:` and
    /// the last `@` of the part after `://`), if any.
    static func password(in url: String) -> Substring? {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].lastIndex(of: "@"),
            let colon = url[scheme.upperBound..<at].firstIndex(of: ":")
        else { return nil }
        return url[url.index(after: colon)..<at]
    }

    /// Whether libpq would read a URL's raw password otherwise than meant: a
    /// delimiter in it, or a `%` that starts no percent-encoded byte.
    static func misread(_ password: Substring) -> Bool {
        let bytes = Array(password.utf8)
        for (index, byte) in bytes.enumerated() {
            if "/?#@".utf8.contains(byte) { return true }
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[(index + 1)...(index + 2)].allSatisfy({ isxdigit(Int32($0)) != 0 }) else {
                    return true
                }
            }
        }
        return false
    }

    /// The URL as it may be logged: a password in the user part or the query
    /// (`password=`) replaced by `***`.
    package static func redacted(_ url: String) -> String {
        var text = url
        if let password = password(in: url) { text.replaceSubrange(password.startIndex..<password.endIndex, with: "***") }
        if let query = text.firstIndex(of: "?") {
            let parameters = text[text.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { part in
                part.lowercased().hasPrefix("password=") ? "password=***" : String(part)
            }
            text = String(text[...query]) + parameters.joined(separator: "&")
        }
        return text
    }

    /// The location as it may be logged.
    package var redacted: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let url): StoreLocation.redacted(url)
        }
    }

    /// Opens the store, failing with `STORE_URL` named and its password
    /// never shown.
    package func open(clock: @escaping @Sendable () -> Double) throws(ConfigurationError) -> SQLStore {
        do {
            switch self {
            case .sqlite(let path):
                let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
                    throw ConfigurationError(
                        variable: "STORE_URL",
                        reason: "the folder '\(folder)' of \(redacted) does not exist; create it or point STORE_URL elsewhere")
                }
                return try SQLStore.sqlite(path: path, clock: clock)
            case .postgres(let url):
                return try SQLStore.postgres(url: url, clock: clock)
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(variable: "STORE_URL", reason: "\(redacted): \(error)")
        }
    }
}
