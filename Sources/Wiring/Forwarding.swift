import Access
import Common
import Curl
import Foundation
import HTTP
import Sessions

/// A request passed on to the other service with the caller's own
/// credential: their bearer token, or their session re-sealed for the other
/// service's cookie (both services share `SESSION_SECRET`), and the
/// client's address sealed the same way. The app at the
/// ingest reads what the notifier holds this way (`NotifierReads`), and the
/// notifier's service routes record through the ingest. The other service decides access
/// again; its answer (2xx or 4xx, with `Retry-After`) is passed back.
package struct Forwarding: Sendable {
    /// The other service's address (`NOTIFIER_URL`, `INGEST_URL`).
    package let base: String
    /// The other service's session cookie.
    package let cookieName: String
    package let sessions: Sessions
    package let logger: Logger
    /// Connections to the other service, kept open between requests (no
    /// cookie engine: nothing of one caller's answer reaches the next). At
    /// most this many requests wait on it at once, so a service that hangs
    /// holds that many threads for its 4 s, not one per request. Each
    /// handle is made by its first use (and again if libcurl could not).
    private let connections: HandlePool<HTTPSession?>

    package init(base: String, cookieName: String, sessions: Sessions, connections: Int = 8, logger: Logger) {
        self.base = base
        self.cookieName = cookieName
        self.sessions = sessions
        self.logger = logger
        self.connections = HandlePool("forwarding", count: connections) { nil }
    }

    /// Sends `method` `path` (with the request's `body`, under the request's
    /// own `Content-Type`, so that the other service refuses what it would
    /// refuse from the client: 415 for a body that says it is not JSON) within 5 s: a connection
    /// free within 1 s, an answer within 4 s. An answer that is neither 2xx
    /// nor 4xx, or none, is a 503 saying `unavailable`.
    /// A `HEAD` is sent on as a `GET` (the server leaves the body out of its
    /// answer): libcurl waits for the body of a custom `HEAD`. A path with a
    /// `.` or `..` segment is refused: libcurl would collapse it and reach
    /// another route than the one whose access was decided.
    package func send(
        _ method: String, _ path: String, body: [UInt8] = [], maxBody: Int = 1 << 20, request: Request, caller: Caller, unavailable: String
    ) async throws -> Response {
        let pathOnly = path.prefix { $0 != "?" }
        if pathOnly.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) {
            throw HTTPError.notFound("no such path: a path segment may not be '.' or '..'")
        }
        let method = method == "HEAD" ? "GET" : method
        // The client's address, for the other service's access record and sign-in counts.
        // JSON, or CSV where the caller asked for it (a student's record saved as a file).
        let csv = request.header("accept")?.contains("text/csv") == true
        var headers = [("Accept", csv ? "text/csv" : "application/json"), ("Forwarded-Client", sessions.forwardedClient(caller.client))]
        if let authorization = request.header("authorization") {
            headers.append(("Authorization", authorization))
        } else if let session = caller.session {
            headers.append(("Cookie", cookieName + "=" + sessions.cookieValue(session, name: cookieName)))
            // A change signed in by cookie must name its origin: the other service's own.
            headers.append(("Origin", AccessPolicy.origin(of: base)))
        }
        if !body.isEmpty, let type = request.header("content-type") { headers.append(("Content-Type", type)) }
        let (url, sent) = (base + path, headers)
        let answer = await connections.run(waitingAtMost: .seconds(1)) { (session: inout HTTPSession?) -> HTTPResult in
            if session == nil { session = try? HTTPSession(timeout: .seconds(4)) }
            guard let session else { return .unreachable("libcurl could not make a handle") }
            return method == "GET"
                ? session.get(url, headers: sent, maxBody: maxBody)
                : session.send(method, url, headers: sent, body: body, maxBody: maxBody)
        }
        // The route, not the path: a path names a student.
        let fields = ["requestId": request.requestID, "route": request.route]
        switch answer {
        case .answered(let status, let retryAfter, let body)? where (200..<500).contains(status):
            let type = status >= 400 ? "application/problem+json" : csv ? "text/csv; charset=utf-8" : "application/json"
            return Response(
                status: status, headers: [("Content-Type", type)] + (retryAfter.map { [("Retry-After", $0)] } ?? []), body: Array(body.utf8)
            )
        case .answered(let status, _, _)?:
            logger.warning("the other service did not answer as expected", fields.merging(["status": String(status)]) { $1 })
        case .unreachable(let reason)?:
            logger.warning("the other service could not be reached", fields.merging(["error": reason]) { $1 })
        case nil:
            logger.warning(
                "the other service could not be reached",
                fields.merging(["error": "all \(connections.count) connections to it busy for 1 s"]) { $1 })
        }
        throw HTTPError.unavailable(unavailable, retryAfterSeconds: 10)
    }
}
