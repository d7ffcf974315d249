import CCurl
import Common

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
    let transfer = Transfer()
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

        func reset(upload bytes: [UInt8], bodyLimit limit: Int = 1024) {
            upload = bytes
            uploaded = 0
            lines = []
            body = []
            bodyLimit = limit
        }
    }

    init(protocols: String, timeout: Duration) throws(CurlError) {
        guard CurlHandle.initialized, let handle = curl_easy_init() else {
            throw CurlError("libcurl could not be initialised")
        }
        self.handle = handle
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let milliseconds = Int(timeout.milliseconds)
        try set(CURLOPT_PROTOCOLS_STR, protocols)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_TIMEOUT_MS, milliseconds)
        try set(CURLOPT_CONNECTTIMEOUT_MS, min(milliseconds, 5000))
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
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
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
        let detail = String(cString: errorBuffer)
        return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }

    var responseCode: Int {
        var code = 0
        _ = guidance_curl_response_code(handle, &code)
        return code
    }
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

private func curlHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlHandle.Transfer>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: "\r\n")
    if !line.isEmpty { transfer.lines.append(line) }
    return size * count
}

private func curlWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlHandle.Transfer>.fromOpaque(context).takeUnretainedValue()
    let room = max(0, transfer.bodyLimit - transfer.body.count)
    transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: min(room, size * count)))
    return size * count
}

private func curlRead(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let buffer, let context else { return 0 }
    let transfer = Unmanaged<CurlHandle.Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = min(size * count, transfer.upload.count - transfer.uploaded)
    // An empty upload has no base address: nothing to copy.
    guard length > 0 else { return 0 }
    transfer.upload.withUnsafeBytes { source in
        guard let start = source.baseAddress else { return }
        UnsafeMutableRawPointer(buffer).copyMemory(from: start + transfer.uploaded, byteCount: length)
    }
    transfer.uploaded += length
    return length
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
