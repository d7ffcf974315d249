import Common
import Foundation

/// A complete HTTP request: headers, query and the whole (size-capped) body.
public struct Request: Sendable {
    public let method: String
    public let path: String
    /// Header names lowercased.
    public let headers: [String: String]
    public let query: [String: String]
    public let body: [UInt8]
    public let requestID: String
    /// Values of the route's `{name}` segments.
    public internal(set) var parameters: [String: String] = [:]
    /// The route pattern that matched, e.g. `/v1/schools/{schoolId}/guidances`.
    public internal(set) var route: String = ""

    public init(method: String, path: String, headers: [String: String] = [:], query: [String: String] = [:], body: [UInt8] = [], requestID: String = "test") {
        self.method = method
        self.path = path
        self.headers = headers
        self.query = query
        self.body = body
        self.requestID = requestID
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// A path parameter the route declares; a missing one is a programming error.
    public func parameter(_ name: String) -> String {
        guard let value = parameters[name] else { preconditionFailure("route \(route) has no parameter \(name)") }
        return value
    }

    /// A path parameter that must be a positive whole number; 400 naming it
    /// otherwise.
    public func positiveParameter(_ name: String) throws(HTTPError) -> Int {
        try Request.positive(parameter(name), name)
    }

    /// A query parameter that, when present, must be a positive whole number;
    /// 400 naming it otherwise.
    public func positiveQuery(_ name: String) throws(HTTPError) -> Int? {
        guard let text = query[name] else { return nil }
        return try Request.positive(text, name)
    }

    private static func positive(_ text: String, _ name: String) throws(HTTPError) -> Int {
        guard let value = Int(text), value > 0 else {
            throw HTTPError.badRequest("\(name) must be a positive whole number", errors: [FieldError(field: name, message: "must be a positive whole number")])
        }
        return value
    }

    /// Decodes a JSON body: 415 unless the body is JSON, 400 naming the field
    /// for malformed JSON, a missing field or a wrong type. `plain`, when
    /// given, builds `T` from the fields `JSONReader` found, faster than
    /// `JSONDecoder`; when either answers nil, `JSONDecoder` reads the body
    /// and names what is wrong.
    public func decode<T: Decodable>(_ type: T.Type, plain: ((JSONObject) -> T?)? = nil) throws(HTTPError) -> T {
        let contentType = (header("content-type") ?? "").split(separator: ";").first.map {
            $0.trimmingWhitespace().lowercased()
        } ?? ""
        guard contentType == "application/json" || (contentType.hasPrefix("application/") && contentType.hasSuffix("+json")) else {
            throw HTTPError(status: 415, detail: "the body must be application/json, got '\(contentType.isEmpty ? "none" : contentType)'")
        }
        if let plain, let fields = JSONReader.object(body), let value = plain(fields) {
            return value
        }
        do {
            return try Request.decoder.decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            throw Request.describe(error)
        } catch {
            throw HTTPError.badRequest("the body is not valid JSON")
        }
    }

    private static let decoder = JSONDecoder()

    static func describe(_ error: DecodingError) -> HTTPError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (codingPath + (last.map { [$0] } ?? [])).map { key in
                key.intValue.map { "[\($0)]" } ?? key.stringValue
            }.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath, key)
            return .badRequest("missing required field '\(field)'", errors: [FieldError(field: field, message: "is required")])
        case .valueNotFound(_, let context):
            let field = path(context.codingPath)
            return .badRequest("field '\(field)' must not be null", errors: [FieldError(field: field, message: "must not be null")])
        case .typeMismatch(let type, let context):
            let field = path(context.codingPath)
            let expected = Request.typeName(type)
            return .badRequest("field '\(field)' must be \(expected)", errors: [FieldError(field: field, message: "must be \(expected)")])
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return .badRequest("the body is not valid JSON")
            }
            let field = path(context.codingPath)
            return .badRequest("field '\(field)' is invalid", errors: [FieldError(field: field, message: context.debugDescription)])
        @unknown default:
            return .badRequest("the body could not be read")
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int32.Type, is Int64.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is Bool.Type: "a boolean"
        case is [Any].Type: "an array"
        default: "an object"
        }
    }
}
