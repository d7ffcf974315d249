/// A JSON value as `JSONReader` reads it. Whole numbers that fit an `Int`
/// are `.integer`; every other number keeps its text, so that a field that
/// must be whole can say what it got.
package enum JSONValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object(JSONObject)

    var typeName: String {
        switch self {
        case .string: "a string"
        case .integer, .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// An object's fields in document order, each key once, found by a linear
/// scan: for the handful of fields of these bodies, cheaper than a dictionary.
package struct JSONObject: Equatable, Sendable {
    package struct Field: Equatable, Sendable {
        package let key: String
        package let value: JSONValue
    }

    package fileprivate(set) var fields: [Field] = []

    package init() {}

    package subscript(key: String) -> JSONValue? {
        fields.first { $0.key == key }?.value
    }

    package var keys: [String] { fields.map(\.key) }
    package var count: Int { fields.count }
}

/// What is wrong with one field of a request or event, named by its JSON
/// path (`student.grade`); an empty field is the document as a whole.
package struct FieldError: Error, Codable, Equatable, Sendable, CustomStringConvertible {
    package let field: String
    package let message: String

    package init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    package var description: String { field.isEmpty ? message : "\(field) \(message)" }
}

/// Strict JSON (RFC 8259) for request bodies and events: no trailing commas,
/// no duplicate keys, valid UTF-8, no raw control characters in strings,
/// nesting at most `maxDepth` deep. Errors name the field they concern.
package enum JSONReader {
    package static let maxDepth = 32

    package static func parse(_ bytes: [UInt8]) throws(FieldError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(FieldError) -> JSONValue in
            var cursor = Cursor(bytes: buffer)
            let value = try cursor.value(depth: 0)
            cursor.skipWhitespace()
            guard cursor.position == buffer.count else { throw cursor.unexpected("after the document") }
            return value
        }
    }

    /// A document that must be an array, each element handed to `body` as
    /// soon as it is read: a long list (a grade's stored digest, 13,000
    /// entries) never stands as one tree of values beside what is made of it.
    package static func forEachElement(of text: String, _ body: (JSONValue) throws(FieldError) -> Void) throws(FieldError) {
        var text = text
        let read = text.withUTF8 { (buffer) -> Result<Void, FieldError> in
            Result { () throws(FieldError) in
                var cursor = Cursor(bytes: buffer)
                cursor.skipWhitespace()
                guard cursor.position < buffer.count, buffer[cursor.position] == UInt8(ascii: "[") else {
                    throw cursor.unexpected("where an array was expected")
                }
                try cursor.elements(depth: 0, body)
                cursor.skipWhitespace()
                guard cursor.position == buffer.count else { throw cursor.unexpected("after the document") }
            }
        }
        try read.get()
    }

    /// A document that must be an object.
    package static func object(_ bytes: [UInt8]) throws(FieldError) -> JSONObject {
        let value = try parse(bytes)
        guard case .object(let object) = value else {
            throw FieldError(field: "", message: "the body must be a JSON object, not \(value.typeName)")
        }
        return object
    }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0
        /// Where the cursor is in the document, for error messages only: the
        /// path's text is built when an error needs it, not per field.
        private var trail: [Step] = []

        private enum Step {
            case key(String)
            case index(Int)
        }

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            trail.reserveCapacity(8)
        }

        /// `student.grade`, `items[2].name`; empty for the document.
        var path: String {
            var text = ""
            for step in trail {
                switch step {
                case .key(let key): text += text.isEmpty ? key : "." + key
                case .index(let index): text += "[\(index)]"
                }
            }
            return text
        }

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        func unexpected(_ what: String) -> FieldError {
            let found = position < bytes.count ? "unexpected '\(Cursor.show(bytes[position]))'" : "unexpected end"
            return FieldError(field: path, message: "is not valid JSON: \(found) \(what) at byte \(position)")
        }

        private static func show(_ byte: UInt8) -> String {
            byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
        }

        mutating func value(depth: Int) throws(FieldError) -> JSONValue {
            skipWhitespace()
            guard position < bytes.count else { throw unexpected("where a value was expected") }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                guard depth < JSONReader.maxDepth else { throw FieldError(field: path, message: "is nested too deeply") }
                return .object(try object(depth: depth))
            case UInt8(ascii: "["):
                guard depth < JSONReader.maxDepth else { throw FieldError(field: path, message: "is nested too deeply") }
                return .array(try array(depth: depth))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            case UInt8(ascii: "t") where literal("true"): return .bool(true)
            case UInt8(ascii: "f") where literal("false"): return .bool(false)
            case UInt8(ascii: "n") where literal("null"): return .null
            default: throw unexpected("where a value was expected")
            }
        }

        private mutating func object(depth: Int) throws(FieldError) -> JSONObject {
            position += 1  // {
            var object = JSONObject()
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return object
            }
            // One allocation for a request's few fields, not one per doubling.
            object.fields.reserveCapacity(8)
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                        throw FieldError(field: path, message: "is not valid JSON: a trailing comma before '}' at byte \(position)")
                    }
                    throw unexpected("where a field name was expected")
                }
                let key = try string()
                trail.append(.key(key))
                guard object[key] == nil else { throw FieldError(field: path, message: "appears more than once") }
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw unexpected("after a field name") }
                position += 1
                object.fields.append(JSONObject.Field(key: key, value: try value(depth: depth + 1)))
                trail.removeLast()
                skipWhitespace()
                guard position < bytes.count else { throw unexpected("in an object") }
                position += 1
                switch bytes[position - 1] {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "}"): return object
                default:
                    position -= 1
                    throw unexpected("where ',' or '}' was expected")
                }
            }
        }

        private mutating func array(depth: Int) throws(FieldError) -> [JSONValue] {
            var values: [JSONValue] = []
            try elements(depth: depth) { values.append($0) }
            return values
        }

        /// The array at the cursor, each element handed to `each` as it is read.
        mutating func elements(depth: Int, _ each: (JSONValue) throws(FieldError) -> Void) throws(FieldError) {
            position += 1  // [
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return
            }
            var index = 0
            while true {
                skipWhitespace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                    throw FieldError(field: path, message: "is not valid JSON: a trailing comma before ']' at byte \(position)")
                }
                trail.append(.index(index))
                try each(try value(depth: depth + 1))
                index += 1
                trail.removeLast()
                skipWhitespace()
                guard position < bytes.count else { throw unexpected("in an array") }
                position += 1
                switch bytes[position - 1] {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "]"): return
                default:
                    position -= 1
                    throw unexpected("where ',' or ']' was expected")
                }
            }
        }

        /// A string in valid UTF-8 with JSON's escapes; raw control
        /// characters and unpaired surrogates are refused.
        private mutating func string() throws(FieldError) -> String {
            position += 1  // opening quote
            let start = position
            // The common case, no escapes: validate the bytes in place.
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    position += 1
                    guard let text = String(validUTF8: UnsafeBufferPointer(rebasing: bytes[start..<position - 1])) else {
                        throw FieldError(field: path, message: "is not valid UTF-8")
                    }
                    return text
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 {
                    throw FieldError(field: path, message: "is not valid JSON: a control character inside a string at byte \(position)")
                }
                position += 1
            }
            guard position < bytes.count else { throw unexpected("inside a string") }
            var scalars = Array(bytes[start..<position])
            while position < bytes.count {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    position += 1
                    guard let text = scalars.withUnsafeBufferPointer(String.init(validUTF8:)) else {
                        throw FieldError(field: path, message: "is not valid UTF-8")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    position += 1
                    guard position < bytes.count else { throw unexpected("inside a string") }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                    case UInt8(ascii: "b"): scalars.append(0x08)
                    case UInt8(ascii: "f"): scalars.append(0x0C)
                    case UInt8(ascii: "n"): scalars.append(0x0A)
                    case UInt8(ascii: "r"): scalars.append(0x0D)
                    case UInt8(ascii: "t"): scalars.append(0x09)
                    case UInt8(ascii: "u"):
                        let scalar = try unicodeEscape()
                        scalars.append(contentsOf: String(Character(scalar)).utf8)
                    default:
                        position -= 1
                        throw unexpected("after '\\'")
                    }
                default:
                    if byte < 0x20 {
                        throw FieldError(field: path, message: "is not valid JSON: a control character inside a string at byte \(position)")
                    }
                    scalars.append(byte)
                    position += 1
                }
            }
            throw unexpected("inside a string")
        }

        /// The scalar of `\uXXXX` (the `\u` already read), or of a
        /// surrogate pair `\uD83D\uDE00`.
        private mutating func unicodeEscape() throws(FieldError) -> Unicode.Scalar {
            let high = try hex4()
            if (0xDC00...0xDFFF).contains(high) {
                throw FieldError(field: path, message: "has an unpaired surrogate \\u\(String(high, radix: 16))")
            }
            if (0xD800...0xDBFF).contains(high) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw FieldError(field: path, message: "has an unpaired surrogate \\u\(String(high, radix: 16))")
                }
                position += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw FieldError(field: path, message: "has an unpaired surrogate \\u\(String(high, radix: 16))")
                }
                let value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                guard let scalar = Unicode.Scalar(value) else { throw FieldError(field: path, message: "has an invalid \\u escape") }
                return scalar
            }
            guard let scalar = Unicode.Scalar(high) else { throw FieldError(field: path, message: "has an invalid \\u escape") }
            return scalar
        }

        private mutating func hex4() throws(FieldError) -> UInt32 {
            guard position + 4 <= bytes.count else { throw unexpected("in a \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[position]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw unexpected("in a \\u escape")
                }
                value = value << 4 | UInt32(digit)
                position += 1
            }
            return value
        }

        /// A number by JSON's grammar; `.integer` when it is whole and fits.
        private mutating func number() throws(FieldError) -> JSONValue {
            let start = position
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            let integerStart = position
            skipDigits()
            guard position > integerStart else { throw unexpected("in a number") }
            if bytes[integerStart] == UInt8(ascii: "0") && position - integerStart > 1 {
                throw FieldError(field: path, message: "is not valid JSON: a number with a leading zero at byte \(integerStart)")
            }
            var whole = true
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                whole = false
                position += 1
                let fractionStart = position
                skipDigits()
                guard position > fractionStart else { throw unexpected("in a number's fraction") }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                whole = false
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                let exponentStart = position
                skipDigits()
                guard position > exponentStart else { throw unexpected("in a number's exponent") }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
            if whole, let value = Int(text) { return .integer(value) }
            return .number(text)
        }

        private mutating func skipDigits() {
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                position += 1
            }
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

/// Typed reading of an object's fields, each error naming the field by its
/// path. Unknown fields are ignored; absent and `null` are the same for
/// optional fields.
package struct JSONFields: Sendable {
    package let object: JSONObject
    /// The object's own path, empty for the document.
    package let path: String

    package init(_ object: JSONObject, path: String = "") {
        self.object = object
        self.path = path
    }

    package func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private func required(_ key: String) throws(FieldError) -> JSONValue {
        switch object[key] {
        case nil: throw FieldError(field: name(key), message: "is required")
        case .null?: throw FieldError(field: name(key), message: "must not be null")
        case let value?: return value
        }
    }

    private func mismatch(_ key: String, _ expected: String, _ value: JSONValue) -> FieldError {
        FieldError(field: name(key), message: "must be \(expected), not \(value.typeName)")
    }

    package func string(_ key: String) throws(FieldError) -> String {
        let value = try required(key)
        guard case .string(let text) = value else { throw mismatch(key, "a string", value) }
        return text
    }

    package func optionalString(_ key: String) throws(FieldError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard case .string(let text) = value else { throw mismatch(key, "a string", value) }
        return text
    }

    package func boolean(_ key: String) throws(FieldError) -> Bool {
        let value = try required(key)
        guard case .bool(let flag) = value else { throw mismatch(key, "true or false", value) }
        return flag
    }

    /// A whole number within `range`.
    package func integer(_ key: String, in range: ClosedRange<Int> = Int.min...Int.max) throws(FieldError) -> Int {
        try integer(key, value: required(key), in: range)
    }

    private func integer(_ key: String, value: JSONValue, in range: ClosedRange<Int>) throws(FieldError) -> Int {
        switch value {
        case .integer(let number) where range.contains(number):
            return number
        case .integer, .number:
            if case .number(let text) = value, !JSONFields.isWhole(text) {
                throw FieldError(field: name(key), message: "must be a whole number, not \(text)")
            }
            let bounds =
                range == Int.min...Int.max ? "a 64-bit whole number" : "a whole number from \(range.lowerBound) to \(range.upperBound)"
            throw FieldError(field: name(key), message: "must be \(bounds)")
        default:
            throw mismatch(key, "a whole number", value)
        }
    }

    /// Whether a number's text has no fraction (`1e3` is whole, `1.5` is not).
    private static func isWhole(_ text: String) -> Bool {
        guard let value = Double(text), value.isFinite else { return true }
        return value.rounded(.towardZero) == value
    }

    package func object(_ key: String) throws(FieldError) -> JSONFields {
        let value = try required(key)
        guard case .object(let nested) = value else { throw mismatch(key, "an object", value) }
        return JSONFields(nested, path: name(key))
    }
}
