/// Replaces a consumer that has not joined its group, on librdkafka's mock
/// cluster only. There, about one notifier start in fifteen never received
/// its assignment (librdkafka 2.0.2; README "Known issue") while a new client
/// joined in seconds. On a real broker a member may legitimately wait longer
/// than any fixed limit: a rebalance waits for the slowest member to rejoin,
/// up to `max.poll.interval.ms`, and with static membership the member id
/// arrives only when the join completes. Replacing the waiting member there
/// would restart the rebalance it is waiting for, so on any other cluster
/// the watchdog only reports the wait.
///
/// The mock is known by its cluster id: `rd_kafka_mock_cluster_new` names it
/// `mockCluster<hex>`, where a Kafka cluster's id is a base64 UUID
/// (`ConsumerTests` reads it from the mock).
struct JoinWatchdog {
    static let defaultLimit: Duration = .seconds(20)

    /// What to do about a consumer that has not joined.
    enum Verdict: Equatable {
        case wait
        /// Mock cluster: replace the consumer.
        case replace
        /// Real cluster: say the join is slow, and keep waiting.
        case report
    }

    let limit: Duration
    private var waitingSince: ContinuousClock.Instant?

    init(limit: Duration) {
        self.limit = limit
    }

    static func isMockCluster(_ clusterID: String?) -> Bool {
        clusterID?.hasPrefix("mockCluster") ?? false
    }

    /// After `limit` without a member id, and then at most once per `limit`,
    /// `replace` on the mock cluster and `report` on any other (or while its
    /// id is unknown). A replica that joined but holds no partitions (more
    /// replicas than partitions) has a member id and is left alone.
    mutating func check(joined: Bool, now: ContinuousClock.Instant, clusterID: () -> String?) -> Verdict {
        if joined {
            waitingSince = nil
            return .wait
        }
        guard let since = waitingSince else {
            waitingSince = now
            return .wait
        }
        guard now - since >= limit else { return .wait }
        waitingSince = now
        return JoinWatchdog.isMockCluster(clusterID()) ? .replace : .report
    }
}
