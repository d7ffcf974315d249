import Common
import Curl
import Foundation
import Guidance
import Sessions
import Store
import Wiring

/// Where digests are sent besides the inbox, read from the environment.
package struct DeliveryConfig: Sendable {
    /// E-mail is on when set.
    package var mail: MailSettings?
    /// `PUBLIC_NOTIFIER_URL`: the notifier's own public address, if browsers
    /// reach it (its `/` sends them on to the app); marks its cookie `Secure`.
    package var publicNotifierURL: String?
    /// `PUBLIC_INGEST_URL`: where teachers open the app (the ingest serves
    /// it); e-mails link to their list in it, and the notifier's `/` sends
    /// browsers there.
    package var publicAppURL: String?
    /// `DELIVERY_RETRY_BASE_SECONDS`: the first retry's delay, doubled after each attempt.
    package var retryBase: Duration = .seconds(30)
    /// The longest delay between two attempts.
    package var maxBackoff: Duration = .seconds(900)
    /// `DELIVERY_MAX_AGE_HOURS`: after this long since it was queued, a delivery fails.
    package var maxAge: Duration = .seconds(24 * 3600)
    /// `DELIVERY_CONCURRENCY`: connections per channel on each replica.
    package var concurrency = 4
    /// `DELIVERY_LEASE_SECONDS`: how long a claim is a replica's alone; a
    /// killed replica's claims go to another one after it.
    package var lease: Duration = .seconds(60)
    /// How often an idle dispatcher looks for due deliveries; a digest run on
    /// the same replica wakes it at once.
    package var pollInterval: Duration = .seconds(1)
    /// Most time a webhook POST (or a push) may take.
    package var webhookTimeout: Duration = .seconds(10)
    /// `VAPID_PRIVATE_KEY`, `VAPID_SUBJECT`: Web Push is on when set.
    package var vapid: VAPIDSettings?
    /// `QUIET_HOURS` (`21:00-07:00`, or `off`): the quiet hours of a
    /// teacher who set none of their own, in the school's time.
    package var quietHours: QuietHours? = .standard
    /// Push endpoints may be plain http on loopback: the tests' push
    /// service. Never from the environment; a browser's endpoint is https.
    package var pushOverHTTP = false

    /// Most time one attempt may take: the channel's own limit (30 s for a
    /// message over SMTP, 10 s for a webhook), and never more than a third
    /// of the lease, so that a claim always outlasts the send it covers.
    func sendTimeout(_ own: Duration) -> Duration {
        min(own, lease / 3)
    }

    /// The channels this configuration turns on: e-mail when `SMTP_URL` is
    /// set (or a mail folder is), webhooks always (a school without a row in
    /// webhooks.csv gets none), push when the VAPID key is set (a teacher
    /// without a device gets none). A new channel is added here.
    func channels(store: SQLStore, sessions: Sessions, metrics: Metrics, logger: Logger) throws(ConfigurationError)
        -> [any DeliveryChannel]
    {
        var channels: [any DeliveryChannel] = []
        if let mail {
            channels.append(try EmailChannel(mail: mail, config: self, metrics: metrics, logger: logger))
        }
        channels.append(try WebhookChannel(config: self))
        if let vapid {
            channels.append(try PushChannel(vapid: vapid, config: self, store: store, sessions: sessions, logger: logger))
        }
        return channels
    }

    package init(mail: MailSettings? = nil, publicNotifierURL: String? = nil, publicAppURL: String? = nil) {
        self.mail = mail
        self.publicNotifierURL = publicNotifierURL
        self.publicAppURL = publicAppURL
    }

    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> DeliveryConfig {
        var config = DeliveryConfig()
        config.mail = try MailSettings.fromEnvironment(environment)
        config.publicNotifierURL = try environment.publicURL("PUBLIC_NOTIFIER_URL")
        config.publicAppURL = try environment.publicURL("PUBLIC_INGEST_URL")
        config.retryBase = .seconds(try environment.int("DELIVERY_RETRY_BASE_SECONDS", default: 30, range: 1...3600))
        config.maxAge = .seconds(3600 * (try environment.int("DELIVERY_MAX_AGE_HOURS", default: 24, range: 1...720)))
        config.concurrency = try environment.int("DELIVERY_CONCURRENCY", default: 4, range: 1...64)
        config.lease = .seconds(try environment.int("DELIVERY_LEASE_SECONDS", default: 60, range: 5...3600))
        config.vapid = try VAPIDSettings.fromEnvironment(environment)
        if let text = environment["QUIET_HOURS"], !text.isEmpty {
            guard let quiet = QuietHours(text) else {
                throw ConfigurationError(variable: "QUIET_HOURS", reason: "must be HH:MM-HH:MM (two different times) or off, not '\(text)'")
            }
            config.quietHours = quiet.isNone ? nil : quiet
        }
        return config
    }
}
