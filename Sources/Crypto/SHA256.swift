import CCrypto

/// SHA-256 from OpenSSL's libcrypto (loaded anyway through librdkafka and
/// libpq), for hashing bearer tokens.
package enum SHA256 {
    package static func hash(_ message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes(hash)
    }

    /// The digest of `text`'s UTF-8, read in place.
    package static func hash(utf8 text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    /// The digest of `text`'s UTF-8, lent to `body` from the stack: a
    /// bearer token's, on every request, without an array for it.
    package static func withDigest<Result>(utf8 text: String, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { digest in
            var text = text
            text.withUTF8 { write(UnsafeRawBufferPointer($0), into: digest) }
            return body(UnsafeRawBufferPointer(digest))
        }
    }

    private static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { digest, count in
            write(bytes, into: UnsafeMutableRawBufferPointer(digest))
            count = 32
        }
    }

    private static func write(_ bytes: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer) {
        var length: UInt32 = 0
        let ok = EVP_Digest(bytes.baseAddress, bytes.count, digest.baseAddress, &length, algorithm.pointer, nil)
        // EVP_Digest fails only when allocation fails.
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
    }

    /// SHA-256 fetched from OpenSSL's provider once: `EVP_sha256()` makes
    /// OpenSSL 3 look the implementation up (a lock and a table) on every
    /// digest, and every request with a bearer token takes one.
    private static let algorithm = Algorithm(pointer: EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256())

    /// Unchecked: a fetched `EVP_MD` is immutable and OpenSSL shares it
    /// between threads; it lives as long as the process.
    private struct Algorithm: @unchecked Sendable {
        let pointer: OpaquePointer?
    }

    package static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// A digest from 64 hexadecimal digits; nil for anything else.
    package static func digest(fromHex text: String) -> [UInt8]? {
        let digits = Array(text.lowercased().utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// Equal-length digests compared in constant time (`CRYPTO_memcmp`).
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        b.withUnsafeBytes { constantTimeEqual(a, $0) }
    }

    package static func constantTimeEqual(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { left in CRYPTO_memcmp(left.baseAddress, b.baseAddress, a.count) == 0 }
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
