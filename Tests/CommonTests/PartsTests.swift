import Common
import Synchronization
import XCTest

/// The order a service's parts start and stop in, with parts that only
/// write down what happened to them: no sockets, no threads of their own.
final class PartsTests: XCTestCase {
    struct Refused: Error {}

    /// What happened, in order.
    final class Journal: Sendable {
        private let lines = Mutex<[String]>([])
        private let written = Doorbell()
        func write(_ line: String) {
            lines.withLock { $0.append(line) }
            written.ring()
        }
        var read: [String] { lines.withLock { $0 } }

        /// A part whose stop ends only once `waitsFor` were written (10 s at
        /// most): stops of one stage must run side by side to end at once.
        func part(_ name: String, waitsFor: [String] = [], failing: Bool = false) -> Part {
            Part(
                name,
                start: {
                    if failing { throw Refused() }
                    self.write("start \(name)")
                },
                stop: {
                    self.write("stopping \(name)")
                    _ = await self.written.wait(until: { Set(self.read).isSuperset(of: waitsFor) }, atMost: .seconds(10))
                    self.write("stopped \(name)")
                })
        }
    }

    func testPartsStartInTheirOrderAndStopInReverseAStageAtOnce() async throws {
        let journal = Journal()
        let parts = Parts(
            [
                [journal.part("producer")],
                [journal.part("log")],
                [
                    journal.part("consumer", waitsFor: ["stopping consumer", "stopping http"]),
                    journal.part("http", waitsFor: ["stopping consumer", "stopping http"])
                ]
            ], logger: Logger(component: "test", level: .error))
        try await parts.start()
        XCTAssertEqual(journal.read, ["start producer", "start log", "start consumer", "start http"])

        await parts.stop()
        let stops = Array(journal.read.dropFirst(4))
        // consumer and http stop together: both begin before either ends.
        XCTAssertEqual(Set(stops.prefix(2)), ["stopping consumer", "stopping http"], "\(stops)")
        XCTAssertEqual(Set(stops[2..<4]), ["stopped consumer", "stopped http"], "\(stops)")
        XCTAssertEqual(Array(stops.suffix(4)), ["stopping log", "stopped log", "stopping producer", "stopped producer"])

        await parts.stop()
        XCTAssertEqual(journal.read.count, 12, "a second stop stopped something again")
    }

    func testAPartThatCannotStartStopsWhatStartedAndNothingAfterIt() async throws {
        let journal = Journal()
        let parts = Parts(
            [
                [journal.part("producer")],
                [journal.part("consumer"), journal.part("http", failing: true), journal.part("dispatcher")]
            ], logger: Logger(component: "test", level: .error))
        do {
            try await parts.start()
            XCTFail("started although http could not")
        } catch is Refused {}
        XCTAssertEqual(
            journal.read,
            ["start producer", "start consumer", "stopping consumer", "stopped consumer", "stopping producer", "stopped producer"])
        await parts.stop()
        XCTAssertEqual(journal.read.count, 6, "stopped twice")
    }

    func testStoppingBeforeStartingStopsNothing() async {
        let journal = Journal()
        let parts = Parts([[journal.part("producer")]], logger: Logger(component: "test", level: .error))
        await parts.stop()
        XCTAssertEqual(journal.read, [])
    }
}
