import Foundation
import Guidance
import XCTest

final class RandomIDTests: XCTestCase {
    func testIDsAreDistinctLowercaseVersion4UUIDs() throws {
        let ids = (0..<2000).map { _ in RandomID.uuid() }
        XCTAssertEqual(Set(ids).count, ids.count)
        for id in ids {
            let parsed = try XCTUnwrap(UUID(uuidString: id), id)
            XCTAssertEqual(parsed.uuidString.lowercased(), id)
            let characters = Array(id)
            XCTAssertEqual(characters[14], "4", id)
            XCTAssertTrue("89ab".contains(characters[19]), id)
        }
    }
}
