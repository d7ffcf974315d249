import CRdKafka
import Common
import Kafka

extension MockCluster {
    /// The mock cluster's known issue (docs/deployment.md, "Known issue"): about one
    /// consumer-group member in fifteen never gets its partitions
    /// (librdkafka 2.0.2), while a new member of the same group joins in
    /// seconds. Starts the member `make` makes and, when it holds no
    /// partitions within `limit`, stops it and starts another, at most
    /// `attempts` members in all. What runs services on the mock
    /// (`guidance-dev`, the bench, the test harness) starts its notifiers
    /// through this; the services themselves only report a slow join, as
    /// they must on a real broker.
    package static func joining<Member: GroupMember>(
        attempts: Int = 3, within limit: Duration = .seconds(20), logger: Logger, _ make: () throws -> Member
    ) async throws -> Member {
        for attempt in 1...attempts {
            let member = try make()
            try await member.start()
            if await member.consumes(within: limit) { return member }
            await member.shutdown()
            logger.warning(
                "the mock cluster left a new group member without partitions (librdkafka 2.0.2, docs/deployment.md \"Known issue\"); starting another",
                ["attempt": "\(attempt) of \(attempts)", "after": "\(limit)"])
        }
        throw KafkaError(
            .broker(RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue, "timed out"),
            "no member got partitions from the mock cluster in \(attempts) attempts")
    }
}
