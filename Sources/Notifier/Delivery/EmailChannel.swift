import Common
import Curl
import Foundation
import Guidance
import Store
import Wiring

/// Digests e-mailed to each teacher's address in teachers.csv (`SMTP_URL`),
/// or written as `.eml` files into a folder (the local default).
final class EmailChannel: DeliveryChannel {
    let id = Channel.email
    let connections: Int
    let timeout: Duration
    private let mail: MailSettings
    /// `PUBLIC_INGEST_URL`, the app: each message links to its list there.
    private let publicURL: String?
    private let senders: [Locked<Sender>]
    /// The SMTP sessions' cancellations: a send holds its sender's lock.
    private let cancellations: [CurlCancellation]
    private let metrics: Metrics
    private let logger: Logger

    private enum Sender {
        case smtp(SMTPSession)
        case directory(String)
    }

    init(mail: MailSettings, config: DeliveryConfig, metrics: Metrics, logger: Logger) throws(ConfigurationError) {
        self.mail = mail
        publicURL = config.publicAppURL
        connections = config.concurrency
        self.metrics = metrics
        self.logger = logger
        switch mail.transport {
        case .smtp(var server):
            server.timeout = config.sendTimeout(server.timeout)
            timeout = server.timeout
            let made: [(CurlCancellation, Locked<Sender>)]
            do {
                made = try (0..<connections).map { [server] (_) throws(CurlError) in
                    let session = try SMTPSession(server: server)
                    return (session.cancellation, Locked(.smtp(session)))
                }
            } catch {
                throw ConfigurationError(variable: "SMTP_URL", reason: "libcurl cannot send: \(error)")
            }
            cancellations = made.map(\.0)
            senders = made.map(\.1)
        case .directory(let path):
            timeout = config.sendTimeout(.seconds(30))
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw ConfigurationError(variable: "mail folder", reason: "cannot create \(path): \(error)")
            }
            senders = (0..<connections).map { _ in Locked(.directory(path)) }
            cancellations = []
        }
    }

    var summary: String {
        switch mail.transport {
        case .smtp(let server): server.url
        case .directory(let path): "files in \(path)"
        }
    }

    func cancelSends() {
        for cancellation in cancellations { cancellation.cancel() }
    }

    /// A teacher's address, unless they turned the lists' e-mail off (설정).
    func target(of digest: Digest, in roster: Roster, preferences: DeliveryPreferences) -> String? {
        guard preferences.of(digest.teacherId).emailLists else { return nil }
        return EmailChannel.address(of: digest.teacherId, in: roster)
    }

    /// A teacher's e-mail address from teachers.csv, when it is one mail can go to.
    private static func address(of teacherID: String, in roster: Roster) -> String? {
        guard let email = roster.teachers[teacherID]?.email, MailAddress.isAddress(email) else { return nil }
        return email
    }

    /// Counts the teachers e-mail skipped.
    func written(_ digests: [Digest], roster: Roster) {
        let skipped = digests.filter { EmailChannel.address(of: $0.teacherId, in: roster) == nil }.count
        guard skipped > 0 else { return }
        metrics.increment(
            "notifier_deliveries_skipped_total", help: "Digests not e-mailed because the teacher has no usable address in teachers.csv.",
            labels: [("channel", id.rawValue)], by: Double(skipped))
        logger.info("digests not e-mailed: teachers without a usable address in teachers.csv", ["digests": String(skipped)])
    }

    func send(_ claim: ClaimedDelivery, roster: Roster, over connection: Int, now: Double) -> DeliveryAttempt {
        let delivery = claim.delivery
        guard let school = roster.school(delivery.schoolId) else {
            return .notRetriable("school \(delivery.schoolId) is no longer in the roster")
        }
        guard let to = MailAddress(delivery.target) else { return .notRetriable("'\(delivery.target)' is not an e-mail address") }
        let recipient = MailAddress(name: roster.teachers[delivery.teacherId]?.name, address: to.address)
        let message = DigestMail(
            digest: claim.digest, school: school, to: recipient, from: mail.from, publicURL: publicURL, merged: claim.merged
        ).render(date: now)
        return senders[connection].withLock { sender in
            switch sender {
            case .smtp(let session):
                switch session.send(from: mail.from.address, to: to.address, message: message) {
                case .accepted: return .sent
                case .refused(let code, let reply) where code >= 500: return .notRetriable(reply)
                case .refused(_, let reply): return .retriable(reply)
                case .unreachable(let reason): return .retriable(reason)
                // Handed over whole and never confirmed in RFC 5321's 10 minutes
                // (or cancelled by a shutdown): sent again, with the same Message-ID.
                case .unconfirmed(let reason): return .retriable("not confirmed: \(reason)")
                }
            case .directory(let path):
                let file = URL(fileURLWithPath: path).appendingPathComponent("\(delivery.deliveryId).eml")
                do {
                    try Data(message).write(to: file, options: .atomic)
                    return .sent
                } catch {
                    return .retriable("cannot write \(file.path): \(error)")
                }
            }
        }
    }
}
