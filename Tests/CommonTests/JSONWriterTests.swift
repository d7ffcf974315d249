import Common
import Foundation
import XCTest

/// What the writer writes reads back, through Foundation, as the strings it
/// was given: escapes where RFC 8259 requires them, every other byte as is.
final class JSONWriterTests: XCTestCase {
    func testStringsReadBackAsWritten() throws {
        let values = [
            "", "plain", "체육복 / 운동화 🎒", "\"quoted\"", #"back\slash"#, "tab\there\nline\r",
            "\u{0}\u{1}\u{1F}\u{7F}", "ends with a quote\"", "\\", "é\u{8}é"
        ]
        for value in values {
            var writer = JSONWriter()
            writer.field("value", value)
            writer.field(named: value, 1)
            let bytes = writer.finish()
            let read = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], value)
            XCTAssertEqual(read["value"] as? String, value)
            XCTAssertEqual(read[value] as? Int, 1, "a key is escaped as a value is")
        }
    }

    func testIntegersAreWrittenAsTheirDecimalText() {
        let values: [Int64] = [0, 7, -7, 10, 99, 100, -100, 1_234_567_890, .max, .min, .max - 1, .min + 1]
        for value in values {
            var writer = JSONWriter()
            writer.field("n", value)
            writer.field("u", UInt64(value.magnitude))
            XCTAssertEqual(String(decoding: writer.finish(), as: UTF8.self), "{\"n\":\(value),\"u\":\(value.magnitude)}")
        }
        var writer = JSONWriter()
        writer.field("big", UInt64.max)
        writer.field("small", Int8.min)
        XCTAssertEqual(String(decoding: writer.finish(), as: UTF8.self), #"{"big":18446744073709551615,"small":-128}"#)
    }

    func testEscapesOnlyWhatItMust() {
        var writer = JSONWriter()
        writer.field("a", "x\"y\\z\n\u{1}/é")
        XCTAssertEqual(String(decoding: writer.finish(), as: UTF8.self), #"{"a":"x\"y\\z\n\u0001/é"}"#)
    }
}
