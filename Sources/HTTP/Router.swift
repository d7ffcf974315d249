/// Handles a request; throw `HTTPError` for answers meant for the client.
public typealias Handler = @Sendable (Request) async throws -> Response

/// Routes by method and path pattern; `{name}` segments capture parameters.
/// A path that matches no pattern answers 404; one whose pattern lacks the
/// method answers 405 with `Allow`.
public struct Router: Sendable {
    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler
    }

    private enum Segment: Sendable, Equatable {
        case literal(Substring)
        case parameter(String)
    }

    private var routes: [Route] = []

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(part)
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { add("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping Handler) { add("POST", pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping Handler) { add("DELETE", pattern, handler) }

    enum Match {
        case found(pattern: String, parameters: [String: String], handler: Handler)
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    func match(method: String, path: String) -> Match {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        var allowed: [String] = []
        for route in routes where route.segments.count == parts.count {
            var parameters: [String: String] = [:]
            var matches = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let literal) where literal == part: continue
                case .parameter(let name) where !part.isEmpty: parameters[name] = String(part)
                default: matches = false
                }
                if !matches { break }
            }
            guard matches else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(pattern: route.pattern, parameters: parameters, handler: route.handler)
            }
            allowed.append(route.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }
}
