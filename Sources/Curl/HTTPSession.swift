import CCurl
import Common

/// What became of one HTTP request.
package enum HTTPResult: Sendable, Equatable {
    /// The server answered: its status, its `Retry-After` header if any, and
    /// the start of its body.
    case answered(status: Int, retryAfter: String?, body: String)
    /// No answer: the connection failed or timed out.
    case unreachable(String)
}

/// POSTs and GETs over keep-alive connections, one request at a time.
/// Redirects are not followed. Not thread-safe: each dispatcher worker owns one.
package final class HTTPSession {
    private let curl: CurlHandle
    /// Stops the request under way (a shutdown): it ends `unreachable`.
    package let cancellation = CurlCancellation()

    /// Where a session may connect: anywhere (a school's webhook, which the
    /// operator wrote), or only over https to public addresses (a push
    /// endpoint, which a browser named), loopback over http too for the
    /// tests' push service.
    package enum Destinations: Sendable {
        case any
        case publicHTTPS
        case publicOrLoopback
    }

    package init(timeout: Duration, destinations: Destinations = .any) throws(CurlError) {
        curl = try CurlHandle(
            protocols: destinations == .publicHTTPS ? "https" : "http,https", timeout: timeout, cancellation: cancellation)
        try curl.set(CURLOPT_FOLLOWLOCATION, 0)
        if destinations != .any { try curl.connectOnlyToPublicAddresses(loopback: destinations == .publicOrLoopback) }
    }

    package func post(_ url: String, headers: [(String, String)], body: [UInt8]) -> HTTPResult {
        send("POST", url, headers: headers, body: body, maxBody: nil)
    }

    /// A request with a body (`POST`, or `DELETE` with an empty one): the
    /// answer's body kept whole up to `maxBody` bytes (longer is
    /// `unreachable`), or only its start when nil.
    package func send(_ method: String, _ url: String, headers: [(String, String)], body: [UInt8], maxBody: Int?) -> HTTPResult {
        // No `Expect: 100-continue`: it would wait a second for servers that never answer it.
        let list = CurlList(headers.map { "\($0.0): \($0.1)" } + ["Expect:"])
        do {
            try curl.set(CURLOPT_URL, url)
            try curl.set(CURLOPT_POST, 1)
            // libcurl copies the method; POST is CURLOPT_POST's own.
            if method != "POST" { try curl.set(CURLOPT_CUSTOMREQUEST, method) }
            try curl.check(guidance_curl_set_offset(curl.handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            try curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_HTTPHEADER, list.list))
        } catch {
            return .unreachable(error.description)
        }
        curl.transfer.reset(upload: body, bodyLimit: maxBody.map { $0 + 1 } ?? 1024)
        // The header list must outlive the transfer.
        let result = withExtendedLifetime(list) { perform() }
        guard let maxBody, curl.transfer.body.count > maxBody else { return result }
        return .unreachable("the answer is longer than \(maxBody) bytes")
    }

    /// GETs `url`; the body is kept whole up to `maxBody` bytes (an answer
    /// longer than that is `unreachable`, never cut short).
    package func get(_ url: String, headers: [(String, String)], maxBody: Int) -> HTTPResult {
        let list = CurlList(headers.map { "\($0.0): \($0.1)" })
        do {
            try curl.set(CURLOPT_URL, url)
            try curl.set(CURLOPT_HTTPGET, 1)
            try curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_HTTPHEADER, list.list))
        } catch {
            return .unreachable(error.description)
        }
        curl.transfer.reset(upload: [], bodyLimit: maxBody + 1)
        let result = withExtendedLifetime(list) { perform() }
        guard curl.transfer.body.count <= maxBody else { return .unreachable("the answer is longer than \(maxBody) bytes") }
        return result
    }

    /// Runs the request set up, then unsets its header list and method.
    private func perform() -> HTTPResult {
        let failure = curl.perform()
        _ = try? curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_HTTPHEADER, nil))
        _ = try? curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_CUSTOMREQUEST, nil))
        if let failure { return .unreachable(failure) }
        let retryAfter = curl.transfer.lines.last { $0.lowercased().hasPrefix("retry-after:") }
            .map { String($0.dropFirst("retry-after:".count)).trimmingWhitespace() }
        return .answered(status: curl.responseCode, retryAfter: retryAfter, body: String(decoding: curl.transfer.body, as: UTF8.self))
    }
}
