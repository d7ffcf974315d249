import Common
import Curl
import Foundation
import Store

/// An e-mail address with an optional display name, as in `SMTP_FROM`
/// (`학생부 알림 <guidance@school.example>`) or a teacher's `email`.
public struct MailAddress: Sendable, Equatable {
    public let name: String?
    public let address: String

    init(name: String?, address: String) {
        self.name = name
        self.address = address
    }

    public init?(_ text: String) {
        let text = text.trimmingWhitespace()
        if text.hasSuffix(">"), let open = text.lastIndex(of: "<") {
            let name = String(text[..<open]).trimmingWhitespace()
            let address = String(text[text.index(after: open)..<text.index(before: text.endIndex)])
            guard MailAddress.isAddress(address), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return nil }
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
    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
              text.utf8.count <= 254 else { return false }
        return text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && !"<>()[]\\,;:\"".utf8.contains($0) }
    }

    /// The domain part, for Message-IDs.
    var domain: String { String(address.split(separator: "@").last ?? "localhost") }
}

/// Where digests are sent besides the inbox, read from the environment.
public struct DeliveryConfig: Sendable {
    /// How e-mail leaves the notifier.
    public enum MailTransport: Sendable, Equatable {
        /// To an SMTP server (`SMTP_URL`).
        case smtp(SMTPServer)
        /// Written as `.eml` files into a folder: the local default, for a
        /// mail client to open.
        case directory(String)
    }

    public struct Mail: Sendable, Equatable {
        public var transport: MailTransport
        /// `SMTP_FROM`: the From header and the envelope sender.
        public var from: MailAddress

        public init(transport: MailTransport, from: MailAddress) {
            self.transport = transport
            self.from = from
        }
    }

    /// E-mail is on when set.
    public var mail: Mail?
    /// `PUBLIC_NOTIFIER_URL`: where teachers open the web inbox; e-mails link to it.
    public var publicNotifierURL: String?
    /// `DELIVERY_RETRY_BASE_SECONDS`: the first retry's delay, doubled after each attempt.
    public var retryBase: Duration = .seconds(30)
    /// The longest delay between two attempts.
    public var maxBackoff: Duration = .seconds(900)
    /// `DELIVERY_MAX_AGE_HOURS`: after this long since it was queued, a delivery fails.
    public var maxAge: Duration = .seconds(24 * 3600)
    /// `DELIVERY_CONCURRENCY`: connections per channel on each replica.
    public var concurrency = 4
    /// `DELIVERY_LEASE_SECONDS`: how long a claim is a replica's alone; a
    /// killed replica's claims go to another one after it.
    public var lease: Duration = .seconds(60)
    /// How often an idle dispatcher looks for due deliveries; a digest run on
    /// the same replica wakes it at once.
    public var pollInterval: Duration = .seconds(1)
    /// Most time a webhook POST may take.
    public var webhookTimeout: Duration = .seconds(10)

    /// Most time one attempt over `channel` may take: its own limit (30 s for
    /// a message over SMTP, 10 s for a webhook), and never more than a third
    /// of the lease, so that a claim always outlasts the send it covers.
    func sendTimeout(_ channel: Channel) -> Duration {
        let own: Duration = switch channel {
        case .email:
            if case .smtp(let server) = mail?.transport { server.timeout } else { .seconds(30) }
        case .webhook:
            webhookTimeout
        }
        return min(own, lease / 3)
    }

    public init(mail: Mail? = nil, publicNotifierURL: String? = nil) {
        self.mail = mail
        self.publicNotifierURL = publicNotifierURL
    }

    public static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> DeliveryConfig {
        var config = DeliveryConfig()
        if let url = environment["SMTP_URL"] {
            let lowered = url.lowercased()
            guard lowered.hasPrefix("smtp://") || lowered.hasPrefix("smtps://"), let parsed = URL(string: url), let host = parsed.host, !host.isEmpty,
                  parsed.path.isEmpty || parsed.path == "/", parsed.query == nil, parsed.user == nil else {
                throw ConfigurationError(variable: "SMTP_URL", reason: "must be smtp://host:port or smtps://host:port (credentials go in SMTP_USERNAME and SMTP_PASSWORD)")
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
            let server = SMTPServer(url: url, startTLS: startTLS, username: environment["SMTP_USERNAME"], password: environment["SMTP_PASSWORD"])
            config.mail = Mail(transport: .smtp(server), from: from)
        } else if environment["SMTP_FROM"] != nil || environment["SMTP_USERNAME"] != nil {
            throw ConfigurationError(variable: "SMTP_URL", reason: "is needed when SMTP_FROM or SMTP_USERNAME is set")
        }
        config.publicNotifierURL = try environment.publicURL("PUBLIC_NOTIFIER_URL")
        config.retryBase = .seconds(try environment.int("DELIVERY_RETRY_BASE_SECONDS", default: 30, range: 1...3600))
        config.maxAge = .seconds(3600 * (try environment.int("DELIVERY_MAX_AGE_HOURS", default: 24, range: 1...720)))
        config.concurrency = try environment.int("DELIVERY_CONCURRENCY", default: 4, range: 1...64)
        config.lease = .seconds(try environment.int("DELIVERY_LEASE_SECONDS", default: 60, range: 5...3600))
        return config
    }
}
