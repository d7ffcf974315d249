import Synchronization

/// Work a request starts and does not wait for (a sign-in link's e-mail goes
/// out after the answer, so that the answer says nothing by its timing):
/// each errand is a task counted here until it ends, and the service's
/// shutdown waits for those under way, within a bound, instead of ending the
/// process in the middle of an SMTP exchange. Once stopping began, no new
/// errand starts.
package final class Errands: Sendable {
    private let state = Mutex<(running: Int, open: Bool)>((0, true))
    private let ended = Doorbell()
    private let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    /// Errands under way.
    package var running: Int { state.withLock { $0.running } }

    /// Runs `work` as a task of its own; once the service is stopping, not
    /// at all (logged with `what`).
    package func run(_ what: String, _ work: @escaping @Sendable () async -> Void) {
        let admitted = state.withLock { state in
            guard state.open else { return false }
            state.running += 1
            return true
        }
        guard admitted else {
            logger.warning("not started: the service is stopping", ["errand": what])
            return
        }
        Task { [self] in
            await work()
            state.withLock { $0.running -= 1 }
            ended.ring()
        }
    }

    /// Returns once no errand is under way (true), or after `limit` (false).
    package func idle(within limit: Duration, clock: any Clock<Duration> = systemTimer) async -> Bool {
        await ended.wait(until: { running == 0 }, atMost: limit, clock: clock)
    }

    /// The part that ends them: no new errand starts, and those under way
    /// have `limit` on `clock` to end; any left are named by count.
    package func part(within limit: Duration, clock: any Clock<Duration>) -> Part {
        Part(
            "errands",
            waits: [Part.Waits("errands", waitsIn: "a task each, until its work ends", wokenBy: "a request (a sign-in link's e-mail)")],
            stop: { [self] in
                state.withLock { $0.open = false }
                if await !idle(within: limit, clock: clock) {
                    logger.warning("errands still under way at shutdown", ["count": String(running)])
                }
            })
    }
}
