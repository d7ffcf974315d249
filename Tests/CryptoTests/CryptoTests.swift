import Crypto
import Foundation
import XCTest

final class CryptoTests: XCTestCase {
    func testSHA256KnownVectors() {
        XCTAssertEqual(SHA256.hex(SHA256.hash([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(SHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        XCTAssertEqual(SHA256.hex(SHA256.hash(long)), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(SHA256.digest(fromHex: SHA256.hex(SHA256.hash(long))), SHA256.hash(long))
        XCTAssertEqual(SHA256.digest(fromHex: String(repeating: "A", count: 64)), [UInt8](repeating: 0xaa, count: 32))
        XCTAssertNil(SHA256.digest(fromHex: String(repeating: "g", count: 64)))
    }

    /// RFC 4231 test cases 1 and 2.
    func testHMACSHA256KnownVectors() {
        XCTAssertEqual(
            SHA256.hex(HMAC.sha256(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        XCTAssertEqual(
            SHA256.hex(HMAC.sha256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    func testConstantTimeEqualComparesWholeDigests() {
        let a = SHA256.hash(Array("a".utf8))
        var b = a
        XCTAssertTrue(SHA256.constantTimeEqual(a, b))
        b[31] ^= 1
        XCTAssertFalse(SHA256.constantTimeEqual(a, b))
        XCTAssertFalse(SHA256.constantTimeEqual(a, Array(a.prefix(16))))
    }
}

final class P256Tests: XCTestCase {
    private func bytes(_ base64url: String) -> [UInt8] {
        var text = base64url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Array(Data(base64Encoded: text) ?? Data())
    }

    /// RFC 8291 Appendix A: the application server's key pair and the
    /// secret it shares with the user agent.
    func testTheRFC8291ExampleKeysGiveItsPublicKeyAndSharedSecret() throws {
        let server = try XCTUnwrap(P256Key(privateKey: bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")))
        XCTAssertEqual(
            server.publicKey, bytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"))
        let agent = try XCTUnwrap(
            P256Key(publicKey: bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")))
        XCTAssertEqual(server.sharedSecret(with: agent), bytes("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"))
        XCTAssertNil(agent.sharedSecret(with: server), "a public key alone derives nothing")
    }

    func testAPointOffTheCurveAndAScalarOutOfRangeAreRefused() {
        var point = bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
        point[64] ^= 1
        XCTAssertNil(P256Key(publicKey: point))
        XCTAssertNil(P256Key(publicKey: Array(point.prefix(33))), "compressed points are not what browsers send")
        XCTAssertNil(P256Key(privateKey: [UInt8](repeating: 0, count: 32)))
        XCTAssertNil(P256Key(privateKey: [UInt8](repeating: 0xFF, count: 32)), "above the curve's order")
    }

    func testSignaturesAreSixtyFourBytesAndDifferEachTime() throws {
        let key = P256Key.generate()
        let first = try XCTUnwrap(key.signature(of: Array("message".utf8)))
        let second = try XCTUnwrap(key.signature(of: Array("message".utf8)))
        XCTAssertEqual(first.count, 64)
        XCTAssertNotEqual(first, second, "ECDSA draws a fresh nonce")
        XCTAssertNil(P256Key(publicKey: key.publicKey)?.signature(of: [1]))
    }
}
