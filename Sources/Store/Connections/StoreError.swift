import Common

/// The one error type of the store layer. Its code says whose fault a
/// failure is: the store's (it cannot write now, whatever is written) or the
/// data's (this write can never succeed), which decides whether an event is
/// retried with its offsets held or narrowed down and dead-lettered.
package struct StoreError: RetriableError, CustomStringConvertible {
    package enum Code: Sendable, Equatable {
        /// The store cannot answer or write now, whatever is written:
        /// another writer holds it, the server is unreachable or shutting
        /// down, the session was lost, the disk is full, an I/O error, a
        /// read-only database, out of memory. The same call may succeed later.
        case unavailable
        /// A uniqueness or other constraint refused what was written (a
        /// digest revision that exists).
        case conflict
        /// A value the store cannot hold (text with a NUL, a number out of
        /// range, bytes that are not text).
        case invalidValue
        /// Anything else: an unknown schema, an unreadable row, an error the
        /// store does not classify. Not retried by callers; not the data's.
        case failed
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether the same call may succeed later unchanged (the store's
    /// condition, not the call's): HTTP answers 503 with `Retry-After`.
    package var isRetriable: Bool { code == .unavailable }

    /// Whether the failure names the data written, so that other writes
    /// would succeed: only then is an event the one to blame.
    package var isDataError: Bool { code == .conflict || code == .invalidValue }

    package var description: String { message }

    package var system: String { "the store" }
}
