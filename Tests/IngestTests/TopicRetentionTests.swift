import Common
import Guidance
import HTTP
import Kafka
import XCTest

@testable import Ingest

/// The topics the ingest creates are kept for a while, not for ever: events
/// `TOPIC_RETENTION_DAYS`, dead letters `DLQ_RETENTION_DAYS`. (The mock
/// cluster answers neither CreateTopics nor DescribeConfigs, so the request
/// is checked here and compose's topic job by scripts/check-deploy.)
final class TopicRetentionTests: XCTestCase {
    func testCreatedTopicsCarryTheirRetention() throws {
        let environment = Environment(["TOPIC_RETENTION_DAYS": "7", "DLQ_RETENTION_DAYS": "45", "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"])
        let config = try IngestConfig.fromEnvironment(environment)
        let specs = Dictionary(uniqueKeysWithValues: IngestService.topicSpecs(config).map { ($0.name, $0.configs["retention.ms"]) })
        XCTAssertEqual(
            specs,
            [
                "guidance.registered": "604800000", "guidance.deleted": "604800000", "guidance.service": "604800000",
                "guidance.cases": "604800000",
                "guidance.access": "604800000",
                "guidance.dlq": "3888000000"
            ])
        let defaults = try IngestConfig.fromEnvironment(Environment(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"]))
        XCTAssertEqual(
            IngestService.topicSpecs(defaults).first { $0.name == "guidance.registered" }?.configs["retention.ms"], String(14 * 86_400_000))
        XCTAssertEqual(defaults.retention.days, 365)
        XCTAssertThrowsError(try Retention.fromEnvironment(Environment(["RETENTION_DAYS": "0"])))
    }
}
