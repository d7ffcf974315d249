import CRdKafka
import Common

/// The one error type of the Kafka layer: a code, a human message, and whether
/// retrying the same operation later may succeed (the HTTP layer answers 503
/// with `Retry-After` for those).
package struct KafkaError: RetriableError, CustomStringConvertible, Equatable {
    package enum Code: Sendable, Equatable {
        /// The broker did not acknowledge within the delivery timeout.
        case deliveryTimedOut
        /// No broker could be reached.
        case brokerUnavailable
        /// The local queue is full: too many messages await acknowledgement.
        case queueFull
        /// The idempotent producer hit a fatal error and is being replaced.
        case producerFailed
        /// The producer or consumer is shutting down.
        case shuttingDown
        /// The waiting task was cancelled; the message may still be delivered.
        case cancelled
        case messageTooLarge
        case unknownTopic
        case invalidConfiguration
        /// A broker or protocol error without a more specific meaning here.
        case broker(Int32, String)
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var isRetriable: Bool {
        switch code {
        case .deliveryTimedOut, .brokerUnavailable, .queueFull, .producerFailed, .shuttingDown, .cancelled: true
        case .messageTooLarge, .unknownTopic, .invalidConfiguration: false
        case .broker(let raw, _): KafkaError.retriableBrokerCodes.contains(raw)
        }
    }

    package var description: String { message }

    package var system: String { "the event broker" }

    private static let retriableBrokerCodes: Set<Int32> = [
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION.rawValue,
        RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE.rawValue,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT.rawValue,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS.rawValue,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND.rawValue,
        RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS.rawValue,
        RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE.rawValue,
        RD_KAFKA_RESP_ERR_NOT_COORDINATOR.rawValue,
        RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue,
        RD_KAFKA_RESP_ERR__WAIT_COORD.rawValue
    ]

    /// Maps a librdkafka result code. `producerFatal` says the handle that
    /// reported it has entered the fatal state, whatever the code.
    package init(_ raw: rd_kafka_resp_err_t, context: String, producerFatal: Bool = false) {
        let text = String(cString: rd_kafka_err2str(raw))
        let name = String(cString: rd_kafka_err2name(raw))
        let code: Code
        switch raw {
        case _ where producerFatal, RD_KAFKA_RESP_ERR__FATAL,
            // The idempotent producer's sequence errors precede its fatal state.
            RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, RD_KAFKA_RESP_ERR_DUPLICATE_SEQUENCE_NUMBER,
            RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH, RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID,
            RD_KAFKA_RESP_ERR__INCONSISTENT, RD_KAFKA_RESP_ERR__GAPLESS_GUARANTEE:
            code = .producerFailed
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE:
            code = .deliveryTimedOut
        case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
            code = .brokerUnavailable
        case RD_KAFKA_RESP_ERR__QUEUE_FULL:
            code = .queueFull
        case RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT, RD_KAFKA_RESP_ERR__DESTROY:
            code = .shuttingDown
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
            code = .messageTooLarge
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
            code = .unknownTopic
        default:
            code = .broker(raw.rawValue, name)
        }
        self.init(code, "\(context): \(text) (\(name))")
    }
}
