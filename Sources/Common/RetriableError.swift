/// One vocabulary, from the store to the delivery channels, for "may the
/// same thing succeed later, unchanged?": an error of a system the services
/// depend on says whether it is retriable (the system's condition: a broker or
/// store that does not answer now) or not (the call's: a message too large, a
/// value the store cannot hold). The HTTP router answers a retriable one 503
/// with `Retry-After`, in both services alike; a delivery attempt is
/// `.retriable` or `.notRetriable` in the same words.
package protocol RetriableError: Error, Sendable {
    var isRetriable: Bool { get }
    /// What went wrong, for the log.
    var message: String { get }
    /// The system that failed, as a client is told (`the event broker`).
    var system: String { get }
}
