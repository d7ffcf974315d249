import Dispatch
import Synchronization

/// Runs a blocking call (SQLite, libpq, a librdkafka query) on a Dispatch
/// thread and awaits it, keeping Swift's cooperative pool free.
package func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try body() })
        }
    }
}

/// Runs a blocking call like `blocking`, but stops waiting after `limit`:
/// nil when it failed or had not finished by then. The call itself runs on
/// to its end (a blocking C call cannot be interrupted); only the caller is
/// freed, e.g. a readiness probe that must answer within a second.
package func blocking<T: Sendable>(within limit: Duration, _ body: @escaping @Sendable () throws -> T) async -> T? {
    let slot = Mutex<CheckedContinuation<T?, Never>?>(nil)
    return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        slot.withLock { $0 = continuation }
        DispatchQueue.global().async {
            let value = try? body()
            slot.withLock { $0.take() }?.resume(returning: value)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + limit.seconds) {
            slot.withLock { $0.take() }?.resume(returning: nil)
        }
    }
}
