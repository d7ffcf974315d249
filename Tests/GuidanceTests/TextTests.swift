import Common
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
        // Every random digit varies: no byte left unfilled or repeated.
        for position in 0..<36 where ![8, 13, 14, 18, 23].contains(position) {
            let seen = Set(ids.map { Array($0)[position] })
            XCTAssertEqual(seen.count, position == 19 ? 4 : 16, "position \(position)")
        }
        XCTAssertEqual(Set((0..<100).map { _ in RandomID.bytes(16) }).count, 100)
    }
}

final class WhitespaceTests: XCTestCase {
    func testTrimsUnicodeWhiteSpaceAtBothEndsOnly() {
        XCTAssertEqual("  \t김 민지\r\n".trimmingWhitespace(), "김 민지")
        XCTAssertEqual("\u{3000}application/json\u{00A0}".trimmingWhitespace(), "application/json")
        XCTAssertEqual(" é ".trimmingWhitespace(), "é")
        XCTAssertEqual(" \n\t ".trimmingWhitespace(), "")
        XCTAssertEqual("".trimmingWhitespace(), "")
        XCTAssertEqual("a".trimmingWhitespace(), "a")
        XCTAssertEqual("Bearer abc"[...].dropFirst(6).trimmingWhitespace(), "abc")
        XCTAssertEqual("a b".trimmingWhitespace(), "a b", "inside stays")
        XCTAssertEqual("민지\u{3000}".trimmingWhitespace(), "민지", "non-ASCII ends take the Unicode path")
    }

    func testValidUTF8IsTakenAndEveryIllFormedSequenceRefused() {
        func text(_ bytes: [UInt8]) -> String? { bytes.withUnsafeBufferPointer(String.init(validUTF8:)) }
        XCTAssertEqual(text(Array("김민지 abc \u{FFFD}".utf8)), "김민지 abc \u{FFFD}", "a real U+FFFD is valid")
        XCTAssertEqual(text([]), "")
        for bad: [UInt8] in [
            [0xFF], [0xC3], [0xE2, 0x82], [0xF0, 0x90, 0x80], [0xF0, 0x90, 0x80, 0x41], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0x41, 0x80]
        ] {
            XCTAssertNil(text(bad), "\(bad)")
        }
    }

    func testFindsWhiteSpaceAnywhereASCIIOrNot() {
        XCTAssertFalse("s-1234_가".containsWhitespace)
        XCTAssertFalse("".containsWhitespace)
        XCTAssertTrue("a b".containsWhitespace)
        XCTAssertTrue("a\tb".containsWhitespace)
        XCTAssertTrue("김\u{3000}민지".containsWhitespace, "an ideographic space")
        XCTAssertTrue("a\u{00A0}".containsWhitespace, "a no-break space")
        XCTAssertFalse("é\u{200B}".containsWhitespace, "a zero-width space is not White_Space")
    }
}
