import Common
import Curl

/// The POSTs of a channel that sends over HTTP (webhooks, Web Push): one
/// libcurl session per connection, cancelled together at a shutdown, and
/// what an answer means for a retry.
final class HTTPPosts: Sendable {
    let timeout: Duration
    private let sessions: [Locked<HTTPSession>]
    /// The sessions' cancellations: a send holds its session's lock.
    private let cancellations: [CurlCancellation]

    /// `connections` sessions, each POST cut off after `timeout`, each
    /// connecting only to `destinations`; `variable` names the setting a
    /// failure is reported against.
    init(connections: Int, timeout: Duration, variable: String, destinations: HTTPSession.Destinations = .any)
        throws(ConfigurationError)
    {
        self.timeout = timeout
        let made: [(CurlCancellation, Locked<HTTPSession>)]
        do {
            made = try (0..<connections).map { (_) throws(CurlError) in
                let session = try HTTPSession(timeout: timeout, destinations: destinations)
                return (session.cancellation, Locked(session))
            }
        } catch {
            throw ConfigurationError(variable: variable, reason: "libcurl cannot send: \(error)")
        }
        cancellations = made.map(\.0)
        sessions = made.map(\.1)
    }

    func post(_ url: String, headers: [(String, String)], body: [UInt8], over connection: Int) -> HTTPResult {
        sessions[connection].withLock { $0.post(url, headers: headers, body: body) }
    }

    func cancel() {
        for cancellation in cancellations { cancellation.cancel() }
    }

    /// 2xx is sent; 408, 429, 5xx and no answer are worth trying again
    /// (`Retry-After` honoured, a date read against `now`); any other status is not.
    static func attempt(_ result: HTTPResult, now: Double) -> DeliveryAttempt {
        switch result {
        case .answered(let status, _, _) where (200..<300).contains(status):
            return .sent
        case .answered(let status, let retryAfter, let text) where status == 408 || status == 429 || status >= 500:
            return .retriable(described(status, text), retryAfter: retryAfter.flatMap { RetryPolicy.seconds(retryAfter: $0, now: now) })
        case .answered(let status, _, let text):
            return .notRetriable(described(status, text))
        case .unreachable(let reason):
            return .retriable(reason)
        }
    }

    /// A status and the start of the answer, if any.
    private static func described(_ status: Int, _ text: String) -> String {
        text.isEmpty ? "HTTP \(status)" : "HTTP \(status): \(text.prefix(200))"
    }
}
