import Common
import Guidance
import HTTP
import Kafka

/// Records every read of student data by a teacher (`AccessRecord`) on the
/// access topic, for the notifier to store. The request does not wait: the
/// record goes to the producer's queue (microseconds) and the broker's
/// acknowledgement comes on the producer's thread; a record the broker
/// refuses after the producer's retries is logged and counted
/// (`access_records_lost_total`), never silently dropped.
public struct AccessLog: Sendable {
    let producer: Producer
    let topic: String
    let metrics: Metrics
    let logger: Logger

    public init(producer: Producer, topic: String, metrics: Metrics, logger: Logger) {
        self.producer = producer
        self.topic = topic
        self.metrics = metrics
        self.logger = logger
    }

    /// Records `action` on `target` by the caller; nothing when no teacher
    /// is signed in (authentication off).
    public func record(_ caller: Caller, _ action: AccessRecord.Action, school: String, target: String) {
        guard let teacher = caller.teacher else { return }
        let record = AccessRecord(
            accessId: RandomID.uuid(), at: Timestamp.format(Timestamp.now()), schoolId: school, teacherId: teacher.id,
            action: action, target: target, client: caller.client)
        let (metrics, logger) = (self.metrics, self.logger)
        producer.send(OutgoingMessage(topic: topic, key: Array(school.utf8), value: record.json)) { result in
            guard case .failure(let error) = result else { return }
            metrics.increment("access_records_lost_total", help: "Access records the broker did not acknowledge")
            logger.error("an access record was not stored", ["action": action.rawValue, "teacher": teacher.id, "error": error.message])
        }
    }
}
