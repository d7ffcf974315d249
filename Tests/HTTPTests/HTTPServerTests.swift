import Common
import Foundation
import Synchronization
import TestSupport
import XCTest

@testable import HTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

final class HTTPServerTests: XCTestCase {
    struct Greeting: Codable, Equatable {
        let name: String
        let count: Int
    }

    var server: HTTPServer!
    var base = ""
    /// When `/stuck`'s handler saw its task cancelled.
    let stuckCancelledAt = Moment()
    /// `/slow`'s handlers answer once it rings (a slow backend the test releases).
    let slowReleased = Doorbell()

    final class Moment: Sendable {
        private let instant = Mutex<ContinuousClock.Instant?>(nil)
        func mark() { instant.withLock { $0 = .now } }
        var value: ContinuousClock.Instant? { instant.withLock { $0 } }
    }

    override func setUp() async throws {
        var router = Router()
        router.get("/items/{id}/parts/{part}") { request in
            .json(["id": request.parameter("id"), "part": request.parameter("part"), "q": request.query["q"] ?? ""])
        }
        router.post("/greetings") { request in
            let greeting = try request.json { (body) throws(FieldError) in
                Greeting(name: try body.string("name"), count: try body.integer("count", in: 0...1000))
            }
            return .json(greeting, status: 201)
        }
        let released = slowReleased
        router.get("/slow") { _ in
            _ = await released.wait(until: { released.rings > 0 }, atMost: .seconds(60))
            return .text("slow\n")
        }
        router.get("/fast") { _ in .text("fast\n") }
        router.get("/large") { _ in Response(status: 200, body: HTTPServerTests.large) }
        router.get("/streamed") { _ in
            // The large body in pieces of uneven sizes, an empty one among them.
            var rest = HTTPServerTests.large[...]
            var size = 1
            return .json(
                streamed: BodyStream {
                    guard !rest.isEmpty else { return nil }
                    defer { size = size * 7 % 200_003 }
                    let piece = Array(rest.prefix(size))
                    rest = rest.dropFirst(size)
                    return piece
                })
        }
        let stuckCancelledAt = self.stuckCancelledAt
        router.get("/stuck") { _ in
            // Nothing rings: only cancelling ends the wait.
            let never = Doorbell()
            await never.wait(after: never.rings, atMost: .seconds(60))
            if Task.isCancelled { stuckCancelledAt.mark() }
            return .text("late\n")
        }
        router.get("/boom") { _ in throw CancellationError() }
        router.add("POST", "/upload", maxBody: 64 * 1024) { request in .text("\(request.body.count)\n") }
        server = HTTPServer(
            config: HTTPServerConfig(host: "127.0.0.1", port: 0, maxBodySize: 1024, receiveTimeout: .seconds(2)),
            router: router, logger: Logger(component: "http-test", level: .error))
        try server.start()
        base = "http://127.0.0.1:\(server.port)"
    }

    override func tearDown() async throws {
        await server.shutdown(gracePeriod: .seconds(2))
    }

    func testRoutesWithPathParametersAndQuery() async throws {
        let reply = try await fetch("GET", "\(base)/items/42/parts/wheel?q=blue%20car")
        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(try reply.json(), ["id": "42", "part": "wheel", "q": "blue car"])
        XCTAssertFalse((reply.header("X-Request-Id") ?? "").isEmpty)
        let again = try await fetch("GET", "\(base)/items/42/parts/wheel")
        XCTAssertNotEqual(again.header("X-Request-Id"), reply.header("X-Request-Id"), "each request gets its own id")
        // U+1DFD is a combining mark: as a `Character` it would swallow the `/` before it.
        let combining = try await fetch("GET", "\(base)/items/%E1%B7%BD/parts/%CC%81wheel")
        XCTAssertEqual(combining.status, 200)
        XCTAssertEqual(try combining.json(), ["id": "\u{1DFD}", "part": "\u{301}wheel", "q": ""])
    }

    /// A body past `Exchange.copiedBodyLimit` (read from the array as it is
    /// sent, not copied): 3 MB arrive whole, byte for byte, with their length;
    /// and the same given as a stream of uneven pieces arrives whole, chunked.
    static let large = (0..<3_000_017).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }

    func testALargeOrStreamedBodyArrivesWholeAndSmallOnesStillDo() async throws {
        XCTAssertGreaterThan(HTTPServerTests.large.count, Exchange.copiedBodyLimit)
        for _ in 0..<3 {
            let reply = try await fetch("GET", "\(base)/large")
            XCTAssertEqual(reply.status, 200)
            XCTAssertEqual(reply.header("Content-Length"), String(HTTPServerTests.large.count))
            XCTAssertTrue(Array(reply.body) == HTTPServerTests.large, "\(reply.body.count) bytes")
        }
        let streamed = try await fetch("GET", "\(base)/streamed")
        XCTAssertEqual(streamed.status, 200)
        XCTAssertEqual(streamed.header("Transfer-Encoding")?.lowercased(), "chunked")
        XCTAssertTrue(Array(streamed.body) == HTTPServerTests.large, "streamed: \(streamed.body.count) bytes")
        let small = try await fetch("GET", "\(base)/fast")
        XCTAssertEqual(String(decoding: small.body, as: UTF8.self), "fast\n")
    }

    func testUnknownPathIs404AndWrongMethodIs405WithAllow() async throws {
        let missing = try await fetch("GET", "\(base)/nothing/here")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.header("Content-Type"), "application/problem+json")
        let wrong = try await fetch("DELETE", "\(base)/greetings")
        XCTAssertEqual(wrong.status, 405)
        XCTAssertEqual(wrong.header("Allow"), "POST")
        let problem: [String: AnyCodable] = try wrong.json()
        XCTAssertEqual(problem["status"], .int(405))
    }

    func testJSONBodyIsDecodedAndEchoedWithRequestID() async throws {
        let reply = try await fetch(
            "POST", "\(base)/greetings", body: #"{"name":"민지","count":3}"#,
            headers: ["Content-Type": "application/json", "X-Request-Id": "req-123"])
        XCTAssertEqual(reply.status, 201)
        XCTAssertEqual(try reply.json(), Greeting(name: "민지", count: 3))
        XCTAssertEqual(reply.header("X-Request-Id"), "req-123")
    }

    func testBodyOverTheLimitIs413() async throws {
        let big = #"{"name":""# + String(repeating: "x", count: 5000) + #"","count":1}"#
        let reply = try await fetch("POST", "\(base)/greetings", body: big, headers: ["Content-Type": "application/json"])
        XCTAssertEqual(reply.status, 413)
        XCTAssertEqual(reply.header("Content-Type"), "application/problem+json")
    }

    func testMalformedJSONWrongTypeAndMissingFieldAre400NamingTheField() async throws {
        let malformed = try await fetch("POST", "\(base)/greetings", body: #"{"name": "#, headers: ["Content-Type": "application/json"])
        XCTAssertEqual(malformed.status, 400)
        XCTAssertEqual(malformed.header("Content-Type"), "application/problem+json")

        let wrongType = try await fetch(
            "POST", "\(base)/greetings", body: #"{"name":"a","count":"three"}"#, headers: ["Content-Type": "application/json"])
        XCTAssertEqual(wrongType.status, 400)
        let problem: [String: AnyCodable] = try wrongType.json()
        XCTAssertEqual(
            problem["errors"], .array([.object(["field": .string("count"), "message": .string("must be a whole number, not a string")])]))

        let missing = try await fetch("POST", "\(base)/greetings", body: #"{"name":"a"}"#, headers: ["Content-Type": "application/json"])
        XCTAssertEqual(missing.status, 400)
        XCTAssertTrue(String(decoding: missing.body, as: UTF8.self).contains("\"field\":\"count\""))
    }

    /// Strict JSON: what a lenient parser lets through is a 400 naming the
    /// field, never a guess.
    func testTrailingCommasDuplicateKeysAndNumbersOutOfRangeAre400NamingTheField() async throws {
        let cases: [(body: String, field: String, message: String)] = [
            (#"{"name":"a","count":1,}"#, "", "trailing comma"),
            (#"{"name":"a","count":1,"count":2}"#, "count", "appears more than once"),
            (#"{"name":"a","count":1.5}"#, "count", "must be a whole number, not 1.5"),
            (#"{"name":"a","count":1e308}"#, "count", "must be a whole number from 0 to 1000"),
            (#"{"name":"a","count":9223372036854775808}"#, "count", "must be a whole number from 0 to 1000"),
            (#"{"name":"a","count":-1}"#, "count", "must be a whole number from 0 to 1000"),
            (#"{"name":"a","count":[1,]}"#, "count", "trailing comma")
        ]
        for (body, field, message) in cases {
            let reply = try await fetch("POST", "\(base)/greetings", body: body, headers: ["Content-Type": "application/json"])
            XCTAssertEqual(reply.status, 400, body)
            XCTAssertEqual(reply.header("Content-Type"), "application/problem+json", body)
            let problem: [String: AnyCodable] = try reply.json()
            let text = String(decoding: reply.body, as: UTF8.self)
            XCTAssertTrue(text.contains(message), "\(body) → \(text)")
            if !field.isEmpty {
                guard case .array(let errors)? = problem["errors"], case .object(let first)? = errors.first else {
                    return XCTFail("no errors entry for \(body): \(text)")
                }
                XCTAssertEqual(first["field"], .string(field), body)
            }
        }
    }

    /// What the HTTP layer decides before any handler runs is problem+json
    /// with a request id, answered without reading a body.
    func testRequestsRefusedFromTheirHeadersAreProblemJSONWithARequestID() throws {
        let port = server.port
        let cases: [(String, String, Int)] = [
            (
                "conflicting Content-Length",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\n{\"a\":",
                400
            ),
            (
                "two Authorization headers",
                "GET /fast HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", 400
            ),
            (
                "Content-Length and Transfer-Encoding",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400
            ),
            (
                "declared body over the limit, not sent",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{", 413
            ),
            (
                "10 KB of headers",
                "GET /fast HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 10_000))\r\n\r\n", 431
            ),
            (
                "5 KB request target",
                "GET /fast?q=\(String(repeating: "q", count: 5_000)) HTTP/1.1\r\nHost: x\r\n\r\n", 414
            ),
            // RFC 9112: what a proxy in front may read the other way.
            (
                "space before the colon (the body would run as a second request)",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n", 400
            ),
            (
                "space before the colon of Transfer-Encoding",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 400
            ),
            ("tab before the colon", "GET /fast HTTP/1.1\r\nHost: x\r\nX-A\t: b\r\n\r\n", 400),
            (
                "obs-fold of Transfer-Encoding",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 3\r\n\r\nabc", 400
            ),
            ("bare CR inside a value", "GET /fast HTTP/1.1\r\nHost: x\r\nX-A: b\rX-B: c\r\n\r\n", 400),
            ("HTTP/1.1 without Host", "GET /fast HTTP/1.1\r\nX-A: b\r\n\r\n", 400),
            ("two Host headers", "GET /fast HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
            (
                "a transfer coding before chunked",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 501
            ),
            (
                "a transfer coding without chunked last (the body's end is unknown)",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xyz\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400
            ),
            // libmicrohttpd frames by the first, a check of the last would pass: the
            // pipelined GET must not be read as a request of its own.
            (
                "two Transfer-Encoding headers, identity then chunked",
                "POST /greetings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n",
                400
            ),
            ("NUL inside a value", "GET /fast HTTP/1.1\r\nHost: x\r\nX-A: b\0c\r\n\r\n", 400),
            ("NUL before what looks like a field, bare LF", "GET /fast HTTP/1.1\nX-A: b\0X-B: c\nHost: x\n\n", 400),
            ("NUL inside the last value", "GET /fast HTTP/1.1\r\nHost: x\0\r\nX-A: b\0 c\r\n\r\n", 400)
        ]
        // One the server waited on for a body would be answered 408 by its 2 s
        // receive deadline, not with the status decided from the headers.
        for (name, request, status) in cases {
            let answer = try rawExchange(port: port, request, timeout: 3)
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 \(status) "), "\(name): \(answer.prefix(200))")
            XCTAssertTrue(answer.contains("Content-Type: application/problem+json"), "\(name): \(answer.prefix(300))")
            XCTAssertTrue(answer.lowercased().contains("x-request-id: "), "\(name): \(answer.prefix(300))")
            XCTAssertEqual(
                answer.components(separatedBy: "\r\nDate: ").count - 1, 1,
                "\(name): more than one answer on the connection: \(answer.prefix(400))")
        }
        // Bare LF line ends and white space after a value are no NUL.
        XCTAssertTrue(try rawExchange(port: port, "GET /fast HTTP/1.1\nHost: x\nX-A: b  \nX-B: c\t\n\n").hasPrefix("HTTP/1.1 200 "))
        XCTAssertTrue(try rawExchange(port: port, "GET /fast HTTP/1.1\r\nHost: x \r\nX-A: b\r\nX-B:\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        // HTTP/1.0 needs no Host.
        XCTAssertTrue(try rawExchange(port: port, "GET /fast HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
    }

    /// Past 16 fields the names are indexed; a repeat is still found, and
    /// for the reason it is.
    func testARepeatedFieldAmongManyIsFoundForWhatItIs() throws {
        let others = { (range: ClosedRange<Int>) in range.map { "X-\($0): v\r\n" }.joined() }
        let cases: [(String, String)] = [
            ("GET /fast HTTP/1.1\r\nHost: x\r\n" + others(1...40) + "Host: y\r\n\r\n", "exactly one Host header, not 2"),
            (
                "GET /fast HTTP/1.1\r\n" + others(1...20) + "Host: x\r\n" + others(21...40)
                    + "Authorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n",
                "send one Authorization header"
            )
        ]
        for (request, reason) in cases {
            let answer = try rawExchange(port: server.port, request, timeout: 3)
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 400 "), String(answer.prefix(300)))
            XCTAssertTrue(answer.contains(reason), String(answer.prefix(600)))
        }
        let fine = try rawExchange(port: server.port, "GET /fast HTTP/1.1\r\n" + others(1...40) + "Host: x\r\n\r\n", timeout: 3)
        XCTAssertTrue(fine.hasPrefix("HTTP/1.1 200 "), String(fine.prefix(300)))
    }

    /// A server of its own with the default connection limits, answering `/fast`.
    private func connectionsServer() throws -> HTTPServer {
        var router = Router()
        router.get("/fast") { _ in .text("fast\n") }
        let server = HTTPServer(
            config: HTTPServerConfig(host: "127.0.0.1", port: 0), router: router, logger: Logger(component: "http-test", level: .error))
        try server.start()
        return server
    }

    /// Two addresses holding 500 idle connections each (the per-address
    /// limit, a school behind one NAT) under the default total of 1,000:
    /// another client is still answered at once, not after the idle ones
    /// time out, and the addresses keep most of their connections.
    func testTwoAddressesFillingTheLimitDoNotStarveAThird() async throws {
        let server = try connectionsServer()
        defer { Task { await server.shutdown(gracePeriod: .seconds(1)) } }
        var idle: [RawConnection] = []
        for index in 0..<1000 {
            idle.append(try RawConnection(port: server.port, from: index % 2 == 0 ? "127.0.0.90" : "127.0.0.91"))
        }
        // Until the server has taken them all in (its share is full).
        _ = try await eventually { server.connections.withLock { $0.count >= $0.fairShare } }
        // The third client gives up in half the time after which idle
        // connections close: an answer at all means it did not wait for them.
        let patience = HTTPServerConfig().receiveTimeout / 2
        let answer = try rawExchange(
            port: server.port, "GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout: patience.seconds)
        XCTAssertTrue(
            answer.hasPrefix("HTTP/1.1 200 "), "a third client waited for the idle connections to time out: \(answer.prefix(200))")
        let held = server.connections.withLock { ($0.count(of: "127.0.0.90"), $0.count(of: "127.0.0.91")) }
        XCTAssertGreaterThan(held.0 + held.1, 800, "the two addresses keep most of theirs: \(held)")
        withExtendedLifetime(idle) {}
    }

    /// One client holding its address's 500 connections idle (a school's
    /// NAT): another client behind the same address is answered every time,
    /// each new connection taking the place of the oldest idle one, and the
    /// address never holds more than its limit.
    func testIdleConnectionsAtAnAddresssLimitMakeRoomForAWorkingClient() async throws {
        let server = try connectionsServer()
        defer { Task { await server.shutdown(gracePeriod: .seconds(1)) } }
        var idle: [RawConnection] = []
        for _ in 0..<500 { idle.append(try RawConnection(port: server.port, from: "127.0.0.92")) }
        _ = try await eventually { server.connections.withLock { $0.count(of: "127.0.0.92") } >= 500 }
        var answered = 0
        for attempt in 1...40 {
            let connection = try RawConnection(port: server.port, from: "127.0.0.92")
            connection.send("GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let answer = connection.receive(timeout: 3)
            if answer.hasPrefix("HTTP/1.1 200 ") { answered += 1 } else { XCTFail("attempt \(attempt): \(answer.prefix(100))") }
        }
        XCTAssertEqual(answered, 40)
        // A socket shut down to make room counts until libmicrohttpd has closed it.
        _ = try await eventually(within: .seconds(5)) { server.connections.withLock { $0.count(of: "127.0.0.92") } <= 500 }
        XCTAssertLessThanOrEqual(server.connections.withLock { $0.count(of: "127.0.0.92") }, 500)
        withExtendedLifetime(idle) {}
    }

    /// libmicrohttpd 0.9.75 cannot answer while a body is arriving, so a
    /// chunk declared beyond the limit and never sent is answered 408 at the
    /// request deadline, as problem+json, not dropped in silence.
    /// A route that takes uploads takes bodies up to its own limit, and no
    /// more than `maxUploads` of them at once (refused before their bodies
    /// are read); every other route keeps the server's limit.
    func testAnUploadRouteTakesItsOwnLimitAndFewAtOnce() async throws {
        let body = String(repeating: "x", count: 20_000)
        let taken = try await fetch("POST", "\(base)/upload", body: body)
        XCTAssertEqual(taken.status, 200)
        XCTAssertEqual(taken.text, "20000\n")
        try await assertEqualAsync(try await fetch("POST", "\(base)/greetings", body: body).status, 413)
        let tooLarge = try await fetch("POST", "\(base)/upload", body: String(repeating: "x", count: 70_000))
        XCTAssertEqual(tooLarge.status, 413)
        XCTAssertTrue(tooLarge.text.contains("65536"), tooLarge.text)

        // Two uploads under way (their bodies not all sent): a third is 503 before its body.
        let head = "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n"
        let server = self.server!
        let uploading = try (0..<2).map { _ in try RawConnection(port: server.port) }
        for connection in uploading { XCTAssertTrue(connection.send(head + String(repeating: "x", count: 100))) }
        let held = try await eventually { server.uploads.load(ordering: .acquiring) == 2 }
        XCTAssertTrue(held, "both uploads' headers were read")
        let third = try rawExchange(port: server.port, head + body)
        XCTAssertTrue(third.hasPrefix("HTTP/1.1 503 "), third)
        XCTAssertTrue(third.contains("Retry-After: 10"), third)
        // The first finishes: its slot is free for the next.
        XCTAssertTrue(uploading[0].send(String(repeating: "x", count: 19_900)))
        XCTAssertTrue(uploading[0].receive().hasPrefix("HTTP/1.1 200 "))
        let next = try await eventually { try await fetch("POST", "\(self.base)/upload", body: body).status == 200 }
        XCTAssertTrue(next, "a slot came free")
    }

    func testABodyThatStopsArrivingIsAnswered408() throws {
        let connection = try RawConnection(port: server.port)
        connection.send(
            "POST /greetings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\nabc")
        let answer = connection.receive(timeout: 5)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 408 "), answer)
        XCTAssertTrue(answer.contains("application/problem+json"), answer)
    }

    /// An escaped NUL cannot cut a path or query value short.
    func testAnEscapedNULStaysInTheValue() async throws {
        let raw = try rawExchange(
            port: server.port, "GET /items/12%00abc/parts/%41?q=x%00y HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(raw.hasPrefix("HTTP/1.1 200 "), raw)
        let path = try await fetch("GET", "\(base)/items/12%00abc/parts/%41?q=x%00y")
        XCTAssertEqual(path.status, 200, path.text)
        XCTAssertEqual(path.object["id"]?.string, "12%00abc")
        XCTAssertEqual(path.object["part"]?.string, "A")
        XCTAssertEqual(path.object["q"]?.string, "x%00y")
    }

    /// The receive deadline runs on the service's timer: a request whose
    /// body never comes is answered 408 once the timer passes it, and not
    /// before, however long the test takes in real time.
    func testALateBodyIsAnswered408WhenTheServicesTimerPassesTheReceiveTimeout() async throws {
        let clock = ManualClock()
        var router = Router()
        router.add("POST", "/greetings") { request in .text("\(request.body.count)\n") }
        // libmicrohttpd's own idle timeout is the same 30 s, in real time: far beyond this test.
        let server = HTTPServer(
            config: HTTPServerConfig(host: "127.0.0.1", port: 0, maxBodySize: 1024, receiveTimeout: .seconds(30)),
            router: router, logger: Logger(component: "http-test", level: .error), timer: clock)
        try server.start()
        let connection = try RawConnection(port: server.port)
        XCTAssertTrue(connection.send("POST /greetings HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"))
        // Its headers are in (the time counts from there): the reaper waits for its period on the clock.
        _ = try await eventually { server.inFlight.load(ordering: .acquiring) == 1 }
        await clock.sleeps(atLeast: 1)
        // 29 s pass: not late yet.
        clock.advance(by: .seconds(29))
        await clock.sleeps(atLeast: 2)
        XCTAssertFalse(connection.closedByServer(within: 0.2), "closed before its receive timeout on the service's timer")
        clock.advance(by: .seconds(2))
        await clock.sleeps(atLeast: 3)
        let answer = connection.receive(timeout: 5)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 408 "), answer)
        await server.shutdown(gracePeriod: .zero)
    }

    /// libmicrohttpd's own timeout restarts with every byte; the server's
    /// deadline for a whole request does not.
    func testAClientTricklingItsHeadersIsDisconnected() throws {
        let connection = try RawConnection(port: server.port)
        connection.send("GET /fast HTTP/1.1\r\nHost: x\r\n")
        // One byte every 400 ms: closed before the 12th (4.8 s), by the 2 s deadline.
        var closed = false
        for _ in 0..<12 where connection.closedByServer(within: 0.4) || !connection.send("X") {
            closed = true
            break
        }
        XCTAssertTrue(closed, "a client trickling header bytes kept its connection")
        // A prompt client is served as before.
        XCTAssertTrue(
            try rawExchange(port: server.port, "GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
    }

    func testNonJSONBodyIs415() async throws {
        let reply = try await fetch(
            "POST", "\(base)/greetings", body: "name=a", headers: ["Content-Type": "application/x-www-form-urlencoded"])
        XCTAssertEqual(reply.status, 415)
    }

    /// The in-place check answers as the media type, lowercased and trimmed, would.
    func testJSONContentTypesAreRecognisedAsTheirMediaType() {
        let types: [String?] = [
            nil, "", "application/json", "Application/JSON", " application/json ; charset=utf-8", "application/json;",
            "\tapplication/json\t",
            "application/problem+json", "application/+json", "APPLICATION/VND.API+JSON; q=1", "application/jsonx", "application/json+x",
            "text/json", "application/", "application", "json", ";application/json", "application/x-www-form-urlencoded",
            "\u{a0}application/json", ";;application/json", "  ;application/json", "applicatİon/json", "application/ï+json",
            "application/json\u{301}"
        ]
        for type in types {
            let media = Request.mediaType(type)
            let expected = media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
            XCTAssertEqual(Request.isJSON(type), expected, "\(type.debugDescription)")
        }
        XCTAssertTrue(Request.isJSON(" application/json ; charset=utf-8"))
        XCTAssertFalse(Request.isJSON("application/jsonx"))
    }

    func testHandlerFailureIs500WithoutDetails() async throws {
        let reply = try await fetch("GET", "\(base)/boom")
        XCTAssertEqual(reply.status, 500)
        XCTAssertFalse(String(decoding: reply.body, as: UTF8.self).contains("CancellationError"))
    }

    /// 150 handlers waiting at once (on a backend the test holds) hold no
    /// thread of the server: a fast request is answered meanwhile, and all
    /// 150 answer once released.
    func testManySlowHandlersDoNotStarveOtherRequests() async throws {
        let slowCount = 150
        let (base, server) = (self.base, self.server!)
        async let slowReplies = withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<slowCount {
                group.addTask { try await fetch("GET", "\(base)/slow").status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        let allWaiting = try await eventually { server.inFlight.load(ordering: .acquiring) == slowCount }
        XCTAssertTrue(allWaiting, "the slow requests did not all reach their handlers at once")
        let fast = try await fetch("GET", "\(base)/fast")
        XCTAssertEqual(fast.status, 200, "a fast request waited behind slow ones")
        slowReleased.ring()
        let statuses = try await slowReplies
        XCTAssertEqual(statuses, Array(repeating: 200, count: slowCount))
    }

    func testShutdownLetsInFlightRequestsFinish() async throws {
        let base = self.base
        let server = self.server!
        async let slow = fetch("GET", "\(base)/slow")
        _ = try await eventually { server.inFlight.load(ordering: .acquiring) == 1 }
        async let stopped: Void = server.shutdown(gracePeriod: .seconds(30))
        // Released once the server drains: the request finishes during shutdown.
        _ = try await eventually { !server.lifecycle.withLock { $0.serving } }
        slowReleased.ring()
        await stopped
        let reply = try await slow
        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(String(decoding: reply.body, as: UTF8.self), "slow\n")
        do {
            _ = try await fetch("GET", "\(base)/fast")
            XCTFail("a stopped server answered")
        } catch {}
    }

    func testShutdownAnswers503AfterTheGracePeriodAndCancelsTheHandler() async throws {
        let base = self.base
        let server = self.server!
        async let stuck = fetch("GET", "\(base)/stuck")
        _ = try await eventually { server.inFlight.load(ordering: .acquiring) == 1 }
        await server.shutdown(gracePeriod: .milliseconds(300))
        let reply = try await stuck
        XCTAssertEqual(reply.status, 503)
        let stuckCancelledAt = self.stuckCancelledAt
        let cancelled = try await eventually(within: .seconds(2)) { stuckCancelledAt.value != nil }
        XCTAssertTrue(cancelled, "the handler still runs after its request was answered 503")
    }
}
