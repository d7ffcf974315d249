import Kafka
import Store

/// Consumed messages on their way to the store, per partition, in order. A
/// message whose event names an id the roster does not list yet (ingest
/// reloaded a newer roster first) stays at the head of its partition's
/// queue, and everything behind it waits, until the roster knows the id or
/// `grace` has passed since it arrived; then it is dead-lettered. Other
/// partitions go on. Nothing of a partition is released past a held
/// message, so its committed offset never passes one.
///
/// Used by the materializer's consuming thread only.
struct RosterHold {
    /// What became of a message: an event to write, or a dead letter.
    enum Outcome {
        case event(StoredEvent)
        case deadLetter(reason: String)
    }

    struct Released {
        let message: ConsumedMessage
        let outcome: Outcome
        /// Seconds it waited for the roster; 0 when it did not.
        let held: Double
    }

    private struct Waiting {
        let message: ConsumedMessage
        let arrived: Double
        /// When it was first found awaiting the roster.
        var heldSince: Double?
    }

    /// The most messages held at once; the consumer polls no more until
    /// some are released, so a long wait cannot grow memory without bound.
    static let limit = 20_000

    let grace: Double
    private var queues: [TopicPartition: [Waiting]] = [:]
    /// Messages waiting behind a held one, all partitions.
    private(set) var count = 0

    init(grace: Double) {
        self.grace = grace
    }

    /// Decides what it can of what waits and of a polled batch: every
    /// message of a partition with nothing held is decoded at once (the
    /// common case costs no queue); one behind a held message waits behind
    /// it. `held` is called for a message the first time it is held.
    mutating func take(
        _ batch: [ConsumedMessage], now: Double,
        decode: (ConsumedMessage) -> Result<StoredEvent, DecodeFailure>, held: (ConsumedMessage, DecodeFailure) -> Void
    ) -> [Released] {
        var released = queues.isEmpty ? [] : releaseWaiting(now: now, decode: decode, held: held)
        for message in batch {
            let key = TopicPartition(topic: message.topic, partition: message.partition)
            if !queues.isEmpty, queues[key] != nil {
                queues[key]?.append(Waiting(message: message, arrived: now))
                continue
            }
            switch decided(message, arrived: now, now: now, decode: decode) {
            case .success(let outcome):
                released.append(Released(message: message, outcome: outcome, held: 0))
            case .failure(let failure):
                queues[key] = [Waiting(message: message, arrived: now, heldSince: now)]
                held(message, failure)
            }
        }
        count = queues.values.reduce(0) { $0 + $1.count }
        return released
    }

    /// What becomes of a message now, or, while it waits for the roster,
    /// why it waits.
    private func decided(
        _ message: ConsumedMessage, arrived: Double, now: Double, decode: (ConsumedMessage) -> Result<StoredEvent, DecodeFailure>
    ) -> Result<Outcome, DecodeFailure> {
        switch decode(message) {
        case .success(let event):
            return .success(.event(event))
        case .failure(let failure) where !failure.awaitingRoster:
            return .success(.deadLetter(reason: failure.reason))
        case .failure(let failure) where now - arrived >= grace:
            return .success(.deadLetter(reason: "\(failure.reason) (not in the roster after \(Int(now - arrived)) s)"))
        case .failure(let failure):
            return .failure(failure)
        }
    }

    /// Takes from each held partition's head every message decided now.
    private mutating func releaseWaiting(
        now: Double, decode: (ConsumedMessage) -> Result<StoredEvent, DecodeFailure>, held: (ConsumedMessage, DecodeFailure) -> Void
    ) -> [Released] {
        var released: [Released] = []
        for key in Array(queues.keys) {
            guard var queue = queues[key] else { continue }
            var taken = 0
            scan: while taken < queue.count {
                let waiting = queue[taken]
                switch decided(waiting.message, arrived: waiting.arrived, now: now, decode: decode) {
                case .success(let outcome):
                    released.append(Released(message: waiting.message, outcome: outcome, held: waiting.heldSince.map { now - $0 } ?? 0))
                    taken += 1
                case .failure(let failure):
                    if waiting.heldSince == nil {
                        queue[taken].heldSince = now
                        held(waiting.message, failure)
                    }
                    break scan
                }
            }
            queue.removeFirst(taken)
            queues[key] = queue.isEmpty ? nil : queue
        }
        return released
    }

    /// Forgets what revoked partitions held: their next owner (or this
    /// replica, assigned them again) reads them from the committed offset.
    mutating func drop(_ partitions: [TopicPartition]) {
        for partition in partitions { queues[partition] = nil }
        count = queues.values.reduce(0) { $0 + $1.count }
    }
}
