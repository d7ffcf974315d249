import Foundation

/// Random (version 4) UUIDs as lowercase text, for event and guidance ids.
///
/// Foundation's `UUID()` opens and reads `/dev/urandom` on every call on
/// Linux (3.8 µs, 4% of the ingest's CPU under load); the standard library's
/// generator asks the kernel with `getrandom` instead (0.7 µs).
package enum RandomID {
    /// `count` random bytes from the system's generator (`getrandom`).
    package static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
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

    package static func uuid() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = (generator.next() as UInt64) & ~0xF000 | 0x4000  // version 4
        let low = (generator.next() as UInt64) & ~(0b11 << 62) | (0b10 << 62)  // RFC 4122 variant
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, word) in [high, low].enumerated() {
            for nibble in (0..<16).reversed() {
                let position = index * 16 + (15 - nibble)
                if position == 8 || position == 12 || position == 16 || position == 20 { text.append(UInt8(ascii: "-")) }
                let value = UInt8(truncatingIfNeeded: word >> (UInt64(nibble) * 4)) & 0xF
                text.append(value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10)
            }
        }
        return String(decoding: text, as: UTF8.self)
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
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): continue
                default: return false
                }
            }
        }
        return true
    }
}
