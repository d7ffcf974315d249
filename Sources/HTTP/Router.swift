import Common

/// Handles a request; throw `HTTPError` for answers meant for the client.
package typealias Handler = @Sendable (Request) async throws -> Response

/// Routes by method and path pattern; `{name}` segments capture parameters.
/// A path that matches no pattern answers 404; one whose pattern lacks the
/// method answers 405 with `Allow`.
package struct Router: Sendable {
    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        /// The largest body the route takes, when more than the server's `maxBodySize`.
        let maxBody: Int?
        let handler: Handler
    }

    private enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)
    }

    private var routes: [Route] = []

    package init() {}

    /// Adds a route; `maxBody` lets it take a body larger than the server's
    /// `maxBodySize` (an upload), every other route keeping that limit.
    package mutating func add(_ method: String, _ pattern: String, maxBody: Int? = nil, _ handler: @escaping Handler) {
        let segments = Router.segments(pattern).map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(part)
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, maxBody: maxBody, handler: handler))
    }

    package mutating func get(_ pattern: String, _ handler: @escaping Handler) { add("GET", pattern, handler) }
    package mutating func post(_ pattern: String, _ handler: @escaping Handler) { add("POST", pattern, handler) }
    package mutating func delete(_ pattern: String, _ handler: @escaping Handler) { add("DELETE", pattern, handler) }

    enum Match {
        case found(pattern: String, parameters: [(name: String, value: String)], maxBody: Int?, handler: Handler)
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    /// The path's segments, split on the byte `/`: splitting a `String`
    /// would keep `/` and a combining mark after it as one character.
    private static func segments(_ path: String) -> [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/")).map { Substring($0) }
    }

    func match(method: String, path: String) -> Match {
        let parts = path.utf8.split(separator: UInt8(ascii: "/"))
        var allowed: [String] = []
        for route in routes where route.segments.count == parts.count {
            let matches = zip(route.segments, parts).allSatisfy { segment, part in
                switch segment {
                case .literal(let literal): literal.utf8.elementsEqual(part)
                case .parameter: !part.isEmpty
                }
            }
            guard matches else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                // Only the route that matched builds its parameters.
                var parameters: [(name: String, value: String)] = []
                parameters.reserveCapacity(route.segments.count)
                for case (.parameter(let name), let part) in zip(route.segments, parts) {
                    parameters.append((name, String(Substring(part))))
                }
                return .found(pattern: route.pattern, parameters: parameters, maxBody: route.maxBody, handler: route.handler)
            }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    /// The route for `method` on `path`, or the answer when there is none:
    /// 404, or 405 with `Allow`.
    func resolve(method: String, path: String) -> Result<
        (pattern: String, parameters: [(name: String, value: String)], handler: Handler), HTTPError
    > {
        switch match(method: method, path: path) {
        case .notFound:
            return .failure(.notFound("no resource at \(path)"))
        case .methodNotAllowed(let allowed):
            return .failure(
                HTTPError(status: 405, detail: "\(method) is not allowed on \(path)", headers: [("Allow", allowed.joined(separator: ", "))])
            )
        case .found(let pattern, let parameters, _, let handler):
            return .success((pattern, parameters, handler))
        }
    }

    /// The largest body a request for `method` on `path` may send, when its
    /// route takes more than the server's limit; nil otherwise.
    func maxBody(method: String, path: String) -> Int? {
        guard case .found(_, _, let maxBody, _) = match(method: method, path: path) else { return nil }
        return maxBody
    }

    /// Runs `handler`: an error answers for itself. An `HTTPError` is its
    /// problem; a retriable outage of a system the service depends on (the
    /// broker, the store) is a 503 with `Retry-After` — here, for every route
    /// of both services; anything else a logged 500 that quotes the request id.
    static func run(_ handler: Handler, _ request: Request, logger: Logger) async -> Response {
        do {
            return try await handler(request)
        } catch let error as HTTPError {
            return error.response
        } catch let error as RetriableError where error.isRetriable {
            logger.warning(
                "\(error.system) is unavailable", ["requestId": request.requestID, "route": request.route, "error": error.message])
            return HTTPError.unavailable("\(error.system) cannot be reached now; retry shortly", retryAfterSeconds: 5).response
        } catch {
            logger.error("handler failed", ["requestId": request.requestID, "route": request.route, "error": String(describing: error)])
            return HTTPError(status: 500, detail: "internal error; quote request id \(request.requestID)").response
        }
    }

    /// What the server answers `request`, without a socket: for tests of
    /// handlers and their access rules.
    package func respond(to request: Request, logger: Logger = Logger(component: "router")) async -> Response {
        switch resolve(method: request.method, path: request.path) {
        case .failure(let error):
            return error.response
        case .success(let route):
            var request = request
            request.parameters = route.parameters
            request.route = route.pattern
            return await Router.run(route.handler, request, logger: logger)
        }
    }
}
