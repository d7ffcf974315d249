import Common
import CCurl

/// What became of one HTTP request.
public enum HTTPResult: Sendable, Equatable {
    /// The server answered: its status, its `Retry-After` header if any, and
    /// the start of its body.
    case answered(status: Int, retryAfter: String?, body: String)
    /// No answer: the connection failed or timed out.
    case unreachable(String)
}

/// POSTs over keep-alive connections, one request at a time. Redirects are
/// not followed. Not thread-safe: each dispatcher worker owns one.
public final class HTTPSession {
    private let curl: CurlHandle

    public init(timeout: Duration) throws(CurlError) {
        curl = try CurlHandle(protocols: "http,https", timeout: timeout)
        try curl.set(CURLOPT_FOLLOWLOCATION, 0)
    }

    public func post(_ url: String, headers: [(String, String)], body: [UInt8]) -> HTTPResult {
        // No `Expect: 100-continue`: it would wait a second for servers that never answer it.
        let list = CurlList(headers.map { "\($0.0): \($0.1)" } + ["Expect:"])
        do {
            try curl.set(CURLOPT_URL, url)
            try curl.set(CURLOPT_POST, 1)
            try curl.check(guidance_curl_set_offset(curl.handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            try curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_HTTPHEADER, list.list))
        } catch {
            return .unreachable(error.description)
        }
        curl.transfer.reset(upload: body)
        let failure = curl.perform()
        _ = try? curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_HTTPHEADER, nil))
        if let failure { return .unreachable(failure) }
        let retryAfter = curl.transfer.lines.last { $0.lowercased().hasPrefix("retry-after:") }
            .map { String($0.dropFirst("retry-after:".count)).trimmingWhitespace() }
        return .answered(status: curl.responseCode, retryAfter: retryAfter, body: String(decoding: curl.transfer.body, as: UTF8.self))
    }
}
