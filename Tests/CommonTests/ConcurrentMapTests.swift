import Common
import Synchronization
import XCTest

final class ConcurrentMapTests: XCTestCase {
    /// Every element is transformed once, and the results keep their order,
    /// for counts below, at and above the number of cores.
    func testMapsEveryElementOnceInOrder() {
        for count in [0, 1, 2, 3, 29, 1000] {
            let elements = (0..<count).map { "e\($0)" }
            let calls = Mutex(0)
            let mapped = elements.concurrentMap { element -> String in
                calls.withLock { $0 += 1 }
                return element.uppercased()
            }
            XCTAssertEqual(mapped, elements.map { $0.uppercased() }, "count \(count)")
            XCTAssertEqual(calls.withLock { $0 }, count)
        }
    }
}
