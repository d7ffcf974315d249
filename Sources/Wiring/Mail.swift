import Common
import Curl
import Foundation
import Guidance

/// An e-mail address with an optional display name, as in `SMTP_FROM`
/// (`학생부 알림 <guidance@school.example>`) or a teacher's `email`.
package struct MailAddress: Sendable, Equatable {
    package let name: String?
    package let address: String

    package init(name: String?, address: String) {
        self.name = name
        self.address = address
    }

    package init?(_ text: String) {
        let text = text.trimmingWhitespace()
        if text.hasSuffix(">"), let open = text.lastIndex(of: "<") {
            let name = String(text[..<open]).trimmingWhitespace()
            let address = String(text[text.index(after: open)..<text.index(before: text.endIndex)])
            guard MailAddress.isAddress(address), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                return nil
            }
            self.address = address
            self.name = name.isEmpty ? nil : name.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        } else {
            guard MailAddress.isAddress(text) else { return nil }
            address = text
            name = nil
        }
    }

    /// `local@domain` in printable ASCII without spaces, brackets or quotes:
    /// what every SMTP server takes, and nothing that could end a header.
    package static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            text.utf8.count <= 254
        else { return false }
        return text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && !"<>()[]\\,;:\"".utf8.contains($0) }
    }

    /// The domain part, for Message-IDs.
    package var domain: String { String(address.split(separator: "@").last ?? "localhost") }
}

/// How e-mail leaves a service (`SMTP_URL`, `SMTP_STARTTLS`,
/// `SMTP_USERNAME`, `SMTP_PASSWORD`, `SMTP_FROM`): the notifier's digests and
/// both services' sign-in links.
package struct MailSettings: Sendable, Equatable {
    package enum Transport: Sendable, Equatable {
        /// To an SMTP server (`SMTP_URL`).
        case smtp(SMTPServer)
        /// Written as `.eml` files into a folder: the local default, for a
        /// mail client to open.
        case directory(String)
    }

    package var transport: Transport
    /// `SMTP_FROM`: the From header and the envelope sender.
    package var from: MailAddress

    package init(transport: Transport, from: MailAddress) {
        self.transport = transport
        self.from = from
    }

    /// The settings, or nil when `SMTP_URL` is not set (e-mail is off).
    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> MailSettings? {
        guard let url = environment["SMTP_URL"] else {
            if environment["SMTP_FROM"] != nil || environment["SMTP_USERNAME"] != nil {
                throw ConfigurationError(variable: "SMTP_URL", reason: "is needed when SMTP_FROM or SMTP_USERNAME is set")
            }
            return nil
        }
        let lowered = url.lowercased()
        guard lowered.hasPrefix("smtp://") || lowered.hasPrefix("smtps://"), let parsed = URL(string: url), let host = parsed.host,
            !host.isEmpty,
            parsed.path.isEmpty || parsed.path == "/", parsed.query == nil, parsed.user == nil
        else {
            throw ConfigurationError(
                variable: "SMTP_URL",
                reason: "must be smtp://host:port or smtps://host:port (credentials go in SMTP_USERNAME and SMTP_PASSWORD)")
        }
        let startTLSText = environment.string("SMTP_STARTTLS", default: "opportunistic")
        guard let startTLS = SMTPServer.StartTLS(rawValue: startTLSText) else {
            throw ConfigurationError(variable: "SMTP_STARTTLS", reason: "'\(startTLSText)' is not one of off, opportunistic, required")
        }
        guard let fromText = environment["SMTP_FROM"] else {
            throw ConfigurationError(variable: "SMTP_FROM", reason: "is required with SMTP_URL, e.g. 학생부 알림 <guidance@school.example>")
        }
        guard let from = MailAddress(fromText) else {
            throw ConfigurationError(variable: "SMTP_FROM", reason: "'\(fromText)' is not an address like 학생부 알림 <guidance@school.example>")
        }
        let server = SMTPServer(
            url: url, startTLS: startTLS, username: environment["SMTP_USERNAME"], password: environment["SMTP_PASSWORD"])
        return MailSettings(transport: .smtp(server), from: from)
    }

    /// Sends one message over a connection of its own (or writes it as
    /// `<name>.eml`): for the rare message, a sign-in link. Blocks.
    package func sendOne(to address: String, message: [UInt8], name: String) -> SMTPResult {
        switch transport {
        case .smtp(let server):
            do {
                return try SMTPSession(server: server).send(from: from.address, to: address, message: message)
            } catch {
                return .unreachable("\(error)")
            }
        case .directory(let path):
            let file = URL(fileURLWithPath: path).appendingPathComponent("\(name).eml")
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                try Data(message).write(to: file, options: .atomic)
                return .accepted
            } catch {
                return .unreachable("cannot write \(file.path): \(error)")
            }
        }
    }
}

/// Header encodings of RFC 5322 and RFC 2047.
package enum MailHeader {
    /// Printable ASCII stays as it is; anything else becomes UTF-8 encoded
    /// words of at most 75 characters, folded onto lines of their own, each
    /// cut at a character boundary.
    package static func encode(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) && !text.contains("=?") { return text }
        var words: [String] = []
        var chunk: [UInt8] = []
        for scalar in text.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            // 45 bytes are 60 base64 characters: 72 with "=?UTF-8?B?" and "?=".
            if chunk.count + bytes.count > 45 {
                words.append(word(chunk))
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty { words.append(word(chunk)) }
        return words.joined(separator: "\r\n ")
    }

    private static func word(_ bytes: [UInt8]) -> String {
        "=?UTF-8?B?\(Data(bytes).base64EncodedString())?="
    }

    /// `name <address>`, the name encoded or quoted as needed.
    package static func address(_ address: MailAddress) -> String {
        guard let name = address.name, !name.isEmpty else { return "<\(address.address)>" }
        if name.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) {
            let quoted = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            return "\"\(quoted)\" <\(address.address)>"
        }
        return "\(encode(name)) <\(address.address)>"
    }

    /// RFC 5322 date in UTC: "Mon, 30 Nov 2026 02:30:00 +0000".
    package static func date(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let secondOfDay = whole - days * 86_400
        let (year, month, day) = Timestamp.civilFromDays(days)
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(weekdays[((days % 7) + 7) % 7]), \(day) \(months[month - 1]) \(year) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) +0000"
    }

    /// Base64 in lines of 76 characters, as MIME bodies need.
    package static func base64(_ text: String) -> String {
        base64(data: Data(text.utf8))
    }

    /// A text body in base64 lines, each of its line breaks a CRLF as MIME
    /// text needs. Byte by byte: Foundation's `replacingOccurrences` took 8 %
    /// of the notifier's CPU in a digest wave.
    package static func base64(text: String) -> String {
        var data = Data(capacity: text.utf8.count + text.utf8.count / 16)
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\n") { data.append(UInt8(ascii: "\r")) }
            data.append(byte)
        }
        return base64(data: data)
    }

    private static func base64(data: Data) -> String {
        data.base64EncodedString(options: [.lineLength76Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
    }
}
