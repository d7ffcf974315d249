import Common
import Foundation

/// An error meant for the client, answered as `application/problem+json`.
/// Any other error thrown by a handler is logged and answered as a bare 500.
package struct HTTPError: Error, Sendable, CustomStringConvertible {
    package let status: Int
    package let title: String
    package let detail: String
    package let errors: [FieldError]
    package let headers: [(String, String)]
    /// Extension members of the problem (RFC 9457 §3.2), e.g. the
    /// `guidanceId` a client should retry with.
    package let members: [(String, String)]

    package init(
        status: Int, title: String? = nil, detail: String, errors: [FieldError] = [], headers: [(String, String)] = [],
        members: [(String, String)] = []
    ) {
        self.status = status
        self.title = title ?? HTTPStatus.reason(status)
        self.detail = detail
        self.errors = errors
        self.headers = headers
        self.members = members
    }

    package var description: String { "\(status) \(title): \(detail)" }

    /// A request malformed as a whole; one naming a field is `init(_: FieldError)`.
    package static func badRequest(_ detail: String) -> HTTPError {
        HTTPError(status: 400, detail: detail)
    }
    /// One thing wrong with the request, named by its field: 400 for the
    /// request's form (the default), 422 for what the rules refuse.
    package init(_ error: FieldError, status: Int = 400) {
        let detail = error.field.isEmpty ? "the body \(error.message)" : "field '\(error.field)' \(error.message)"
        self.init(status: status, detail: detail, errors: error.field.isEmpty ? [] : [error])
    }

    package static func notFound(_ detail: String) -> HTTPError { HTTPError(status: 404, detail: detail) }
    package static func unprocessable(_ detail: String, errors: [FieldError] = []) -> HTTPError {
        HTTPError(status: 422, detail: detail, errors: errors)
    }
    package static func unavailable(_ detail: String, retryAfterSeconds: Int, members: [(String, String)] = []) -> HTTPError {
        HTTPError(status: 503, detail: detail, headers: [("Retry-After", String(retryAfterSeconds))], members: members)
    }

    /// The RFC 9457 body.
    var response: Response {
        let problem = Problem(
            type: "https://guidance.example/problems/\(HTTPStatus.slug(status))",
            title: title, status: status, detail: detail, errors: errors.isEmpty ? nil : errors, members: members)
        var response = Response.json(problem, status: status)
        response.headers = [("Content-Type", "application/problem+json")] + headers
        return response
    }
}

struct Problem: Encodable, Sendable {
    let type: String
    let title: String
    let status: Int
    let detail: String
    let errors: [FieldError]?
    let members: [(String, String)]

    private struct Key: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(type, forKey: Key(stringValue: "type"))
        try container.encode(title, forKey: Key(stringValue: "title"))
        try container.encode(status, forKey: Key(stringValue: "status"))
        try container.encode(detail, forKey: Key(stringValue: "detail"))
        try container.encodeIfPresent(errors, forKey: Key(stringValue: "errors"))
        for (name, value) in members {
            try container.encode(value, forKey: Key(stringValue: name))
        }
    }
}

enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "HTTP \(status)"
        }
    }

    static func slug(_ status: Int) -> String {
        reason(status).lowercased().replacingOccurrences(of: " ", with: "-")
    }
}
