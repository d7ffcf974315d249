import Foundation

extension StringProtocol {
    /// Without leading and trailing white space (Unicode's White_Space: spaces,
    /// tabs, line breaks). Foundation's `trimmingCharacters(in:)` bridges to
    /// NSString on Linux, which took 3% of the ingest's CPU per request and 12%
    /// of reading a district's roster.
    package func trimmingWhitespace() -> String {
        // Most values start and end with a printable ASCII character: nothing
        // to trim, and no Unicode property to look up.
        let text = String(self)
        if let first = text.utf8.first, let last = text.utf8.last, first.isPrintableASCII, last.isPrintableASCII {
            return text
        }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}

extension String {
    /// Whether the string can name a file in a folder as it is: not empty,
    /// not hidden or `..`, no `/`, no control character (which would cut a
    /// C path short). Roster ids used in photo paths are checked with it.
    package var isPlainFileName: Bool {
        !isEmpty && !hasPrefix(".") && !unicodeScalars.contains { $0.value < 0x20 || $0 == "/" }
    }

    /// Whether any character is white space (Unicode's White_Space), looked
    /// up only for non-ASCII text.
    package var containsWhitespace: Bool {
        var ascii = true
        for byte in utf8 {
            if byte == 0x20 || (0x09...0x0D).contains(byte) { return true }
            if byte >= 0x80 { ascii = false }
        }
        return !ascii && unicodeScalars.contains { $0.properties.isWhitespace }
    }
}

extension UInt8 {
    /// `!` to `~`: never white space, never part of a longer character.
    fileprivate var isPrintableASCII: Bool { self > 0x20 && self < 0x7F }
}

extension String {
    /// The text of `bytes` if they are valid UTF-8, else nil. The standard
    /// `String(validating:as:)` runs generic, unspecialised, here: its
    /// metadata look-ups were a third of parsing an event. Decoding repairs
    /// ill-formed bytes into U+FFFD, so the bytes come back unchanged exactly
    /// when they were valid (compared as two buffers: through `utf8`'s
    /// iterator the comparison took more time than the decoding).
    package init?(validUTF8 bytes: UnsafeBufferPointer<UInt8>) {
        var text = String(decoding: bytes, as: UTF8.self)
        guard text.withUTF8({ $0.elementsEqual(bytes) }) else { return nil }
        self = text
    }
}

extension String {
    /// Percent-encoded as a URL path segment or query value: only RFC 3986's
    /// unreserved characters stay (`.alphanumerics` would keep 한글 as is).
    package var percentEncoded: String { String.percentEncoded(utf8) }

    /// Bytes as a URL carries them: RFC 3986's unreserved characters as
    /// they are, every other byte as `%XX` (bytes that are not UTF-8, a
    /// password's, included).
    package static func percentEncoded(_ bytes: some Sequence<UInt8>) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.append(byte)
            default:
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
