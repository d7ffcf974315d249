import Common
import Synchronization
import TestSupport
import XCTest

/// A request's errand (a sign-in link's e-mail) outlives the answer, not the
/// service: shutdown waits for it, within a bound, and starts no new one.
final class ErrandsTests: XCTestCase {
    let logger = Logger(component: "test", level: .error)

    func testShutdownWaitsForAnErrandUnderWayAndStartsNoNewOne() async throws {
        let errands = Errands(logger: logger)
        let clock = ManualClock()
        let (release, releasing) = AsyncStream<Void>.makeStream()
        let events = Mutex<[String]>([])
        errands.run("slow") {
            for await _ in release { break }
            events.withLock { $0.append("errand ended") }
        }
        let parts = Parts([[errands.part(within: .seconds(10), clock: clock)]], logger: logger)
        try await parts.start()
        let stopping = Task {
            await parts.stop()
            events.withLock { $0.append("stopped") }
        }
        await clock.sleeps(atLeast: 1)  // stop is waiting for the errand
        errands.run("late") { events.withLock { $0.append("late errand ran") } }
        XCTAssertEqual(errands.running, 1, "an errand started while the service stops")
        releasing.yield()
        await stopping.value
        XCTAssertEqual(events.withLock { $0 }, ["errand ended", "stopped"])
    }

    func testShutdownGivesUpOnAnErrandAfterItsLimit() async throws {
        let errands = Errands(logger: logger)
        let clock = ManualClock()
        let (release, releasing) = AsyncStream<Void>.makeStream()
        errands.run("hung") { for await _ in release { break } }
        let parts = Parts([[errands.part(within: .seconds(10), clock: clock)]], logger: logger)
        try await parts.start()
        let stopping = Task { await parts.stop() }
        await clock.sleeps(atLeast: 1)
        clock.advance(by: .seconds(10))
        await stopping.value
        XCTAssertEqual(errands.running, 1, "stop returned at its limit, the errand still under way")
        releasing.finish()
    }
}
