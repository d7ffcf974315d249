import Dispatch

/// Runs a blocking call (SQLite, libpq, a librdkafka query) on a Dispatch
/// thread and awaits it, keeping Swift's cooperative pool free.
public func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try body() })
        }
    }
}
