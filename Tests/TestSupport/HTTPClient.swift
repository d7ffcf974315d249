import Foundation
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

package struct Reply: Sendable {
    package let status: Int
    package let headers: [String: String]
    package let body: Data

    package func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    package func json<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(T.self, from: body)
    }

    package var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object; empty when it is not one.
    package var object: [String: AnyCodable] { (try? json()) ?? [:] }
}

/// Answers as they come: a redirect is returned, not followed, and no
/// cookie is kept or sent unless a test sends it (cookies do not tell
/// ports apart, so one would leak between tests).
fileprivate final class NoRedirects: NSObject, URLSessionTaskDelegate {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

fileprivate let session: URLSession = {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = 400
    configuration.timeoutIntervalForRequest = 30
    configuration.httpShouldSetCookies = false
    configuration.httpCookieAcceptPolicy = .never
    return URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
}()

/// One HTTP request through URLSession, with no retries and no redirects.
package func fetch(_ method: String, _ url: String, body: String? = nil, headers: [String: String] = [:]) async throws -> Reply {
    try await fetch(method, url, bytes: body.map { Array($0.utf8) }, headers: headers)
}

/// One HTTP request with a body of any bytes (an uploaded file).
package func fetch(_ method: String, _ url: String, bytes: [UInt8]?, headers: [String: String] = [:]) async throws -> Reply {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.httpBody = bytes.map { Data($0) }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await session.data(for: request)
    let http = response as! HTTPURLResponse
    var fields: [String: String] = [:]
    for (name, value) in http.allHeaderFields { fields["\(name)"] = "\(value)" }
    return Reply(status: http.statusCode, headers: fields, body: data)
}

/// Any JSON value, for asserting on problem documents.
package enum AnyCodable: Codable, Equatable, Sendable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case null
    case array([AnyCodable])
    case object([String: AnyCodable])

    package init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([AnyCodable].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: AnyCodable].self))
        }
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension AnyCodable {
    package subscript(key: String) -> AnyCodable? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    package subscript(index: Int) -> AnyCodable? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    package var string: String? { if case .string(let value) = self { value } else { nil } }
    package var int: Int? { if case .int(let value) = self { value } else { nil } }
    /// A JSON number, whole or not (`1.0` reads back as an int).
    package var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }
}

/// `XCTAssertEqual` for an expression that awaits (XCTest's autoclosures cannot).
package func assertEqualAsync<T: Equatable>(
    _ expression: @autoclosure () async throws -> T, _ expected: T, _ message: String = "",
    file: StaticString = #filePath, line: UInt = #line
) async throws {
    let value = try await expression()
    XCTAssertEqual(value, expected, message, file: file, line: line)
}
