/// Decides when a consumer that has not joined its group should be replaced:
/// after `limit` without a member id, and then at most once per `limit`. A
/// replica that joined but holds no partitions (more replicas than
/// partitions) has a member id and is left alone.
struct JoinWatchdog {
    static let defaultLimit: Duration = .seconds(20)

    let limit: Duration
    private var waitingSince: ContinuousClock.Instant?

    init(limit: Duration) {
        self.limit = limit
    }

    mutating func shouldRestart(joined: Bool, now: ContinuousClock.Instant) -> Bool {
        if joined {
            waitingSince = nil
            return false
        }
        guard let since = waitingSince else {
            waitingSince = now
            return false
        }
        guard now - since >= limit else { return false }
        waitingSince = now
        return true
    }
}
