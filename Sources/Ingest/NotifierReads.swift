import Access
import Foundation
import Guidance
import HTTP
import Wiring

/// What the app reads from the notifier (lists, the 알림함, the 봉사 명단,
/// settings, runs, deliveries, the access record), passed on with the
/// teacher's own credential: their bearer token, or their session re-sealed
/// for the notifier. The notifier decides access again and records each
/// read in the access record; the ingest keeps nothing. When the notifier
/// does not answer, these are 503s and the gate goes on recording.
struct NotifierReads: Sendable {
    /// `NOTIFIER_URL`; nil: every read answers 503 saying so.
    let notifier: Forwarding?

    /// The notifier's routes the app uses, under the same paths (listed in
    /// `docs/design.md`, "Web pages", and `openapi/ingest.yaml`'s description).
    static let passed: [(method: String, pattern: String)] = [
        ("GET", "/v1/schools/{schoolId}/guidances"),
        ("GET", "/v1/schools/{schoolId}/service"),
        ("GET", "/v1/schools/{schoolId}/service/sittings"),
        ("GET", "/v1/schools/{schoolId}/service/plan"),
        ("GET", "/v1/schools/{schoolId}/students/{studentId}/history"),
        ("GET", "/v1/schools/{schoolId}/overview"),
        ("GET", "/v1/schools/{schoolId}/cases"),
        ("GET", "/v1/schools/{schoolId}/cases/{caseId}"),
        ("GET", "/v1/schools/{schoolId}/students/{studentId}/standing"),
        ("GET", "/v1/teachers/{teacherId}/inbox"),
        ("GET", "/v1/teachers/{teacherId}/inbox/unread"),
        ("POST", "/v1/teachers/{teacherId}/inbox/{digestId}/read"),
        ("GET", "/v1/teachers/{teacherId}/settings"),
        ("POST", "/v1/teachers/{teacherId}/settings"),
        ("POST", "/v1/teachers/{teacherId}/push"),
        ("POST", "/v1/teachers/{teacherId}/push/remove"),
        ("POST", "/v1/digests/run"),
        ("GET", "/v1/schools/{schoolId}/deliveries"),
        ("POST", "/v1/schools/{schoolId}/deliveries/{deliveryId}/retry"),
        ("GET", "/v1/schools/{schoolId}/access-log")
    ]

    func routes(into router: inout GuardedRouter) {
        // Any teacher signed in: the notifier answers 403 where the roles do not reach.
        for (method, pattern) in NotifierReads.passed {
            router.add(method, pattern, .teacher) { request, caller in
                try await pass(request, caller, to: NotifierReads.target(request.path, query: request.query))
            }
        }
        // The gate's day list, as before the app (gate and admin teachers).
        router.get("/v1/schools/{schoolId}/today", .school(roles: [.gate, .admin])) { request, caller in
            try await pass(request, caller, to: "/v1/schools/" + request.parameter("schoolId").percentEncoded + "/guidances")
        }
    }

    private func pass(_ request: Request, _ caller: Caller, to target: String) async throws -> Response {
        guard let notifier else {
            throw HTTPError.unavailable("the lists are not set up here (NOTIFIER_URL is not set); registering works", retryAfterSeconds: 60)
        }
        return try await notifier.send(
            request.method, target, body: request.body, maxBody: 8 * 1024 * 1024, request: request, caller: caller,
            unavailable: "the lists cannot be loaded now (the notifier does not answer); registering works")
    }

    /// The request's path and query as sent on: each segment and value
    /// percent-encoded again (the server hands them over decoded).
    static func target(_ path: String, query: [String: String]) -> String {
        let encodedPath = path.split(separator: "/", omittingEmptySubsequences: false).map { String($0).percentEncoded }.joined(
            separator: "/")
        guard !query.isEmpty else { return encodedPath }
        return encodedPath + "?"
            + query.sorted { $0.key < $1.key }.map { $0.key.percentEncoded + "=" + $0.value.percentEncoded }.joined(
                separator: "&")
    }
}
