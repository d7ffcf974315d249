/// A JSON value of the plain kind `JSONReader` reads.
public enum JSONValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case null
    case object(JSONObject)
}

/// An object's fields in document order, found by a linear scan: for the
/// handful of fields of these bodies, cheaper than building a dictionary.
public struct JSONObject: Equatable, Sendable {
    public struct Field: Equatable, Sendable {
        public let key: String
        public let value: JSONValue
    }

    public fileprivate(set) var fields: [Field] = []

    public subscript(key: String) -> JSONValue? {
        fields.first { $0.key == key }?.value
    }

    public var keys: [String] { fields.map(\.key) }
    public var count: Int { fields.count }

    /// An optional string field as `Codable` reads it: `.some(nil)` when
    /// absent or null, `.some(text)` for a string, nil for another type.
    public func optionalString(_ key: String) -> String?? {
        switch self[key] {
        case nil, .null?: return .some(nil)
        case .string(let text)?: return .some(text)
        default: return nil
        }
    }
}

/// Reads the small, plain JSON objects of the ingest's hot path, where
/// `JSONDecoder` took 10% of the CPU under load. It answers nil for anything
/// it leaves to `JSONDecoder`, which then reads the body with the full grammar
/// and its precise errors: escapes, fractions, exponents, negative numbers,
/// arrays, booleans, duplicate keys, invalid UTF-8, deep nesting.
public enum JSONReader {
    public static func object(_ bytes: [UInt8]) -> JSONObject? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = Cursor(bytes: buffer)
            guard case .object(let fields)? = reader.value(depth: 0) else { return nil }
            reader.skipWhitespace()
            return reader.position == buffer.count ? fields : nil
        }
    }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) -> JSONValue? {
            skipWhitespace()
            guard position < bytes.count else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "{"): return depth < 4 ? object(depth: depth) : nil
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return integer().map(JSONValue.integer)
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return nil
            }
        }

        private mutating func object(depth: Int) -> JSONValue? {
            position += 1  // {
            var object = JSONObject()
            object.fields.reserveCapacity(12)
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(object)
            }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
                position += 1
                guard let value = value(depth: depth + 1), object[key] == nil else { return nil }
                object.fields.append(JSONObject.Field(key: key, value: value))
                skipWhitespace()
                guard position < bytes.count else { return nil }
                position += 1
                switch bytes[position - 1] {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "}"): return .object(object)
                default: return nil
                }
            }
        }

        /// A string without escapes or control characters, in valid UTF-8.
        private mutating func string() -> String? {
            position += 1  // opening quote
            let start = position
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    position += 1
                    return String(validating: UnsafeBufferPointer(rebasing: bytes[start..<position - 1]), as: UTF8.self)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                position += 1
            }
            return nil
        }

        /// A non-negative integer of at most 18 digits, without leading zeros.
        private mutating func integer() -> Int? {
            let start = position
            var value = 0
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                guard position - start < 18 else { return nil }
                value = value * 10 + Int(bytes[position] - UInt8(ascii: "0"))
                position += 1
            }
            guard position - start == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            // A fraction or exponent is left to JSONDecoder.
            if position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
                default: break
                }
            }
            return value
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count else { return false }
            let matches = word.withUTF8Buffer { expected in
                (0..<count).allSatisfy { bytes[position + $0] == expected[$0] }
            }
            if matches { position += count }
            return matches
        }
    }
}
