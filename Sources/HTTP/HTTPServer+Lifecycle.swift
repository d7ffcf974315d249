import Common
import Synchronization

extension HTTPServer {
    /// The server's life as one value behind one lock: idle → serving →
    /// draining → stopped. Each transition says what the caller must do, so
    /// no flag can disagree with another and a second `shutdown` (or one
    /// before `start`) does nothing. Pure: tested without sockets.
    struct Lifecycle: Sendable {
        /// libmicrohttpd's daemon handle, and the loop that closes its
        /// connections too slow to send a request. Unchecked: a C pointer,
        /// whose quiesce and stop calls may come from any thread.
        struct Daemon: @unchecked Sendable {
            let pointer: OpaquePointer
            let reaper: Loop
        }

        enum State: Sendable {
            case idle
            case serving(daemon: Daemon)
            case draining(daemon: Daemon)
            case stopped
        }

        private(set) var state: State = .idle

        /// The daemon started; only from idle.
        mutating func started(_ daemon: Daemon) {
            guard case .idle = state else { preconditionFailure("HTTPServer started twice") }
            state = .serving(daemon: daemon)
        }

        /// Shutdown asked: the daemon to drain and stop, once; nil when the
        /// server never served or is already on its way out.
        mutating func shutdown() -> Daemon? {
            guard case .serving(let daemon) = state else { return nil }
            state = .draining(daemon: daemon)
            return daemon
        }

        /// The daemon was stopped.
        mutating func finished() {
            guard case .draining = state else { preconditionFailure("HTTPServer finished without draining") }
            state = .stopped
        }

        /// Whether new requests are taken (not while draining: they get 503).
        var serving: Bool {
            if case .serving = state { return true }
            return false
        }

        /// The daemon a server released without `shutdown` must stop.
        var abandonedDaemon: Daemon? {
            switch state {
            case .serving(let daemon), .draining(let daemon): daemon
            case .idle, .stopped: nil
            }
        }
    }
}
