// Where a digest goes (`Channel`, `DeliveryTarget`), and what became of a send.

/// How a digest reaches a teacher besides the inbox: the name of a channel,
/// stored with each delivery. The notifier's `DeliveryChannel`s say which exist.
package struct Channel: RawRepresentable, Hashable, Sendable, Codable {
    package let rawValue: String

    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    package static let email = Channel(rawValue: "email")
    package static let webhook = Channel(rawValue: "webhook")
    package static let push = Channel(rawValue: "push")
}

/// Where one digest revision must be sent: an e-mail address, a webhook
/// URL, a teacher's devices; and when, if not at once.
package struct DeliveryTarget: Sendable, Equatable {
    package let channel: Channel
    package let target: String
    /// Held until then (seconds since the epoch): the teacher's own time or
    /// the end of their quiet hours (`TeacherSettings.release`).
    package var heldUntil: Double?
    /// A rule crossing whose `rules.csv` row says `urgent`: never held, and
    /// pushed with `Urgency: high`.
    package var urgent = false

    package init(channel: Channel, target: String, heldUntil: Double? = nil, urgent: Bool = false) {
        self.channel = channel
        self.target = target
        self.heldUntil = heldUntil
        self.urgent = urgent
    }
}

/// One digest revision on its way through one channel: the outbox row.
package struct Delivery: Sendable, Equatable {
    package enum Status: String, Sendable, Codable, CaseIterable {
        case pending, sent, failed
        /// Held (quiet hours, the teacher's own time) and replaced before it
        /// went by a newer message of the same kind, which says it stands for it.
        case merged
    }

    /// `<digestId>.<channel>`: the same on every attempt, so receivers dedupe by it.
    package let deliveryId: String
    package let digestId: String
    package let schoolId: String
    package let teacherId: String
    package let channel: Channel
    package let target: String
    package let status: Status
    /// Attempts that ended (sent, refused or unreachable).
    package let attempts: Int
    package let lastError: String?
    /// Seconds since the epoch; when the digest was written.
    package let createdAt: Double
    /// When a pending delivery is due next.
    package let nextAttemptAt: Double?
    package let sentAt: Double?

    package init(
        deliveryId: String, digestId: String, schoolId: String, teacherId: String, channel: Channel, target: String, status: Status,
        attempts: Int, lastError: String?, createdAt: Double, nextAttemptAt: Double?, sentAt: Double?
    ) {
        self.deliveryId = deliveryId
        self.digestId = digestId
        self.schoolId = schoolId
        self.teacherId = teacherId
        self.channel = channel
        self.target = target
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.sentAt = sentAt
    }

    package static func id(digest: String, channel: Channel) -> String { "\(digest).\(channel.rawValue)" }
}

/// What one attempt came to.
package enum DeliveryOutcome: Sendable, Equatable {
    case sent
    /// Transient failure: try again at `at` (seconds since the epoch).
    case retry(error: String, at: Double)
    case failed(error: String)
}
