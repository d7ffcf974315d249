import Crypto
import Foundation
import Synchronization

/// Random (version 4) UUIDs as lowercase text, for event and guidance ids,
/// and random bytes for tokens.
///
/// Foundation's `UUID()` opens and reads `/dev/urandom` on every call on
/// Linux (3.8 µs, 4% of the ingest's CPU under load); the standard library's
/// generator makes a `getrandom` call per 8 bytes; OpenSSL's draws in user
/// space once seeded.
package enum RandomID {
    /// `count` random bytes from OpenSSL's generator (`SecureRandom`).
    package static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes(SecureRandom.fill)
        return bytes
    }

    /// Bytes as unpadded base64url (RFC 4648 §5): safe in URLs, cookies and CSV.
    package static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of unpadded (or padded) base64url text; nil when it is not that.
    package static func unbase64url(_ text: some StringProtocol) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }

    /// A new version 4 UUID, written as text without an intermediate array.
    /// Its 16 random bytes come from a pool that one call to OpenSSL's
    /// generator fills for 256 ids: two `getrandom` calls per id were 2 µs
    /// of every registration, and a call to OpenSSL per id still made a
    /// `getpid` system call (its fork check). An id names an event; tokens
    /// and session keys take `bytes`, drawn for each. The services never
    /// fork (a forked child would repeat the parent's pool).
    package static func uuid() -> String {
        var random = pool.withLock { $0.take() }
        withUnsafeMutableBytes(of: &random) { bytes in
            bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
            bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        }
        return withUnsafeBytes(of: random) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = hexDigit(byte >> 4)
                    text[at + 1] = hexDigit(byte & 0xF)
                    at += 2
                }
                return at
            }
        }
    }

    private static let pool = Mutex(Pool())

    /// Random bytes handed out 16 at a time, refilled 4 KiB at once.
    private struct Pool: ~Copyable {
        private var bytes = [UInt8](repeating: 0, count: 4096)
        private var used = 4096

        mutating func take() -> (UInt64, UInt64) {
            if used == bytes.count {
                bytes.withUnsafeMutableBytes(SecureRandom.fill)
                used = 0
            }
            defer { used += 16 }
            return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: used, as: (UInt64, UInt64).self) }
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// Whether `text` is a UUID in its 8-4-4-4-12 hex form (any case); ids
    /// are kept lowercase.
    package static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (position, byte) in bytes.enumerated() {
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"):
                    continue
                default: return false
                }
            }
        }
        return true
    }
}
