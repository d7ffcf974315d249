import Common

/// A complete HTTP request: headers, query and the whole (size-capped) body.
package struct Request: Sendable {
    package let method: String
    package let path: String
    /// Header names lowercased.
    package let headers: HeaderFields
    package let query: [String: String]
    package let body: [UInt8]
    package let requestID: String
    /// The address the connection comes from (a proxy's, behind one).
    package let peer: String
    /// Values of the route's `{name}` segments, in the path's order.
    package internal(set) var parameters: [(name: String, value: String)] = []
    /// The route pattern that matched, e.g. `/v1/schools/{schoolId}/guidances`.
    package internal(set) var route: String = ""

    package init(
        method: String, path: String, headers: [String: String] = [:], query: [String: String] = [:], body: [UInt8] = [],
        requestID: String, peer: String
    ) {
        self.init(
            method: method, path: path, headers: HeaderFields(headers.map { ($0.key.lowercased(), $0.value) }), query: query, body: body,
            requestID: requestID, peer: peer)
    }

    init(method: String, path: String, headers: HeaderFields, query: [String: String], body: [UInt8], requestID: String, peer: String) {
        self.peer = peer
        self.method = method
        self.path = path
        self.headers = headers
        self.query = query
        self.body = body
        self.requestID = requestID
    }

    /// The value of the header `name` (lowercase).
    package func header(_ name: String) -> String? { headers[name] }

    /// A path parameter the route declares; a missing one is a programming error.
    package func parameter(_ name: String) -> String {
        guard let value = optionalParameter(name) else { preconditionFailure("route \(route) has no parameter \(name)") }
        return value
    }

    /// A path parameter some of the handler's routes declare.
    package func optionalParameter(_ name: String) -> String? {
        parameters.first { $0.name == name }?.value
    }

    /// A path parameter that must be a whole number (digits only) within
    /// `range`; 400 naming it otherwise.
    package func integerParameter(_ name: String, in range: ClosedRange<Int>) throws(HTTPError) -> Int {
        try Request.integer(parameter(name), name, in: range)
    }

    /// A query parameter that, when present, must be a whole number (digits
    /// only) within `range`; 400 naming it otherwise.
    package func integerQuery(_ name: String, in range: ClosedRange<Int>) throws(HTTPError) -> Int? {
        guard let text = query[name] else { return nil }
        return try Request.integer(text, name, in: range)
    }

    private static func integer(_ text: String, _ name: String, in range: ClosedRange<Int>) throws(HTTPError) -> Int {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int(text), range.contains(value)
        else {
            throw HTTPError(FieldError(field: name, message: "must be a whole number from \(range.lowerBound) to \(range.upperBound)"))
        }
        return value
    }

    /// A query parameter that, when present, must be `true` or `false`;
    /// 400 naming it otherwise.
    package func booleanQuery(_ name: String) throws(HTTPError) -> Bool? {
        switch query[name] {
        case nil: return nil
        case "true": return true
        case "false": return false
        default: throw HTTPError(FieldError(field: name, message: "must be true or false"))
        }
    }

    /// Reads a JSON object body with `read`: 415 unless the body is JSON,
    /// 400 naming the field for malformed JSON (trailing commas and
    /// duplicate keys included), a missing field, a wrong type or a number
    /// out of range.
    package func json<T>(_ read: (JSONFields) throws(FieldError) -> T) throws(HTTPError) -> T {
        guard Request.isJSON(header("content-type")) else {
            let contentType = Request.mediaType(header("content-type"))
            throw HTTPError(status: 415, detail: "the body must be application/json, got '\(contentType.isEmpty ? "none" : contentType)'")
        }
        do {
            return try read(JSONFields(JSONReader.object(body)))
        } catch {
            throw HTTPError(error)
        }
    }
}

extension Request {
    /// A Content-Type's media type, lowercased, without parameters.
    static func mediaType(_ contentType: String?) -> String {
        (contentType ?? "").split(separator: ";").first.map { $0.trimmingWhitespace().lowercased() } ?? ""
    }

    /// Whether a Content-Type names JSON (`application/json` or
    /// `application/…+json`, any case, parameters after `;` ignored). Read
    /// in place when it is ASCII, as every POST's is: `mediaType` makes
    /// three strings.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType, contentType.utf8.allSatisfy({ $0 < 0x80 }) else {
            let media = mediaType(contentType)
            return media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
        }
        let lowered: (UInt8, UInt8) -> Bool = { ($0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0) == $1 }
        // The ASCII characters Unicode calls white space.
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || (0x09...0x0d).contains($0) }
        // The first part between semicolons that is not empty, as `split` finds it.
        let media = contentType.utf8.drop { $0 == UInt8(ascii: ";") }.prefix { $0 != UInt8(ascii: ";") }
        guard let first = media.firstIndex(where: { !isSpace($0) }), let last = media.lastIndex(where: { !isSpace($0) }) else {
            return false
        }
        let trimmed = media[first...last]
        let type = "application/".utf8
        guard trimmed.starts(with: type, by: lowered) else { return false }
        let rest = trimmed.dropFirst(type.count)
        return rest.elementsEqual("json".utf8, by: lowered) || rest.reversed().starts(with: "nosj+".utf8, by: lowered)
    }
}

/// A request's header fields in the order they came, names lowercased; the
/// last value of a name sent twice is its value. A request carries a handful,
/// and looking one up by comparing names costs less than hashing each name
/// into a dictionary per request.
package struct HeaderFields: Sendable {
    /// Names and values in the order sent.
    private(set) var list: [(name: String, value: String)]
    /// Each name's last field, once more than 16 came: past that, a scan per
    /// look-up (one per field, while they are collected) would grow with the
    /// square of their number.
    private var index: [String: Int]?

    init(_ list: [(name: String, value: String)] = []) {
        self.list = []
        self.list.reserveCapacity(list.count)
        for (name, value) in list { append(name, value) }
    }

    mutating func append(_ name: String, _ value: String) {
        list.append((name, value))
        if index != nil {
            index?[name] = list.count - 1
        } else if list.count > 16 {
            index = Dictionary(list.indices.map { (list[$0].name, $0) }) { $1 }
        }
    }

    mutating func reserveCapacity(_ count: Int) { list.reserveCapacity(count) }

    /// The last value sent for `name` (lowercase), or nil.
    package subscript(name: String) -> String? {
        if let index { return index[name].map { list[$0].value } }
        return list.last { $0.name == name }?.value
    }
}
