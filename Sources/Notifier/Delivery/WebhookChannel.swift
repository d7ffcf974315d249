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
    var timeout: Duration { posts.timeout }
    private let posts: HTTPPosts

    init(config: DeliveryConfig) throws(ConfigurationError) {
        connections = config.concurrency
        posts = try HTTPPosts(connections: connections, timeout: config.sendTimeout(config.webhookTimeout), variable: "webhooks")
    }

    func cancelSends() { posts.cancel() }

    /// The school's system, not a teacher's phone: never held.
    let followsTeacherHours = false

    func target(of digest: Digest, in roster: Roster, preferences: DeliveryPreferences) -> String? {
        roster.webhooks[digest.schoolId]?.url
    }

    func send(_ claim: ClaimedDelivery, roster: Roster, over connection: Int, now: Double) -> DeliveryAttempt {
        let delivery = claim.delivery
        guard let webhook = roster.webhooks[delivery.schoolId] else {
            return .notRetriable("school \(delivery.schoolId) has no webhook in webhooks.csv any more")
        }
        let body = WebhookMessage.body(claim.digest)
        let headers = WebhookMessage.headers(id: delivery.deliveryId, timestamp: Int(now), body: body, secret: webhook.secret)
        return HTTPPosts.attempt(posts.post(webhook.url, headers: headers, body: body, over: connection), now: now)
    }
}
