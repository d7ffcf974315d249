import Common
import Foundation

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
        if let password = environment["STORE_PASSWORD"] {
            guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
                !url[scheme.upperBound..<at].contains(":"), !url[scheme.upperBound..<at].isEmpty
            else {
                throw ConfigurationError(
                    variable: "STORE_PASSWORD",
                    reason: "needs a STORE_URL with a user and no password, e.g. postgres://guidance@postgres:5432/guidance")
            }
            // Only RFC 3986's unreserved characters stay, as in a path segment.
            url.insert(contentsOf: ":" + password.percentEncoded, at: at)
            location = .postgres(url: url)
        }
        let advice =
            "if the password holds '/', '@', ':', '?', '#' or '%', percent-encode it, or give it alone in STORE_PASSWORD (any bytes work there)"
        switch SQLStore.postgresOptions(url) {
        case .failure(let error):
            throw ConfigurationError(variable: "STORE_URL", reason: "libpq cannot read '\(redacted(url))' (\(error.message)); \(advice)")
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

    /// The URL as it may be logged: a password in the user part or the query
    /// (`password=`) replaced by `***`.
    package static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@"),
            let colon = text[scheme.upperBound..<at].firstIndex(of: ":")
        {
            text.replaceSubrange(text.index(after: colon)..<at, with: "***")
        }
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
    package func open() throws(ConfigurationError) -> SQLStore {
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
                return try SQLStore.sqlite(path: path)
            case .postgres(let url):
                return try SQLStore.postgres(url: url)
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(variable: "STORE_URL", reason: "\(redacted): \(error)")
        }
    }
}
