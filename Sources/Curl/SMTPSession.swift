import CCurl

/// How an SMTP server is reached (`SMTP_URL`, `SMTP_STARTTLS`,
/// `SMTP_USERNAME`, `SMTP_PASSWORD`).
package struct SMTPServer: Sendable, Equatable {
    package enum StartTLS: String, Sendable, CaseIterable {
        case off, opportunistic, required
    }

    /// `smtp://host:port` or `smtps://host:port`.
    package var url: String
    package var startTLS: StartTLS
    package var username: String?
    package var password: String?
    /// Most time one message may take, connection included.
    package var timeout: Duration

    package init(url: String, startTLS: StartTLS = .opportunistic, username: String? = nil, password: String? = nil, timeout: Duration = .seconds(30)) {
        self.url = url
        self.startTLS = startTLS
        self.username = username
        self.password = password
        self.timeout = timeout
    }
}

/// What became of one message.
package enum SMTPResult: Sendable, Equatable {
    /// The server took the message (250 after DATA).
    case accepted
    /// The server answered a command with an error: `code` is its reply code
    /// (4xx transient, 5xx permanent) and `reply` its text.
    case refused(code: Int, reply: String)
    /// No answer: the connection failed, timed out, or TLS could not be set up.
    case unreachable(String)
}

/// One SMTP session: sends messages one after another over one connection,
/// opened on the first message and reopened by libcurl when it was lost.
/// Not thread-safe: each dispatcher worker owns one.
package final class SMTPSession {
    private let curl: CurlHandle
    private let server: SMTPServer

    package init(server: SMTPServer) throws(CurlError) {
        self.server = server
        curl = try CurlHandle(protocols: "smtp,smtps", timeout: server.timeout)
        try curl.set(CURLOPT_URL, server.url)
        try curl.set(CURLOPT_UPLOAD, 1)
        let tls: curl_usessl = switch server.startTLS {
        case .off: CURLUSESSL_NONE
        case .opportunistic: CURLUSESSL_TRY
        case .required: CURLUSESSL_ALL
        }
        try curl.set(CURLOPT_USE_SSL, Int(tls.rawValue))
        if let username = server.username { try curl.set(CURLOPT_USERNAME, username) }
        if let password = server.password { try curl.set(CURLOPT_PASSWORD, password) }
    }

    /// Sends `message` (CRLF lines, headers and body) from the envelope
    /// address `from` to `to`. libcurl dot-stuffs the body.
    package func send(from: String, to: String, message: [UInt8]) -> SMTPResult {
        let recipients = CurlList(["<\(to)>"])
        do {
            try curl.set(CURLOPT_MAIL_FROM, "<\(from)>")
            try curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_MAIL_RCPT, recipients.list))
        } catch {
            return .unreachable(error.description)
        }
        curl.transfer.reset(upload: message)
        let failure = curl.perform()
        _ = try? curl.check(guidance_curl_set_pointer(curl.handle, CURLOPT_MAIL_RCPT, nil))
        guard let failure else { return .accepted }
        // libcurl hands the server's replies to the header function. The
        // last error reply says why (a "221 Bye" to QUIT may follow it).
        if let reply = curl.transfer.lines.last(where: { (400..<600).contains(Int($0.prefix(3)) ?? 0) }) {
            return .refused(code: Int(reply.prefix(3)) ?? 0, reply: reply)
        }
        return .unreachable(failure)
    }
}
