import CRdKafka
import Common
import Synchronization

/// What librdkafka's callbacks need from Swift, handed to them as the
/// configuration opaque. Each client wrapper owns one and destroys its
/// `rd_kafka_t` before releasing it, so the context outlives every callback.
package final class ClientContext: Sendable {
    let logger: Logger
    let rebalance: (@Sendable (OpaquePointer, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> Void)?
    /// Set by the error callback when the idempotent producer became fatal.
    let fatal = Atomic<Bool>(false)

    package init(
        logger: Logger,
        rebalance: (@Sendable (OpaquePointer, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> Void)? = nil
    ) {
        self.logger = logger
        self.rebalance = rebalance
    }

    /// Installs the logging and error callbacks and the opaque on `conf`.
    package func install(on conf: OpaquePointer) {
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(self).toOpaque())
        rd_kafka_conf_set_log_cb(conf, kafkaLogCallback)
        rd_kafka_conf_set_error_cb(conf, kafkaErrorCallback)
    }

    static func from(_ opaque: UnsafeMutableRawPointer?) -> ClientContext? {
        opaque.map { Unmanaged<ClientContext>.fromOpaque($0).takeUnretainedValue() }
    }
}

// Called on librdkafka's internal threads; only hands the line to the logger.
fileprivate func kafkaLogCallback(
    _ handle: OpaquePointer?, _ level: Int32, _ facility: UnsafePointer<CChar>?, _ text: UnsafePointer<CChar>?
) {
    guard let handle, let context = ClientContext.from(rd_kafka_opaque(handle)) else { return }
    let logLevel: Logger.Level = level <= 3 ? .error : level == 4 ? .warning : .debug
    guard context.logger.isEnabled(logLevel) else { return }
    context.logger.log(
        logLevel, text.map { String(cString: $0) } ?? "",
        ["facility": facility.map { String(cString: $0) } ?? "", "client": String(cString: rd_kafka_name(handle))])
}

// Called from rd_kafka_poll on the client's own polling thread.
fileprivate func kafkaErrorCallback(
    _ handle: OpaquePointer?, _ code: Int32, _ reason: UnsafePointer<CChar>?, _ opaque: UnsafeMutableRawPointer?
) {
    guard let context = ClientContext.from(opaque) else { return }
    let error = rd_kafka_resp_err_t(code)
    let text = reason.map { String(cString: $0) } ?? ""
    if error == RD_KAFKA_RESP_ERR__FATAL {
        context.fatal.store(true, ordering: .releasing)
        context.logger.error("Kafka client entered a fatal state; it will be replaced", ["reason": text])
    } else if error == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || error == RD_KAFKA_RESP_ERR__TRANSPORT {
        context.logger.warning("Kafka broker connection problem", ["reason": text])
    } else {
        context.logger.warning("Kafka client error", ["reason": text, "code": String(cString: rd_kafka_err2name(error))])
    }
}
