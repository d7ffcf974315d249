import CMicroHTTPD
import Common
import Foundation
import Synchronization

/// Limits of the HTTP server, all explicit: libmicrohttpd's defaults have no
/// connection timeout and no per-IP limit (docs/pitfalls.md).
package struct HTTPServerConfig: Sendable {
    /// IPv4 address to listen on; nil for every interface.
    package var host: String?
    /// 0 picks a free port; `HTTPServer.port` tells which.
    package var port: Int
    package var threads: Int
    package var connectionLimit: Int
    package var perIPConnectionLimit: Int
    /// Idle connections are closed after this; keep it above the longest
    /// handler wait (the Kafka delivery timeout).
    package var connectionTimeout: Duration
    /// Per-connection buffer; request headers must fit in it. Keep it above
    /// `maxHeaderBytes` and `maxURIBytes`, so that the server, not
    /// libmicrohttpd, answers a request over them (as problem+json).
    package var connectionMemory: Int
    package var maxBodySize: Int
    /// Request headers larger than this (names and values) are answered 431.
    package var maxHeaderBytes: Int
    /// A request target (path and query) longer than this is answered 414.
    package var maxURIBytes: Int
    /// How long a client has to send a whole request, from the connection's
    /// start or the previous answer: libmicrohttpd's own timeout restarts
    /// with every byte, so a client trickling bytes would hold a connection
    /// for ever. Idle keep-alive connections close after it too.
    package var receiveTimeout: Duration
    package var backlog: Int
    /// Requests sending a body larger than `maxBodySize` (a route's upload)
    /// at once; one more is answered 503 before its body is read, so that
    /// bodies nobody has signed in for yet hold at most this many times the
    /// largest upload in memory.
    package var maxUploads = 2
    /// The slowest an upload may arrive: its `receiveTimeout` is extended by
    /// its declared length at this rate (64 KiB/s: 4 MiB in a minute).
    package var uploadBytesPerSecond = 65_536

    package init(
        host: String? = nil, port: Int = 8080,
        threads: Int = max(2, ProcessInfo.processInfo.activeProcessorCount),
        connectionLimit: Int = 1000, perIPConnectionLimit: Int = 500,
        connectionTimeout: Duration = .seconds(30), connectionMemory: Int = 16 * 1024,
        maxBodySize: Int = 16 * 1024, maxHeaderBytes: Int = 8 * 1024, maxURIBytes: Int = 4 * 1024,
        receiveTimeout: Duration = .seconds(10), backlog: Int = 1024
    ) {
        self.host = host
        self.port = port
        self.threads = threads
        self.connectionLimit = connectionLimit
        self.perIPConnectionLimit = perIPConnectionLimit
        self.connectionTimeout = connectionTimeout
        self.connectionMemory = connectionMemory
        self.maxBodySize = maxBodySize
        self.maxHeaderBytes = maxHeaderBytes
        self.maxURIBytes = maxURIBytes
        self.receiveTimeout = receiveTimeout
        self.backlog = backlog
    }
}

/// What the server saw of one finished request, for metrics.
package struct RequestRecord: Sendable {
    package let method: String
    /// The matched route pattern, or `unmatched`.
    package let route: String
    package let status: Int
    package let duration: Duration

    package init(method: String, route: String, status: Int, duration: Duration) {
        self.method = method
        self.route = route
        self.status = status
        self.duration = duration
    }
}

/// An HTTP/1.1 server over libmicrohttpd. Handlers are async: the connection
/// is suspended while a handler waits (for a Kafka acknowledgement, say), so
/// libmicrohttpd's threads keep serving other connections.
package final class HTTPServer: Sendable {
    package let config: HTTPServerConfig
    let router: Router
    let logger: Logger
    let observer: @Sendable (RequestRecord) -> Void
    let lifecycle = Mutex(Lifecycle())
    /// Exchanges whose handler has not answered yet, so shutdown can answer for them.
    let unanswered = Mutex<[ObjectIdentifier: Exchange]>([:])
    /// Requests begun and not yet completed.
    let inFlight = Atomic<Int>(0)
    /// Requests sending a body over `maxBodySize` now (`maxUploads`).
    let uploads = Atomic<Int>(0)
    /// Rung each time the last request in flight completes.
    let drained = Doorbell()
    /// Open connections by connection: the reaper shuts down those that
    /// take longer than `receiveTimeout` to send a request, and a new one
    /// past the fair share closes an idle one of the address holding most.
    let connections: Mutex<Connections>
    /// Connections closed to make room since the reaper last said so.
    let closedForRoom = Atomic<Int>(0)
    /// Routes answering 503 now (`Unavailability`); `unavailableRoutes`
    /// counts them, so that an answer passes without the lock when none is.
    let unavailability = Mutex(Unavailability())
    let unavailableRoutes = Atomic<Int>(0)
    /// The bound port (0 before `start`); read from any thread.
    package var port: Int { boundPort.load(ordering: .acquiring) }
    /// What the reaper's period and the connections' and requests' ages are
    /// measured on: the service's timer.
    private let timer: any Clock<Duration>
    let uptime: Uptime
    private let boundPort = Atomic<Int>(0)

    package init(
        config: HTTPServerConfig, router: Router, logger: Logger = Logger(component: "http"),
        timer: any Clock<Duration> = systemTimer, observer: @escaping @Sendable (RequestRecord) -> Void = { _ in }
    ) {
        self.config = config
        self.timer = timer
        uptime = Uptime(timer)
        connections = Mutex(Connections(connectionLimit: config.connectionLimit, perAddressLimit: config.perIPConnectionLimit))
        self.router = router
        self.logger = logger
        self.observer = observer
    }

    /// Binds and starts serving on libmicrohttpd's threads.
    package func start() throws(HTTPServerError) {
        var address = sockaddr_in()
        let useAddress = config.host != nil
        if let host = config.host {
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(config.port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
                throw HTTPServerError(message: "'\(host)' is not an IPv4 address", code: EINVAL)
            }
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        // The server outlives the daemon: `shutdown` stops it before the
        // server can be released, so the unretained context stays valid.
        let started = withUnsafePointer(to: &address) { pointer in
            guidance_mhd_start(
                UInt16(config.port), useAddress ? pointer : nil, UInt32(config.threads),
                // No per-address limit in libmicrohttpd: `Connections` keeps
                // it, making room instead of refusing the newcomer.
                UInt32(config.connectionLimit), 0,
                UInt32(max(1, config.connectionTimeout.components.seconds)), config.connectionMemory,
                UInt32(config.backlog), accessHandler, context, completedHandler, context, connectionHandler, context)
        }
        guard let started else {
            let code = errno
            throw HTTPServerError(message: "could not listen on port \(config.port): \(String(cString: strerror(code)))", code: code)
        }
        let reaper = Loop(HTTPServer.reaper.name, every: HTTPServer.reaper.period, wokenBy: HTTPServer.reaper.wokenBy, clock: timer) {
            [weak self] in
            self?.reap()
        }
        lifecycle.withLock { $0.started(Lifecycle.Daemon(pointer: started, reaper: reaper)) }
        boundPort.store(Int(guidance_mhd_bound_port(started)), ordering: .releasing)
        reaper.start()
        logger.info("listening", ["port": String(port), "threads": String(config.threads)])
    }

    /// Stops accepting connections, lets in-flight requests finish for up to
    /// `gracePeriod`, answers the rest 503 and cancels their handlers, and stops.
    package func shutdown(gracePeriod: Duration = .seconds(10)) async {
        guard let (daemon, reaper) = lifecycle.withLock({ $0.shutdown() }).map({ ($0.pointer, $0.reaper) }) else { return }
        await reaper.stop()
        let listener = MHD_quiesce_daemon(daemon)
        await idle(within: gracePeriod)
        let abandoned = unanswered.withLock { exchanges in
            let all = Array(exchanges.values)
            exchanges.removeAll()
            return all
        }
        if !abandoned.isEmpty {
            logger.warning("answering 503 to requests still running at shutdown", ["count": String(abandoned.count)])
        }
        for exchange in abandoned {
            exchange.finish(HTTPError.unavailable("the server is shutting down", retryAfterSeconds: 1).response, force: true)
            exchange.cancelHandler()
        }
        // Resumed connections need a moment to send their answers.
        await idle(within: .seconds(1))
        MHD_stop_daemon(daemon)
        if listener >= 0 { close(listener) }
        lifecycle.withLock { $0.finished() }
        logger.info("stopped")
    }

    /// Returns once no request is in flight, or after `limit` of the
    /// system's time: a stop's grace is an orchestrator's, in real time
    /// whatever timer the service runs on.
    private func idle(within limit: Duration) async {
        _ = await drained.wait(until: { inFlight.load(ordering: .acquiring) == 0 }, atMost: limit, clock: systemTimer)
    }

    /// The reaper's loop: a look once a second.
    static let reaper = (
        name: "http reaper", period: Duration.seconds(1),
        wokenBy: "`shutdown`; the period is its look: a client too slow to send its request rings nothing"
    )

    /// The HTTP part's rows of the design table.
    package static let waits = [
        Part.Waits(
            "http", waitsIn: "libmicrohttpd's threads (`epoll`)", wokenBy: "a request; `drained` rung as the last one in flight ends"),
        Part.Waits.loop(reaper.name, place: .task, period: reaper.period, wokenBy: reaper.wokenBy)
    ]

    /// Shuts down the sockets of connections that took longer than
    /// `receiveTimeout` to send their request; libmicrohttpd then sees the
    /// connection fail and closes it.
    private func reap() {
        let limit = config.receiveTimeout
        let late = connections.withLock { $0.late(at: uptime.now, limit: limit) }
        for (socket, headersIn) in late where socket >= 0 {
            // A request whose body is late gets a 408: libmicrohttpd is
            // waiting to read this socket, never writing it. An idle
            // keep-alive connection is just closed.
            if headersIn {
                let answer = HTTPServer.timeoutAnswer(after: limit)
                _ = answer.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
            Glibc.shutdown(socket, Int32(SHUT_RDWR))
        }
        if !late.isEmpty {
            logger.info("closed connections too slow to send their request", ["count": String(late.count)])
        }
        let closed = closedForRoom.exchange(0, ordering: .acquiringAndReleasing)
        if closed > 0 {
            logger.warning(
                "connections near the limit: closed idle ones of the addresses holding the most",
                [
                    "count": String(closed), "open": String(connections.withLock { $0.count }),
                    "limit": String(config.connectionLimit)
                ])
        }
    }

    /// The 408 a connection too slow to send its request gets, written to
    /// its socket directly: libmicrohttpd has no call that answers a request
    /// whose body is still arriving (a chunk declared larger than the body
    /// limit and never sent ends here too).
    static func timeoutAnswer(after limit: Duration) -> [UInt8] {
        let body = HTTPError(status: 408, detail: "the request was not received whole within \(Int(limit.seconds)) s").response.body
        let head =
            "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/problem+json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    deinit {
        if let daemon = lifecycle.withLock({ $0.abandonedDaemon }) {
            MHD_stop_daemon(daemon.pointer)
            // Its loop holds itself until stopped: a server released without
            // `shutdown` leaves no reaper behind.
            let reaper = daemon.reaper
            Task { await reaper.stop() }
        }
    }
}

package struct HTTPServerError: Error, CustomStringConvertible, Sendable {
    package let message: String
    /// The `errno` of the failure (`EADDRINUSE` for a port in use).
    package let code: Int32
    package var description: String { message }
}
