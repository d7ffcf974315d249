import Common
import Synchronization
import XCTest

final class ForEachTransformedTests: XCTestCase {
    /// Every element is transformed once and handed over in order, for
    /// counts below, at and above the number of cores.
    func testHandsOverEveryElementOnceInOrder() {
        for count in [0, 1, 2, 3, 29, 1000] {
            let elements = (0..<count).map { "e\($0)" }
            let calls = Mutex(0)
            var handed: [String] = []
            elements.forEach(transformedBy: { element -> String in
                calls.withLock { $0 += 1 }
                return element.uppercased()
            }) { handed.append($0) }
            XCTAssertEqual(handed, elements.map { $0.uppercased() }, "count \(count)")
            XCTAssertEqual(calls.withLock { $0 }, count)
        }
    }

    /// When the consumer throws, it is not called again, the error reaches
    /// the caller, and the elements nobody had started are never transformed.
    func testAThrowingConsumerStopsTheRun() {
        struct Stop: Error {}
        let calls = Mutex(0)
        var handed: [Int] = []
        XCTAssertThrowsError(
            try (0..<200).map { $0 }.forEach(transformedBy: { number -> Int in
                calls.withLock { $0 += 1 }
                // Work that takes time, so that a helper that did not stop shows.
                usleep(1000)
                return number * 2
            }) { (doubled: Int) throws(Stop) in
                handed.append(doubled)
                if doubled == 20 { throw Stop() }
            }
        ) { XCTAssertTrue($0 is Stop) }
        XCTAssertEqual(handed, (0...10).map { $0 * 2 })
        // Returned once its helpers stopped (a helper that went on would
        // have transformed all 200 before it returned).
        XCTAssertLessThan(calls.withLock { $0 }, 200)
    }
}
