import Common
import Foundation
import XCTest

/// The reader accepts exactly RFC 8259 JSON, reads it as Foundation does,
/// and refuses what lenient parsers let through, naming the field.
final class JSONReaderTests: XCTestCase {
    func testValidDocumentsReadAsFoundationReadsThem() throws {
        let documents = [
            #"{"a":1,"b":"x","c":null,"d":true,"e":false,"f":[1,2,{"g":"h"}],"i":{"j":-0}}"#,
            " {\n \"student\" : { \"number\" : 0 , \"grade\" : 3 } ,\r\n\t\"reason\" : { \"code\" : \"x\" , \"detail\" : null } }\n",
            #"{"escapes":"\"\\\/\b\f\n\r\t\u0041\u00e9\uD83C\uDF92","korean":"체육복 / 운동화 🎒"}"#,
            #"{"n":[0,-1,12.5,1e3,1E-2,-0.5e+7,9223372036854775807,-9223372036854775808,9223372036854775808]}"#,
            "{}", #"{"a":[]}"#
        ]
        for document in documents {
            let read = try JSONReader.object(Array(document.utf8))
            let foundation = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(document.utf8)) as? NSDictionary)
            XCTAssertEqual(plain(.object(read)) as? NSDictionary, foundation, document)
        }
    }

    func testIntegersThatFitAreIntegersAndTheRestKeepTheirText() throws {
        let read = try JSONReader.object(Array(#"{"a":9223372036854775807,"b":9223372036854775808,"c":1.0,"d":-12}"#.utf8))
        XCTAssertEqual(read["a"], .integer(Int.max))
        XCTAssertEqual(read["b"], .number("9223372036854775808"))
        XCTAssertEqual(read["c"], .number("1.0"))
        XCTAssertEqual(read["d"], .integer(-12))
    }

    func testWhatLenientParsersAcceptIsRefusedNamingTheField() {
        let cases: [(String, String, String)] = [
            (#"{"a":1,}"#, "", "trailing comma"),
            (#"{"a":{"b":[1,2,]}}"#, "a.b", "trailing comma"),
            (#"{"a":1,"a":2}"#, "a", "appears more than once"),
            (#"{"s":{"g":1,"g":1}}"#, "s.g", "appears more than once"),
            (#"{"a":01}"#, "a", "leading zero"),
            (#"{"a":[1,{"b":01}]}"#, "a[1].b", "leading zero"),
            (#"{"a":[1,[2,3,]]}"#, "a[1]", "trailing comma"),
            (#"{"a":1.}"#, "a", "fraction"),
            (#"{"a":.5}"#, "a", "where a value was expected"),
            (#"{"a":+1}"#, "a", "where a value was expected"),
            (#"{"a":NaN}"#, "a", "where a value was expected"),
            (#"{"a":'x'}"#, "a", "where a value was expected"),
            ("{\"a\":\"tab\there\"}", "a", "control character"),
            (#"{"a":"\x"}"#, "a", "after '\\'"),
            (#"{"a":"\uD800"}"#, "a", "unpaired surrogate"),
            (#"{"a":"\uDC00x"}"#, "a", "unpaired surrogate"),
            (#"{"a":1} x"#, "", "after the document"),
            (#"{"a":1"#, "", "unexpected end"),
            ("", "", "unexpected end"),
            (#"[1]"#, "", "must be a JSON object"),
            (
                String(repeating: #"{"a":"#, count: 40) + "1" + String(repeating: "}", count: 40),
                "a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a", "nested too deeply"
            )
        ]
        for (document, field, message) in cases {
            XCTAssertThrowsError(try JSONReader.object(Array(document.utf8)), document) { error in
                let error = error as! FieldError
                XCTAssertEqual(error.field, field, document)
                XCTAssertTrue(error.message.contains(message), "\(document): \(error.message)")
            }
        }
        // Invalid UTF-8 inside a string.
        var bytes = Array(#"{"a":"xy"}"#.utf8)
        bytes.insert(0xFF, at: 7)
        XCTAssertThrowsError(try JSONReader.object(bytes)) { XCTAssertEqual(($0 as! FieldError).field, "a") }
        // A truncated 4-byte sequence: repaired into U+FFFD, it keeps its length.
        bytes = Array(#"{"a":"xy"}"#.utf8)
        bytes.insert(contentsOf: [0xF0, 0x9F, 0x8E], at: 7)
        XCTAssertThrowsError(try JSONReader.object(bytes)) { XCTAssertEqual(($0 as! FieldError).field, "a") }
    }

    func testTypedFieldsNameWhatIsWrong() throws {
        let fields = JSONFields(try JSONReader.object(Array(#"{"s":{"n":1.5,"m":1e2,"k":"7","big":99999999999999999999,"z":null}}"#.utf8)))
        let s = try fields.object("s")
        func message(_ body: () throws -> Void) -> String {
            do {
                try body()
                return ""
            } catch { return "\(error)" }
        }
        XCTAssertEqual(message { _ = try s.integer("n") }, "s.n must be a whole number, not 1.5")
        XCTAssertEqual(message { _ = try s.integer("m", in: 1...10) }, "s.m must be a whole number from 1 to 10")
        XCTAssertEqual(message { _ = try s.integer("k") }, "s.k must be a whole number, not a string")
        XCTAssertEqual(message { _ = try s.integer("big") }, "s.big must be a 64-bit whole number")
        XCTAssertEqual(message { _ = try s.string("z") }, "s.z must not be null")
        XCTAssertEqual(message { _ = try s.string("absent") }, "s.absent is required")
        XCTAssertNil(try s.optionalString("z"))
        XCTAssertEqual(message { _ = try fields.object("s").object("n") }, "s.n must be an object, not a number")
    }

    /// The value as Foundation objects, to compare with JSONSerialization.
    private func plain(_ value: JSONValue) -> Any {
        switch value {
        case .string(let text): text
        case .integer(let number): NSNumber(value: number)
        case .number(let text): NSNumber(value: Double(text)!)
        case .bool(let flag): NSNumber(value: flag)
        case .null: NSNull()
        case .array(let values): values.map(plain) as NSArray
        case .object(let object):
            NSDictionary(dictionary: Dictionary(uniqueKeysWithValues: object.fields.map { ($0.key, plain($0.value)) }))
        }
    }
}
