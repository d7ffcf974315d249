import Common
import Foundation
@testable import Ingest
import XCTest

/// Registrations are read by `JSONReader` when plain and by `JSONDecoder`
/// otherwise; whatever the fast path accepts must be exactly what
/// `JSONDecoder` reads, and the plain bodies the gate app sends must take it.
final class RegisterRequestDecodingTests: XCTestCase {
    private func fast(_ body: String) -> RegisterRequest? {
        JSONReader.object(Array(body.utf8)).flatMap(RegisterRequest.init(plain:))
    }

    private func codable(_ body: [UInt8]) -> RegisterRequest? {
        try? JSONDecoder().decode(RegisterRequest.self, from: Data(body))
    }

    func testPlainBodiesTakeTheFastPathAndReadAsJSONDecoderReadsThem() throws {
        let plain = [
            #"{"student":{"grade":1,"classNumber":3,"number":12},"reason":{"code":"noShoes"},"recordedBy":"t-gate-01"}"#,
            #"{"guidanceId":"8c4ab2f0-6b1e-4f7a-9d2c-3e5f7a9b1c2d","student":{"grade":2,"classNumber":10,"number":30},"reason":{"code":"others","detail":"교복 대신 체육복 / 운동화"},"recordedBy":"t-gate-01","occurredAt":"2026-11-30T07:52:10+09:00"}"#,
            " {\n \"student\" : { \"number\" : 0 , \"grade\" : 3 , \"classNumber\" : 9 } ,\r\n\t\"reason\" : { \"code\" : \"jaywalking\" , \"detail\" : null } , \"occurredAt\" : null }\n",
            #"{"reason":{"detail":"🎒","code":"others"},"student":{"classNumber":1,"number":999999999999999999,"grade":1}}"#,
        ]
        for body in plain {
            let read = try XCTUnwrap(fast(body), "the fast path refused a plain body: \(body)")
            XCTAssertEqual(read, codable(Array(body.utf8)), body)
        }
    }

    func testEverythingElseIsLeftToJSONDecoder() {
        let valid = #"{"student":{"grade":1,"classNumber":3,"number":12},"reason":{"code":"noShoes"}}"#
        let replacements: [(String, String)] = [
            ("noShoes", #"no\"Shoes"#), ("noShoes", #"no\u0053hoes"#),
            ("12", "12.0"), ("12", "1e1"), ("12", "-12"), ("12", "012"), ("12", "1234567890123456789012"),
            ("12", "\"12\""), ("12", "true"), ("12", "[12]"), ("12", "null"),
            (#""grade":1"#, #""grade":1,"grade":2"#), (#""grade":1"#, #""grade":1,"name":"Kim""#),
            (#""reason""#, #""colour":"red","reason""#),
            (#"{"code":"noShoes"}"#, #"{"code":"noShoes","detail":7}"#),
            (#""student":{"grade":1,"classNumber":3,"number":12},"#, ""),
        ]
        var others = replacements.map { valid.replacingOccurrences(of: $0.0, with: $0.1) }
        others += [
            valid + " x", valid + "}", "[" + valid + "]", "", "{", "{}", "null",
            String(valid.dropLast()),
            #"{"a":{"b":{"c":{"d":{"e":{}}}}}}"#,
        ]
        for body in others {
            let fastRead = fast(body)
            XCTAssertNil(fastRead, "the fast path took a body it should leave to JSONDecoder: \(body)")
        }
        // Invalid UTF-8 inside a string.
        var bytes = Array(valid.utf8)
        bytes.insert(0xFF, at: bytes.firstIndex(of: UInt8(ascii: "n"))!)
        XCTAssertNil(JSONReader.object(bytes).flatMap(RegisterRequest.init(plain:)))
        XCTAssertNil(codable(bytes))
    }
}
