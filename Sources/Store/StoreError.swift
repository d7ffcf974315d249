/// The one error type of the store layer.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        /// Another writer holds the database, or the server is unreachable.
        case busy
        /// A uniqueness rule refused the write (a digest revision exists).
        case conflict
        case invalidURL
        case failed
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var isRetriable: Bool { code == .busy || code == .conflict }
    public var description: String { message }
}
