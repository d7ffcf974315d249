/// How long the consumer has waited to become a member of its group, for a
/// warning while it waits: a rebalance waits for the slowest member to
/// rejoin (up to `max.poll.interval.ms`), and with static membership the
/// member id comes only when the join completes, so the wait is reported,
/// never cut short (a new member would restart the rebalance it waits for).
///
/// On librdkafka's mock cluster about one start in fifteen never joins
/// (docs/deployment.md, "Known issue"); what runs services on it (`guidance-dev`, the
/// test harness, `scripts/processes.py`) restarts such a replica itself.
struct SlowJoin {
    static let limit: Duration = .seconds(20)

    private var waitingSince: Duration?

    /// True after `limit` without a member id, and then once per `limit`. A
    /// replica that joined but holds no partitions (more replicas than
    /// partitions) has a member id: it is not waiting.
    mutating func isSlow(joined: Bool, now: Duration) -> Bool {
        guard !joined else {
            waitingSince = nil
            return false
        }
        guard let since = waitingSince else {
            waitingSince = now
            return false
        }
        guard now - since >= SlowJoin.limit else { return false }
        waitingSince = now
        return true
    }
}
