import Foundation

/// One invalid field of a request, named by its JSON path (`student.grade`).
public struct FieldError: Codable, Sendable, Equatable {
    public let field: String
    public let message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

/// An error meant for the client, answered as `application/problem+json`.
/// Any other error thrown by a handler is logged and answered as a bare 500.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    public let status: Int
    public let title: String
    public let detail: String
    public let errors: [FieldError]
    public let headers: [(String, String)]

    public init(status: Int, title: String? = nil, detail: String, errors: [FieldError] = [], headers: [(String, String)] = []) {
        self.status = status
        self.title = title ?? HTTPStatus.reason(status)
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    public var description: String { "\(status) \(title): \(detail)" }

    public static func badRequest(_ detail: String, errors: [FieldError] = []) -> HTTPError {
        HTTPError(status: 400, detail: detail, errors: errors)
    }
    public static func notFound(_ detail: String) -> HTTPError { HTTPError(status: 404, detail: detail) }
    public static func unprocessable(_ detail: String, errors: [FieldError] = []) -> HTTPError {
        HTTPError(status: 422, detail: detail, errors: errors)
    }
    public static func unavailable(_ detail: String, retryAfterSeconds: Int) -> HTTPError {
        HTTPError(status: 503, detail: detail, headers: [("Retry-After", String(retryAfterSeconds))])
    }

    /// The RFC 9457 body.
    var response: Response {
        let problem = Problem(
            type: "https://guidance.example/problems/\(HTTPStatus.slug(status))",
            title: title, status: status, detail: detail, errors: errors.isEmpty ? nil : errors)
        var response = Response.json(problem, status: status)
        response.headers = [("Content-Type", "application/problem+json")] + headers
        return response
    }
}

struct Problem: Codable, Sendable {
    let type: String
    let title: String
    let status: Int
    let detail: String
    let errors: [FieldError]?
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
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "HTTP \(status)"
        }
    }

    static func slug(_ status: Int) -> String {
        reason(status).lowercased().replacingOccurrences(of: " ", with: "-")
    }
}
