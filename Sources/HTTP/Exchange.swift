import CMicroHTTPD
import Common
import Foundation
import Synchronization

/// One request on one connection, from its first header to its completion.
/// libmicrohttpd holds it retained in the connection's `con_cls` until the
/// completion callback releases it; a running handler holds it too, and
/// touches the connection only while the connection is suspended.
///
/// Unchecked: `connection` is a C pointer, and `body`, `route` and `status`
/// are written only by libmicrohttpd's thread for this connection, before
/// the handler starts (body, route) or after it answered (status);
/// `phase` is what crosses threads, behind its lock.
final class Exchange: @unchecked Sendable {
    private enum Phase {
        case receiving
        /// The handler runs on libmicrohttpd's thread, not yet waiting.
        case running
        case suspended
        /// Resumed with an answer that the next access-handler call queues.
        case answered(Response)
        case queued
    }

    let connection: OpaquePointer
    let method: String
    let path: String
    let headers: HeaderFields
    let query: [String: String]
    let requestID: String
    /// Whatever makes the request unanswerable before its body is read.
    let problem: HTTPError?
    /// When its headers came, on the server's `uptime`.
    let started: Duration
    private(set) var body: [UInt8] = []
    private(set) var bodyTooLarge = false
    /// The most bytes the body may have: the server's `maxBodySize`, or
    /// more for a route that takes uploads.
    let bodyLimit: Int
    /// Holds one of the server's upload slots, given back when it completes.
    var holdsUpload = false
    /// The body's length as `Content-Length` declares it; 0 when it does not.
    let declaredLength: Int
    /// The peer's address (a small string: no allocation for IPv4).
    var peer: String { clientAddress(connection) }
    var route = "unmatched"
    var status = 0
    private let phase = Mutex(Phase.receiving)
    private let handler = Mutex<Task<Void, Never>?>(nil)

    init(
        connection: OpaquePointer, method: String, path: String, version: String, config: HTTPServerConfig, router: Router,
        started: Duration
    ) {
        self.started = started
        self.connection = connection
        self.method = method
        self.path = path
        let headers = Exchange.values(of: connection, kind: .HEADER_KIND, lowercased: true)
        // Counted first: most requests carry no query, and need no collection for it.
        let query =
            MHD_get_connection_values_n(connection, .GET_ARGUMENT_KIND, nil, nil) > 0
            ? Exchange.values(of: connection, kind: .GET_ARGUMENT_KIND, lowercased: false) : nil
        self.headers = headers.fields
        self.query = query.map { Dictionary($0.fields.list) { $1 } } ?? [:]
        requestID = Exchange.requestID(from: headers["x-request-id"])
        // Routes are matched here only for a body that may pass the
        // server's limit: the common small request is matched once, later.
        declaredLength = headers["content-length"].flatMap { Int($0) } ?? 0
        let large = headers["transfer-encoding"] != nil || declaredLength > config.maxBodySize
        bodyLimit = large ? max(config.maxBodySize, router.maxBody(method: method, path: path) ?? 0) : config.maxBodySize
        problem = Exchange.problem(
            path: path, version: version, headers: headers, queryBytes: query?.bytes ?? 0, bodyLimit: bodyLimit, config: config)
    }

    /// Answers decided from the request line and headers alone, sent before
    /// any body is read (libmicrohttpd then closes the connection).
    private static func problem(
        path: String, version: String, headers: Collected, queryBytes: Int, bodyLimit: Int, config: HTTPServerConfig
    ) -> HTTPError? {
        if headers.bytes > config.maxHeaderBytes {
            return HTTPError(status: 431, detail: "the request headers take more than \(config.maxHeaderBytes) bytes")
        }
        if let framing = framingProblem(version: version, headers: headers) { return framing }
        if path.utf8.count + queryBytes > config.maxURIBytes {
            return HTTPError(status: 414, detail: "the request target is longer than \(config.maxURIBytes) bytes")
        }
        if headers.repeated["authorization"] != nil {
            return .badRequest("send one Authorization header, not several")
        }
        if let lengths = headers.repeated["content-length"], Set(lengths).count > 1 {
            // RFC 9112 §6.3: a message with conflicting lengths is unrecoverable.
            return .badRequest("conflicting Content-Length headers")
        }
        if headers["content-length"] != nil && headers["transfer-encoding"] != nil {
            return .badRequest("send Content-Length or Transfer-Encoding, not both")
        }
        if let declared = headers["content-length"].flatMap({ Int($0) }), declared > bodyLimit {
            return HTTPError(status: 413, detail: "the body is larger than \(bodyLimit) bytes")
        }
        return nil
    }

    /// What RFC 9112 refuses and a proxy in front might read the other way
    /// (request smuggling). libmicrohttpd 0.9.75 passes these on: a name
    /// with whitespace before its colon (`Content-Length : 5`) keeps the
    /// whitespace, a bare CR stays in the value, and an obs-fold line is
    /// glued onto the field's name (`Transfer-Encoding:\r\n chunked` arrives
    /// as `Transfer-Encodingchunked`), so a name that starts with a framing
    /// field's name and goes on is one.
    private static func framingProblem(version: String, headers: Collected) -> HTTPError? {
        if let name = headers.malformedName {
            return .badRequest(
                "the header name \(quoted(name)) is malformed: no whitespace or control characters may come before its colon (RFC 9112 §5.1)"
            )
        }
        if let name = headers.foldedName {
            return .badRequest(
                "the header \(quoted(name)) is malformed: a line folded onto the previous one (obs-fold) is refused (RFC 9112 §5.2)")
        }
        if headers.controlInValue {
            return .badRequest("a header value holds a CR, LF or NUL character (RFC 9112 §2.2)")
        }
        if version == "HTTP/1.1" {
            let hosts = (headers.repeated["host"]?.count ?? (headers["host"] == nil ? 0 : 1))
            if hosts != 1 {
                return .badRequest("an HTTP/1.1 request carries exactly one Host header, not \(hosts) (RFC 9112 §3.2)")
            }
        }
        // libmicrohttpd reads the first Transfer-Encoding and `headers` the
        // last: with two, the check and the parser would frame the body
        // differently, and what follows would be read as another request.
        if let codings = headers.repeated["transfer-encoding"] {
            return .badRequest("send one Transfer-Encoding header, not \(codings.count) (RFC 9112 §6.1)")
        }
        if let coding = headers["transfer-encoding"] {
            let codings = coding.lowercased().split(separator: ",").map { $0.trimmingWhitespace() }
            // RFC 9112 §6.3: without chunked last, the body's end cannot be found (400);
            // chunked after another coding is a request this server does not implement (501).
            if codings.last != "chunked" {
                return .badRequest("the body's length cannot be determined: Transfer-Encoding must end with chunked (RFC 9112 §6.3)")
            }
            if codings.count > 1 {
                return HTTPError(
                    status: 501,
                    detail:
                        "the transfer coding '\(coding)' is not supported; send the body with Content-Length or Transfer-Encoding: chunked")
            }
        }
        return nil
    }

    private static let framingFields: [[UInt8]] = ["transfer-encoding", "content-length", "host"].map { Array($0.utf8) }

    /// Whether a (lowercased) name starts with a framing field's name and goes on.
    private static func isFolded(_ name: String) -> Bool {
        let bytes = name.utf8
        return framingFields.contains { field in bytes.count > field.count && bytes.starts(with: field) }
    }

    /// RFC 9110 §5.6.2 `token`: the characters a field name may have.
    private static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case 0x30...0x39, 0x41...0x5a, 0x61...0x7a: true
                // ! # $ % & ' * + - . ^ _ ` | ~
                case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2a, 0x2b, 0x2d, 0x2e, 0x5e, 0x5f, 0x60, 0x7c, 0x7e: true
                default: false
                }
            }
    }

    /// A name as it can be shown in an answer: control characters escaped.
    private static func quoted(_ name: String) -> String {
        "'" + name.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
            + "'"
    }

    /// Called with each body chunk on libmicrohttpd's thread; past `limit`
    /// the rest is read and dropped so the client gets its 413.
    func append(_ chunk: UnsafeRawBufferPointer, limit: Int) {
        guard !bodyTooLarge else { return }
        if body.count + chunk.count > limit {
            bodyTooLarge = true
            body = []
        } else {
            body.append(contentsOf: chunk)
        }
    }

    /// The task running this request's handler, kept to cancel it when the
    /// server stops before it answered.
    func handle(_ task: Task<Void, Never>) {
        handler.withLock { $0 = task }
    }

    /// Cancels the handler's task: its waits (a Kafka acknowledgement, a
    /// sleep) end early; whatever it answers then is dropped.
    func cancelHandler() {
        handler.withLock { $0 }?.cancel()
    }

    /// The handler starts; until it answers, shutdown can answer for it.
    func begin(in server: HTTPServer) {
        phase.withLock { $0 = .running }
        server.unanswered.withLock { $0[ObjectIdentifier(self)] = self }
    }

    /// The answer, if the handler gave it without waiting; otherwise suspends
    /// the connection until `finish` resumes it. Suspending under the lock
    /// keeps a `finish` on another thread from resuming it before.
    func suspendUnlessAnswered() -> Response? {
        phase.withLock { phase in
            if case .answered(let response) = phase {
                phase = .queued
                return response
            }
            phase = .suspended
            MHD_suspend_connection(connection)
            return nil
        }
    }

    /// Gives the handler's answer, once: a suspended connection is resumed
    /// to send it. `force` is the shutdown path, which already took the
    /// exchange out of the server's set.
    func finish(_ response: Response, in server: HTTPServer? = nil, force: Bool = false) {
        if let server, !force {
            let present = server.unanswered.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) != nil }
            // Shutdown took it and answers for it.
            guard present else { return }
        }
        let resume = phase.withLock { phase -> Bool in
            switch phase {
            case .running:
                phase = .answered(response)
                return false
            case .suspended:
                phase = .answered(response)
                return true
            default:
                return false
            }
        }
        if resume { MHD_resume_connection(connection) }
    }

    /// The answer a resumed connection is waiting to send, taken once.
    func takeAnswer() -> Response? {
        phase.withLock { phase in
            guard case .answered(let response) = phase else { return nil }
            phase = .queued
            return response
        }
    }

    /// Queues `response` on the connection; only from the access handler.
    func queue(_ response: Response) -> MHD_Result {
        status = response.status
        let mhdResponse = response.stream.map(Exchange.mhdResponse(streaming:)) ?? Exchange.mhdResponse(response.body)
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for (name, value) in response.headers {
            Exchange.add(name, value, to: mhdResponse)
        }
        Exchange.add("X-Request-Id", requestID, to: mhdResponse)
        // Unless the handler said otherwise: no answer is sniffed for another
        // type, and API answers, which carry students' names, are not stored
        // by any cache.
        func named(_ name: String) -> Bool { response.headers.contains { asciiEqualIgnoringCase($0.0, name) } }
        if !named("x-content-type-options") {
            Exchange.add("X-Content-Type-Options", "nosniff", to: mhdResponse)
        }
        if path.hasPrefix("/v1/") && !named("cache-control") {
            Exchange.add("Cache-Control", "no-store", to: mhdResponse)
        }
        phase.withLock { $0 = .queued }
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    /// Bodies up to this size are copied into the response (one small
    /// copy, the fast path of every POST); larger ones (a busy school's
    /// list, an export) are read from the array as they are sent, not held
    /// twice.
    static let copiedBodyLimit = 64 * 1024

    private static func mhdResponse(_ body: [UInt8]) -> OpaquePointer? {
        guard body.count > copiedBodyLimit else {
            return body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        let sent = Unmanaged.passRetained(SentBody(body)).toOpaque()
        let response = MHD_create_response_from_callback(
            UInt64(body.count), copiedBodyLimit,
            { context, position, buffer, room in
                guard let context, let buffer else { return -1 }
                return Unmanaged<SentBody>.fromOpaque(context).takeUnretainedValue().read(from: Int(position), into: buffer, room: room)
            }, sent, { context in context.map { Unmanaged<SentBody>.fromOpaque($0).release() } })
        if response == nil { Unmanaged<SentBody>.fromOpaque(sent).release() }
        return response
    }

    /// A body of unknown length, sent chunked as its stream gives it.
    private static func mhdResponse(streaming stream: BodyStream) -> OpaquePointer? {
        let sent = Unmanaged.passRetained(StreamedBody(stream)).toOpaque()
        let response = MHD_create_response_from_callback(
            UInt64.max, copiedBodyLimit,  // MHD_SIZE_UNKNOWN
            { context, _, buffer, room in
                guard let context, let buffer else { return -1 }
                return Unmanaged<StreamedBody>.fromOpaque(context).takeUnretainedValue().read(into: buffer, room: room)
            }, sent, { context in context.map { Unmanaged<StreamedBody>.fromOpaque($0).release() } })
        if response == nil { Unmanaged<StreamedBody>.fromOpaque(sent).release() }
        return response
    }

    /// A stream being sent: the piece under way and how much of it went.
    private final class StreamedBody {
        let stream: BodyStream
        var piece: [UInt8] = []
        var offset = 0

        init(_ stream: BodyStream) { self.stream = stream }

        /// Copies what fits in `room` from the pieces in turn; -1 once they
        /// are over (`MHD_CONTENT_READER_END_OF_STREAM`).
        func read(into buffer: UnsafeMutablePointer<CChar>, room: Int) -> Int {
            var copied = 0
            while copied < room {
                if offset == piece.count {
                    guard let next = stream.piece() else { break }
                    (piece, offset) = (next, 0)
                    continue
                }
                let count = min(room - copied, piece.count - offset)
                piece.withUnsafeBytes { source in
                    if let start = source.baseAddress {
                        UnsafeMutableRawPointer(buffer + copied).copyMemory(from: start + offset, byteCount: count)
                    }
                }
                (copied, offset) = (copied + count, offset + count)
            }
            return copied > 0 ? copied : -1
        }
    }

    /// A large body, kept until the server has sent it (its free callback).
    private final class SentBody {
        let bytes: [UInt8]

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// Copies what fits in `room` from `position` on; -1 at the end (`MHD_CONTENT_READER_END_OF_STREAM`).
        func read(from position: Int, into buffer: UnsafeMutablePointer<CChar>, room: Int) -> Int {
            guard position < bytes.count else { return -1 }
            let count = min(room, bytes.count - position)
            return bytes.withUnsafeBytes { source in
                guard let start = source.baseAddress else { return -1 }
                UnsafeMutableRawPointer(buffer).copyMemory(from: start + position, byteCount: count)
                return count
            }
        }
    }

    /// `withCString`, not a `String` passed as a C string: that conversion
    /// copies the text into a new array each time.
    private static func add(_ name: String, _ value: String, to response: OpaquePointer) {
        name.withCString { name in
            value.withCString { value in _ = MHD_add_response_header(response, name, value) }
        }
    }

    private static func requestID(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128,
            header.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f })
        {
            return header
        }
        return idPrefix + String(nextID.add(1, ordering: .relaxed).newValue, radix: 16)
    }

    /// Ids for requests that bring none: a counter behind this process's
    /// random prefix (so that replicas and restarts are unlikely to repeat
    /// one), without a system call for randomness per request.
    private static let idPrefix = String(UInt32.random(in: .min ... .max), radix: 16) + "-"
    private static let nextID = Atomic<UInt64>(0)

    private final class Collected {
        /// Names and values in the order sent.
        private(set) var fields = HeaderFields()
        /// Every value of a name sent more than once.
        var repeated: [String: [String]] = [:]
        /// The first name that is not a token (whitespace before its colon, a
        /// control character), and the first that starts with a framing
        /// field's name and goes on (an obs-fold glued onto it).
        var malformedName: String?
        var foldedName: String?
        /// Whether a value holds CR, LF or NUL.
        var controlInValue = false
        /// Names and values, in bytes.
        var bytes = 0
        let lowercased: Bool
        init(lowercased: Bool) {
            self.lowercased = lowercased
            // A browser sends about a dozen headers; one allocation for them.
            if lowercased { fields.reserveCapacity(16) }
        }

        /// Where the previous value's line would go on if the byte after its
        /// end was not a line end: the next field's name must start there.
        private var lineGoesOn: UnsafePointer<CChar>?

        /// libmicrohttpd 0.9.75 measures a value with `strlen`, so a NUL sent
        /// inside it ends it there and the rest of the line is never seen
        /// (its sized iterator gives the same length). The value lies in the
        /// request's read buffer, where libmicrohttpd wrote a NUL over the
        /// line's CR and LF (and over trailing white space): past that NUL
        /// and any white space, a line that really ended shows another NUL,
        /// a CR or LF (the empty line), or the next field's name (a bare LF
        /// line end). Anything else is the rest of a line cut by a NUL.
        func checkLineEnd(key: UnsafePointer<CChar>, value: UnsafePointer<CChar>?, count: Int) {
            if let expected = lineGoesOn, expected != key { controlInValue = true }
            lineGoesOn = nil
            guard let value else { return }
            var next = value + count + 1
            while next.pointee == 0x20 || next.pointee == 0x09 { next += 1 }
            if next.pointee != 0 && next.pointee != 0x0d && next.pointee != 0x0a { lineGoesOn = next }
        }

        /// After the last field: a line still going on was cut by a NUL.
        func finish() {
            if lineGoesOn != nil { controlInValue = true }
        }

        /// The last value sent for `name`.
        subscript(name: String) -> String? { fields[name] }

        func append(_ name: String, _ value: String) { fields.append(name, value) }
    }

    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind, lowercased: Bool) -> Collected {
        let collected = Collected(lowercased: lowercased)
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values_n(connection, kind, collectValue, Unmanaged.passUnretained(collected).toOpaque())
            if lowercased { collected.finish() }
        }
        return collected
    }

    // Called synchronously inside MHD_get_connection_values_n, while `values`
    // keeps the box alive. The sized form: a NUL inside a value would end
    // the C string early and hide the rest of the value from the checks.
    private static let collectValue: MHD_KeyValueIteratorN = { context, _, key, keySize, value, valueSize in
        guard let context, let key else { return .YES }
        let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
        let name = collected.lowercased ? asciiLowercased(key, count: keySize) : utf8String(key, count: keySize)
        let text = value.map { utf8String($0, count: valueSize) } ?? ""
        collected.bytes += name.utf8.count + text.utf8.count + 4
        if collected.lowercased {
            collected.checkLineEnd(key: key, value: value, count: valueSize)
            if collected.malformedName == nil && !isToken(name) { collected.malformedName = name }
            if collected.foldedName == nil && isFolded(name) { collected.foldedName = name }
            if !collected.controlInValue && text.utf8.contains(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0 }) {
                collected.controlInValue = true
            }
        }
        if let previous = collected[name] {
            collected.repeated[name, default: [previous]].append(text)
        }
        collected.append(name, text)
        return .YES
    }
}

// libmicrohttpd calls this on its threads: for the headers, for each body
// chunk, once the body is complete, and again after a resume.
func accessHandler(
    _ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadSize: UnsafeMutablePointer<Int>?, _ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let context, let connection, let slot, let uploadSize else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    guard let stored = slot.pointee else {
        let exchange = Exchange(
            connection: connection, method: method.map { String(cString: $0) } ?? "GET",
            path: url.map { String(cString: $0) } ?? "/", version: version.map { String(cString: $0) } ?? "HTTP/1.1", config: server.config,
            router: server.router, started: server.uptime.now)
        slot.pointee = Unmanaged.passRetained(exchange).toOpaque()
        server.inFlight.add(1, ordering: .acquiringAndReleasing)
        guard let problem = exchange.problem ?? server.uploadProblem(exchange) else {
            server.headersReceived(connection, declaredBody: exchange.holdsUpload ? exchange.declaredLength : 0)
            return .YES
        }
        server.received(connection)
        return exchange.queue(problem.response)
    }
    let exchange = Unmanaged<Exchange>.fromOpaque(stored).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        exchange.append(UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee), limit: exchange.bodyLimit)
        uploadSize.pointee = 0
        return .YES
    }
    if let answer = exchange.takeAnswer() {
        return exchange.queue(answer)
    }
    server.received(connection)
    return server.dispatch(exchange)
}

// Called by libmicrohttpd once a request is done (answered, failed or
// abandoned); releases the exchange retained in `con_cls`.
func completedHandler(
    _ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ reason: MHD_RequestTerminationCode
) {
    guard let context, let slot, let stored = slot.pointee else { return }
    slot.pointee = nil
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    let exchange = Unmanaged<Exchange>.fromOpaque(stored).takeRetainedValue()
    server.complete(exchange, reason: reason)
    // The connection may carry another request: its clock starts now.
    if let connection { server.receiving(connection) }
}

// Called by libmicrohttpd when a connection opens and when it closes.
func connectionHandler(
    _ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
    guard let context, let connection else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    if code == .CONNECTION_NOTIFY_STARTED {
        server.opened(connection)
    } else {
        server.closed(connection)
    }
}

/// The connection's peer address (a small string: no allocation for IPv4).
func clientAddress(_ connection: OpaquePointer) -> String {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { text in
        guard let base = text.baseAddress, guidance_mhd_client_address(connection, base, 64) != 0 else { return "" }
        return String(cString: base)
    }
}

/// A header name with A-Z lowered, other bytes as they are: names are ASCII
/// tokens (anything else is refused as malformed), and `lowercased()` went
/// through Unicode case mapping for each header of each request.
fileprivate func asciiLowercased(_ text: UnsafePointer<CChar>, count length: Int) -> String {
    text.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        String(unsafeUninitializedCapacity: length) { buffer in
            for index in 0..<length {
                let byte = bytes[index]
                buffer[index] = byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte
            }
            return length
        }
    }
}

/// `count` bytes from `text` as UTF-8, NULs included.
fileprivate func utf8String(_ text: UnsafePointer<CChar>, count: Int) -> String {
    text.withMemoryRebound(to: UInt8.self, capacity: count) {
        String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
    }
}

/// Whether two header names are equal, A-Z and a-z alike.
fileprivate func asciiEqualIgnoringCase(_ name: String, _ lowercase: String) -> Bool {
    name.utf8.elementsEqual(lowercase.utf8) { ($0 >= 0x41 && $0 <= 0x5a ? $0 | 0x20 : $0) == $1 }
}
