/// Which routes are answering 503 now, so that an outage is logged as one
/// line when a route starts answering 503 and one when it answers again,
/// not a line per request: a readiness probe polled through start-up, or
/// every request during a store outage, would otherwise bury the log.
struct Unavailability: Sendable {
    /// Routes answering 503, with how many they answered so far.
    private var refused: [String: Int] = [:]

    enum Change: Equatable, Sendable {
        /// The route's first 503 after answering.
        case began
        /// The route answered again after `count` 503s.
        case ended(count: Int)
    }

    /// Notes `status` answered on `route`; what changed, if anything.
    mutating func answered(_ status: Int, on route: String) -> Change? {
        if status == 503 {
            guard let count = refused[route] else {
                refused[route] = 1
                return .began
            }
            refused[route] = count + 1
            return nil
        }
        guard let count = refused.removeValue(forKey: route) else { return nil }
        return .ended(count: count)
    }
}
