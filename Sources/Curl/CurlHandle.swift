import CCurl
import Common
import Foundation
import Synchronization

/// One libcurl easy handle and what a transfer over it collects. libcurl keeps
/// the handle's connection open between transfers, so a session that sends
/// many messages opens one connection (closed by libcurl after an error, or
/// after `maxIdle` unused). Not thread-safe: one transfer at a time.
final class CurlHandle {
    /// curl_global_init is not thread-safe; a static let runs it once.
    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    let handle: UnsafeMutableRawPointer
    /// What the transfer in progress sends and has received. The handle's
    /// callbacks get it through an unretained pointer: it lives as long as
    /// the handle, which outlives every transfer.
    let transfer: Transfer
    /// libcurl writes a failure's details here; allocated so that it never moves.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    final class Transfer {
        var upload: [UInt8] = []
        var uploaded = 0
        /// Header lines, or an SMTP server's reply lines.
        var lines: [String] = []
        var body: [UInt8] = []
        /// The body is cut here: by default only the start is kept, for an
        /// error message.
        var bodyLimit = 1024
        /// The system's time, as libcurl's own timeouts: moments of the transfer are read on it.
        let uptime: Uptime
        var started: Duration
        /// When libcurl took the last byte of `upload` (its read callback
        /// found nothing more): what remains is the server's answer.
        var uploadedAt: Duration?
        /// Why the progress callback stopped the transfer, if it did.
        var stopped: String?
        /// The whole transfer's limit, up to `uploadedAt` when `answerLimit` is set.
        let limit: Duration
        /// How long the answer may take once the upload is handed over, if
        /// not bounded by `limit` (SMTP's reply to the final dot).
        let answerLimit: Duration?
        /// Set from another thread to stop the transfer under way (shutdown).
        let cancellation: CurlCancellation

        init(limit: Duration, answerLimit: Duration?, cancellation: CurlCancellation) {
            uptime = Uptime()
            started = uptime.now
            self.limit = limit
            self.answerLimit = answerLimit
            self.cancellation = cancellation
        }

        func reset(upload bytes: [UInt8], bodyLimit limit: Int = 1024) {
            upload = bytes
            uploaded = 0
            lines = []
            body = []
            bodyLimit = limit
            started = uptime.now
            uploadedAt = nil
            stopped = nil
        }

        /// Why the transfer must stop now, if it must (the progress callback).
        func reasonToStop(at now: Duration) -> String? {
            if cancellation.isCancelled { return "stopped: the service is shutting down" }
            guard let answerLimit else { return nil }
            if let uploadedAt {
                return now - uploadedAt > answerLimit ? "no answer within \(Int(answerLimit.seconds)) s of the whole message" : nil
            }
            return now - started > limit ? "timed out after \(Int(limit.seconds)) s" : nil
        }
    }

    /// `timeout` bounds a whole transfer, connection included; with
    /// `answerLimit`, it bounds the transfer up to the last byte sent, and
    /// the answer then has `answerLimit`.
    init(protocols: String, timeout: Duration, answerLimit: Duration? = nil, cancellation: CurlCancellation = CurlCancellation())
        throws(CurlError)
    {
        guard CurlHandle.initialized, let handle = curl_easy_init() else {
            throw CurlError("libcurl could not be initialised")
        }
        self.handle = handle
        transfer = Transfer(limit: timeout, answerLimit: answerLimit, cancellation: cancellation)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let milliseconds = Int(timeout.milliseconds)
        try set(CURLOPT_PROTOCOLS_STR, protocols)
        try set(CURLOPT_NOSIGNAL, 1)
        // With an answer limit the progress callback keeps both limits;
        // libcurl's own is only the sum of the two.
        try set(CURLOPT_TIMEOUT_MS, milliseconds + Int(answerLimit?.milliseconds ?? 0))
        try set(CURLOPT_CONNECTTIMEOUT_MS, min(milliseconds, 5000))
        // How long libcurl waits for any one reply (FTP, SMTP): by default
        // 120 s, which would cut the wait for SMTP's final reply short. The
        // progress callback keeps the tighter limit until the upload is done.
        try set(CURLOPT_SERVER_RESPONSE_TIMEOUT, Int((answerLimit ?? timeout).components.seconds) + 1)
        // A connection unused this long is not reused: servers close idle
        // sessions, and a send on a closed one would fail for nothing.
        try set(CURLOPT_MAXAGE_CONN, 10)
        try check(guidance_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        try check(guidance_curl_set_pointer(handle, CURLOPT_HEADERDATA, context))
        try check(guidance_curl_set_callback(handle, CURLOPT_HEADERFUNCTION, curlHeader))
        try check(guidance_curl_set_pointer(handle, CURLOPT_WRITEDATA, context))
        try check(guidance_curl_set_callback(handle, CURLOPT_WRITEFUNCTION, curlWrite))
        try check(guidance_curl_set_pointer(handle, CURLOPT_READDATA, context))
        try check(guidance_curl_set_callback(handle, CURLOPT_READFUNCTION, curlRead))
        try check(guidance_curl_set_progress(handle, curlProgress, context))
    }

    deinit {
        // Cleanup says goodbye on an open connection (SMTP's QUIT) and waits
        // for the answer: after a cancel, a server that hangs would hold the
        // shutdown. Shut the socket down first (libcurl still closes it).
        if transfer.cancellation.isCancelled {
            let socket = guidance_curl_active_socket(handle)
            if socket >= 0 { Glibc.shutdown(socket, Int32(SHUT_RDWR)) }
        }
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Connects only to public addresses (`PublicAddress`), checked for
    /// each address libcurl is about to connect to, after its own name
    /// resolution: a name that resolved to a public address a moment ago
    /// and to the service's own network now is refused all the same.
    /// `loopback` lets 127.0.0.0/8 and ::1 through (the tests' services).
    func connectOnlyToPublicAddresses(loopback: Bool) throws(CurlError) {
        try check(guidance_curl_set_opensocket(handle, curlOpenSocket, loopback ? UnsafeMutableRawPointer(bitPattern: 1) : nil))
    }

    func set(_ option: CURLoption, _ value: Int) throws(CurlError) {
        try check(guidance_curl_set_long(handle, option, value))
    }

    /// libcurl copies string options, so the Swift string need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws(CurlError) {
        try check(value.withCString { guidance_curl_set_pointer(handle, option, $0) })
    }

    func check(_ code: CURLcode) throws(CurlError) {
        guard code == CURLE_OK else { throw CurlError(String(cString: curl_easy_strerror(code))) }
    }

    /// Runs one transfer; nil when it completed, else libcurl's reason.
    func perform() -> String? {
        errorBuffer[0] = 0
        let code = curl_easy_perform(handle)
        guard code != CURLE_OK else { return nil }
        if code == CURLE_ABORTED_BY_CALLBACK, let reason = transfer.stopped { return reason }
        let detail = String(cString: errorBuffer)
        return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }

    var responseCode: Int {
        var code = 0
        _ = guidance_curl_response_code(handle, &code)
        return code
    }
}

/// Stops a handle's transfer under way within about a second (libcurl's
/// progress callback), and every later one: for a shutdown. Any thread may
/// cancel.
package final class CurlCancellation: Sendable {
    private let cancelled = Atomic<Bool>(false)

    package init() {}

    package func cancel() { cancelled.store(true, ordering: .relaxed) }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }
}

/// A list of strings libcurl reads during a transfer; freed after it.
final class CurlList {
    private(set) var list: UnsafeMutablePointer<curl_slist>?

    init(_ items: [String]) {
        for item in items {
            list = curl_slist_append(list, item)
        }
    }

    deinit {
        curl_slist_free_all(list)
    }
}

// libcurl's callbacks: each hands bytes to the handle's `Transfer` and nothing else.

/// A socket for an address `PublicAddress` allows, else none (libcurl then
/// tries the name's next address, and fails with "couldn't connect").
fileprivate func curlOpenSocket(
    _ context: UnsafeMutableRawPointer?, _ purpose: curlsocktype, _ target: UnsafeMutablePointer<curl_sockaddr>?
)
    -> curl_socket_t
{
    guard let target, let offset = MemoryLayout<curl_sockaddr>.offset(of: \.addr) else { return -1 }
    // The address is as long as `addrlen` says (an IPv6 one is longer than the field's `sockaddr`).
    let address = (UnsafeRawPointer(target) + offset).assumingMemoryBound(to: sockaddr.self)
    guard PublicAddress.allows(address, loopback: context != nil) else { return -1 }
    return socket(target.pointee.family, target.pointee.socktype, target.pointee.protocol)
}

fileprivate func curlHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlHandle.Transfer>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: "\r\n")
    if !line.isEmpty { transfer.lines.append(line) }
    return size * count
}

fileprivate func curlWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlHandle.Transfer>.fromOpaque(context).takeUnretainedValue()
    let room = max(0, transfer.bodyLimit - transfer.body.count)
    transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: min(room, size * count)))
    return size * count
}

fileprivate func curlRead(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let buffer, let context else { return 0 }
    let transfer = Unmanaged<CurlHandle.Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = min(size * count, transfer.upload.count - transfer.uploaded)
    // An empty upload has no base address: nothing to copy.
    guard length > 0 else {
        if transfer.uploadedAt == nil { transfer.uploadedAt = transfer.uptime.now }
        return 0
    }
    transfer.upload.withUnsafeBytes { source in
        guard let start = source.baseAddress else { return }
        UnsafeMutableRawPointer(buffer).copyMemory(from: start + transfer.uploaded, byteCount: length)
    }
    transfer.uploaded += length
    return length
}

fileprivate func curlProgress(_ context: UnsafeMutableRawPointer?, _: curl_off_t, _: curl_off_t, _: curl_off_t, _: curl_off_t) -> Int32 {
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlHandle.Transfer>.fromOpaque(context).takeUnretainedValue()
    guard let reason = transfer.reasonToStop(at: transfer.uptime.now) else { return 0 }
    transfer.stopped = reason
    return 1
}

extension String {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        var scalars = Substring(self).unicodeScalars
        while let last = scalars.last, characters.unicodeScalars.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}

/// A transfer libcurl could not set up.
package struct CurlError: Error, CustomStringConvertible, Sendable {
    package let description: String

    init(_ description: String) {
        self.description = description
    }
}
