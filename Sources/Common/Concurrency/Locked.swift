import Synchronization

/// A value behind a lock of its own, as an array element: a channel's
/// connections (each a libcurl handle, used by one send at a time), the
/// store's read connections. `Mutex` alone cannot be copied into an array.
package final class Locked<Value>: Sendable {
    private let value: Mutex<Value>

    package init(_ value: sending Value) {
        self.value = Mutex(value)
    }

    package func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        try value.withLock(body)
    }

    /// `body` with the value unless another holds the lock now: nil then.
    package func withLockIfAvailable<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E)
        -> sending Result?
    {
        try value.withLockIfAvailable(body)
    }
}
