import Guidance
import Store

/// What one connection does with the batch it claimed, decided without
/// I/O: the dispatcher asks `next` what to do, does it (a send over
/// libcurl, a write to the store), and tells `sent` what a send came to.
///
/// - A delivery is sent only while its send can end inside the lease;
///   otherwise the rest is given back, so that no other replica sends it at
///   the same time.
/// - A stop gives the rest back, the delivery under way included when its
///   send was cut short (not an attempt: the next replica sends it).
/// - An outcome is recorded as sent, failed for good, or retried at the
///   policy's time; outcomes are written together every `flushEvery`
///   seconds rather than one transaction a message, and always before the
///   batch gives anything back or ends.
struct DeliveryBatch {
    enum Action {
        case send(ClaimedDelivery)
        /// Write these outcomes to the store.
        case record([(deliveryId: String, outcome: DeliveryOutcome)])
        /// Release these deliveries' claims: another replica sends them.
        case giveBack([String])
        case done
    }

    private let claims: [ClaimedDelivery]
    private let retry: RetryPolicy
    /// The longest one send may take (the channel's timeout and a second).
    private let longestSend: Double
    private let flushEvery: Double
    /// The next claim to send.
    private var index = 0
    private var pending: [(deliveryId: String, outcome: DeliveryOutcome)] = []
    private var recordedAt: Double
    private var givenBack = false

    init(claims: [ClaimedDelivery], retry: RetryPolicy, longestSend: Double, flushEvery: Double = 0.05, now: Double) {
        self.claims = claims
        self.retry = retry
        self.longestSend = longestSend
        self.flushEvery = flushEvery
        recordedAt = now
    }

    /// What to do now, at `now`, with the lease ending at `leaseUntil`.
    mutating func next(now: Double, leaseUntil: Double, stopping: Bool) -> Action {
        let ending = givenBack || index == claims.count || stopping || now + longestSend > leaseUntil
        if !pending.isEmpty && (ending || now - recordedAt >= flushEvery) {
            defer {
                pending = []
                recordedAt = now
            }
            return .record(pending)
        }
        if index < claims.count && !givenBack && ending {
            givenBack = true
            return .giveBack(claims[index...].map(\.delivery.deliveryId))
        }
        guard index < claims.count && !givenBack else { return .done }
        return .send(claims[index])
    }

    /// What the send of the delivery `next` named came to, at `now`; the
    /// outcome recorded for it, or nil when a stop cut it short (given
    /// back, not an attempt). `random` in 0...1 spreads the retries.
    mutating func sent(_ attempt: DeliveryAttempt, now: Double, stopping: Bool, random: Double) -> DeliveryOutcome? {
        let claim = claims[index]
        if case .retriable = attempt, stopping { return nil }
        index += 1
        let outcome: DeliveryOutcome
        switch attempt {
        case .sent:
            outcome = .sent
        case .notRetriable(let error):
            outcome = .failed(error: error)
        case .retriable(let error, let retryAfter):
            let attempts = claim.delivery.attempts + 1
            if let at = retry.next(attempts: attempts, now: now, queuedAt: claim.queuedAt, retryAfter: retryAfter, random: random) {
                outcome = .retry(error: error, at: at)
            } else {
                outcome = .failed(error: "gave up after \(attempts) attempts over \(Int(retry.maxAge / 3600)) h: \(error)")
            }
        }
        pending.append((claim.delivery.deliveryId, outcome))
        return outcome
    }
}
