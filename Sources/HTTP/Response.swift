import Foundation

package struct Response: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]

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
