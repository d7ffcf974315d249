import Common
import Curl
import Guidance
import Store

/// Digests POSTed to the school's webhook in webhooks.csv, signed per
/// Standard Webhooks (`WebhookMessage`).
final class WebhookChannel: DeliveryChannel {
    let id = Channel.webhook
    let summary = "the schools' URLs in webhooks.csv"
    let connections: Int
    let timeout: Duration
    private let sessions: [Locked<HTTPSession>]
    /// The sessions' cancellations: a send holds its session's lock.
    private let cancellations: [CurlCancellation]

    init(config: DeliveryConfig) throws(ConfigurationError) {
        connections = config.concurrency
        timeout = config.sendTimeout(config.webhookTimeout)
        let made: [(CurlCancellation, Locked<HTTPSession>)]
        do {
            made = try (0..<connections).map { [timeout] (_) throws(CurlError) in
                let session = try HTTPSession(timeout: timeout)
                return (session.cancellation, Locked(session))
            }
        } catch {
            throw ConfigurationError(variable: "webhooks", reason: "libcurl cannot send: \(error)")
        }
        cancellations = made.map(\.0)
        sessions = made.map(\.1)
    }

    func cancelSends() {
        for cancellation in cancellations { cancellation.cancel() }
    }

    func target(of digest: Digest, in roster: Roster) -> String? {
        roster.webhooks[digest.schoolId]?.url
    }

    func send(_ claim: ClaimedDelivery, roster: Roster, over connection: Int, now: Double) -> DeliveryAttempt {
        let delivery = claim.delivery
        guard let webhook = roster.webhooks[delivery.schoolId] else {
            return .notRetriable("school \(delivery.schoolId) has no webhook in webhooks.csv any more")
        }
        let body = WebhookMessage.body(claim.digest)
        let headers = WebhookMessage.headers(id: delivery.deliveryId, timestamp: Int(now), body: body, secret: webhook.secret)
        switch sessions[connection].withLock({ $0.post(webhook.url, headers: headers, body: body) }) {
        case .answered(let status, _, _) where (200..<300).contains(status):
            return .sent
        case .answered(let status, let retryAfter, let text) where status == 408 || status == 429 || status >= 500:
            return .retriable("HTTP \(status): \(text.prefix(200))", retryAfter: retryAfter.flatMap { RetryPolicy.seconds(retryAfter: $0) })
        case .answered(let status, _, let text):
            return .notRetriable("HTTP \(status): \(text.prefix(200))")
        case .unreachable(let reason):
            return .retriable(reason)
        }
    }
}
