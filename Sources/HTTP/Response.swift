import Foundation

package struct Response: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]
    /// A body written while it is sent, in place of `body`.
    package var stream: BodyStream?

    package init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package static func json<T: Encodable>(_ value: T, status: Int = 200) -> Response {
        do {
            return json(written: Array(try Response.encoder.encode(value)), status: status)
        } catch {
            return Response(status: 500, headers: [("Content-Type", "text/plain")], body: Array("could not encode the response\n".utf8))
        }
    }

    /// JSON written piece by piece as it is sent (a busy school's list).
    package static func json(streamed stream: BodyStream, status: Int = 200) -> Response {
        var response = Response(status: status, headers: [("Content-Type", "application/json")])
        response.stream = stream
        return response
    }

    /// A body already written as JSON (see `JSONWriter`).
    package static func json(written body: [UInt8], status: Int = 200) -> Response {
        Response(status: status, headers: [("Content-Type", "application/json")], body: body)
    }

    package static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> Response {
        Response(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }

    package static var noContent: Response { Response(status: 204) }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()
}

/// A body given piece by piece while it is sent (chunked), so that a big
/// answer (a school's day of 40,000 guidances, 20 MB of JSON) is never held
/// whole. `next` is called from the server's thread, one call at a time,
/// until it returns nil.
package final class BodyStream: @unchecked Sendable {
    private let next: () -> [UInt8]?

    package init(_ next: @escaping () -> [UInt8]?) {
        self.next = next
    }

    /// The next piece; nil once the body is over.
    package func piece() -> [UInt8]? { next() }

    /// Every piece that is left, joined (tests, and a caller that needs the whole).
    package func collected() -> [UInt8] {
        var bytes: [UInt8] = []
        while let piece = next() { bytes += piece }
        return bytes
    }
}
