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
    /// Most time one message may take up to its last byte, connection
    /// included. The server's reply to the message then has
    /// `finalReplyTimeout`.
    package var timeout: Duration

    /// RFC 5321 §4.5.3.2.6: a client waits 10 minutes for the reply to the
    /// final dot. Giving up sooner and sending again is what sends twice: a
    /// server that was only slow (or paused) delivers the first copy too.
    package static let finalReplyTimeout: Duration = .seconds(600)

    package init(
        url: String, startTLS: StartTLS = .opportunistic, username: String? = nil, password: String? = nil, timeout: Duration = .seconds(30)
    ) {
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
    /// (4xx retriable, 5xx not) and `reply` its text.
    case refused(code: Int, reply: String)
    /// No answer: the connection failed, timed out, or TLS could not be set
    /// up, before the message was handed over whole.
    case unreachable(String)
    /// The message was handed over whole, but its acceptance never came
    /// (no reply within `finalReplyTimeout`, or the send was cancelled): the
    /// server may have it.
    case unconfirmed(String)
}

/// One SMTP session: sends messages one after another over one connection,
/// opened on the first message and reopened by libcurl when it was lost.
/// Not thread-safe: each dispatcher worker owns one.
package final class SMTPSession {
    private let curl: CurlHandle
    private let server: SMTPServer
    /// Stops the message under way (a shutdown): `send` then returns
    /// `unreachable` or `unconfirmed`.
    package let cancellation = CurlCancellation()

    package init(server: SMTPServer) throws(CurlError) {
        self.server = server
        curl = try CurlHandle(
            protocols: "smtp,smtps", timeout: server.timeout, answerLimit: SMTPServer.finalReplyTimeout, cancellation: cancellation)
        try curl.set(CURLOPT_URL, server.url)
        try curl.set(CURLOPT_UPLOAD, 1)
        let tls: curl_usessl =
            switch server.startTLS {
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
        return curl.transfer.uploadedAt == nil ? .unreachable(failure) : .unconfirmed(failure)
    }

}
