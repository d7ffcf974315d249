/// Writes one JSON object field by field. For the two bodies every POST
/// makes (the event and the 202), where `JSONEncoder` took 10% of the
/// ingest's CPU under load; everything else uses `Codable`. Keys are written as
/// given, string values escaped per RFC 8259.
package struct JSONWriter {
    private var bytes: [UInt8] = []
    private var needsComma = false

    package init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    package mutating func field(_ key: StaticString, _ value: String) {
        self.key(key)
        string(value)
    }

    /// An array of strings.
    package mutating func field(_ key: StaticString, _ values: [String]) {
        self.key(key)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// `null` when absent.
    package mutating func field(_ key: StaticString, _ value: String?) {
        if let value {
            field(key, value)
        } else {
            self.key(key)
            bytes.append(contentsOf: "null".utf8)
        }
    }

    package mutating func field(_ key: StaticString, _ value: Bool) {
        self.key(key)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    package mutating func field(_ key: StaticString, _ value: some BinaryInteger) {
        self.key(key)
        JSONWriter.append(integer: value, to: &bytes)
    }

    /// A field whose key is only known at run time (a map's keys).
    package mutating func field(named key: String, _ value: some BinaryInteger) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
        JSONWriter.append(quoted: key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        JSONWriter.append(integer: value, to: &bytes)
    }

    /// A text field whose key is only known at run time (a map's keys).
    package mutating func field(named key: String, _ value: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
        JSONWriter.append(quoted: key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        JSONWriter.append(quoted: value, to: &bytes)
    }

    /// Decimal digits written in place: `String(value)` went through the
    /// generic description of an integer, for each number of each event.
    static func append(integer value: some BinaryInteger, to bytes: inout [UInt8]) {
        guard let value = Int64(exactly: value) else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var count = 0
            repeat {
                digits[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(digits[index]) }
        }
    }

    package mutating func object(_ key: StaticString, _ fields: (inout JSONWriter) -> Void) {
        self.key(key)
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        fields(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// The object's text. Mutating, not consuming: consuming a writer held
    /// in a `var` left the caller's reference alive, so the closing brace's
    /// append copied the whole buffer (a 40,000-guidance list: 30 MB twice).
    package mutating func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// An array of objects, each written by `write`.
    package static func array<Item>(_ items: [Item], _ write: (inout JSONWriter, Item) -> Void) -> [UInt8] {
        // One buffer for the whole array, each object written into it.
        var writer = JSONWriter()
        writer.bytes.removeAll(keepingCapacity: true)
        writer.elements(items, write)
        return writer.bytes
    }

    /// A field holding an array of objects, each written by `write` into
    /// this writer's buffer: a list of thousands is one buffer, not a tree
    /// of values and then its text.
    package mutating func array<Item>(_ key: StaticString, _ items: [Item], _ write: (inout JSONWriter, Item) -> Void) {
        self.key(key)
        elements(items, write)
        needsComma = true
    }

    /// Room for the whole array is made once the first object is written,
    /// at a quarter more than it took each: grown by doubling, a busy
    /// school's list (40,000 objects of about 500 bytes) held its old and
    /// new buffers at once, 15 and 30 MB.
    private mutating func elements<Item>(_ items: [Item], _ write: (inout JSONWriter, Item) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for (index, item) in items.enumerated() {
            let start = bytes.count
            element(first: index == 0) { write(&$0, item) }
            if index == 0 && items.count > 1 {
                bytes.reserveCapacity(bytes.count + (bytes.count - start) * (items.count - 1) * 5 / 4 + 256)
            }
        }
        bytes.append(UInt8(ascii: "]"))
    }

    // MARK: - Written as it is sent

    /// Opens an array field; its objects follow (`element`), then `closeArray`.
    package mutating func openArray(_ key: StaticString) {
        self.key(key)
        bytes.append(UInt8(ascii: "["))
    }

    /// One object of the open array, written by `write`.
    package mutating func element(first: Bool, _ write: (inout JSONWriter) -> Void) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        write(&self)
        bytes.append(UInt8(ascii: "}"))
    }

    package mutating func closeArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// The text written since the last take, which leaves the writer empty:
    /// a piece of a body sent while it is written (`BodyStream`).
    package mutating func take() -> [UInt8] {
        defer { bytes.removeAll(keepingCapacity: true) }
        return bytes
    }

    private mutating func key(_ key: StaticString) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: "\":".utf8)
    }

    private mutating func string(_ value: String) {
        JSONWriter.append(quoted: value, to: &bytes)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `value` as a JSON string: quoted, with quotes, backslashes and
    /// control characters escaped. The log lines are written with it too.
    package static func append(quoted value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { text in
            // Runs of bytes that need no escape are copied whole.
            var plain = 0
            for index in text.indices {
                let byte = text[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[plain..<index]))
                plain = index + 1
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): bytes.append(contentsOf: "\\\\".utf8)
                case UInt8(ascii: "\n"): bytes.append(contentsOf: "\\n".utf8)
                case UInt8(ascii: "\r"): bytes.append(contentsOf: "\\r".utf8)
                case UInt8(ascii: "\t"): bytes.append(contentsOf: "\\t".utf8)
                default:
                    bytes.append(contentsOf: "\\u00".utf8)
                    bytes.append(hexDigits[Int(byte >> 4)])
                    bytes.append(hexDigits[Int(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[plain...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
