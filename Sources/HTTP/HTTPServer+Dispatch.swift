import CMicroHTTPD
import Common
import Foundation

extension HTTPServer {
    /// Answers what needs no handler on libmicrohttpd's thread; otherwise
    /// runs the handler as a task that starts on this thread, and suspends
    /// the connection if it waits; after a wait it goes on on Swift's pool,
    /// whoever ended the wait (the producer's poll thread, a doorbell's
    /// ringer) only hands it over.
    func dispatch(_ exchange: Exchange) -> MHD_Result {
        if !lifecycle.withLock({ $0.serving }) {
            return exchange.queue(HTTPError.unavailable("the server is shutting down", retryAfterSeconds: 1).response)
        }
        if exchange.bodyTooLarge {
            return exchange.queue(HTTPError(status: 413, detail: "the body is larger than \(exchange.bodyLimit) bytes").response)
        }
        switch router.resolve(method: exchange.method, path: exchange.path) {
        case .failure(let error):
            return exchange.queue(error.response)
        case .success(let route):
            exchange.route = route.pattern
            var request = Request(
                method: exchange.method, path: exchange.path, headers: exchange.headers,
                query: exchange.query, body: exchange.body, requestID: exchange.requestID, peer: exchange.peer)
            request.parameters = route.parameters
            request.route = route.pattern
            exchange.begin(in: self)
            // The handler runs here until it waits; one that never waits
            // (a look-up, a refusal) has answered when this returns.
            let task = Task.immediate { [self, request] in
                let response = await Router.run(route.handler, request, logger: logger)
                exchange.finish(response, in: self)
            }
            exchange.handle(task)
            guard let answer = exchange.suspendUnlessAnswered() else { return .YES }
            return exchange.queue(answer)
        }
    }

    /// A connection opened: counted by its address; past the fair share,
    /// an idle connection of the address holding the most is closed
    /// (`Connections`).
    func opened(_ connection: OpaquePointer) {
        let socket = guidance_mhd_connection_fd(connection)
        let address = clientAddress(connection)
        let now = uptime.now
        guard let room = connections.withLock({ $0.opened(key(connection), socket: socket, address: address, at: now) }), room >= 0 else {
            return
        }
        // shutdown(2), never close(2): the descriptor stays libmicrohttpd's to close.
        Glibc.shutdown(room, Int32(SHUT_RDWR))
        closedForRoom.add(1, ordering: .relaxed)
    }

    func closed(_ connection: OpaquePointer) {
        connections.withLock { $0.closed(key(connection)) }
    }

    /// The connection is sending a request from now on.
    func receiving(_ connection: OpaquePointer) {
        let now = uptime.now
        connections.withLock { $0.waiting(key(connection), at: now) }
    }

    /// The connection's request headers are in; its body may follow, of
    /// `declaredBody` bytes for an upload (its time to arrive extended).
    func headersReceived(_ connection: OpaquePointer, declaredBody: Int = 0) {
        let allowance = Duration.seconds(Double(declaredBody) / Double(max(1, config.uploadBytesPerSecond)))
        connections.withLock { $0.headersIn(key(connection), allowance: allowance) }
    }

    /// For a request whose body may pass `maxBodySize`: a 503 when
    /// `maxUploads` others are sending theirs, else its slot taken.
    func uploadProblem(_ exchange: Exchange) -> HTTPError? {
        guard exchange.bodyLimit > config.maxBodySize else { return nil }
        guard uploads.add(1, ordering: .acquiringAndReleasing).newValue <= config.maxUploads else {
            uploads.subtract(1, ordering: .acquiringAndReleasing)
            return .unavailable("\(config.maxUploads) uploads are being received; retry in a moment", retryAfterSeconds: 10)
        }
        exchange.holdsUpload = true
        return nil
    }

    /// The connection's request is in.
    func received(_ connection: OpaquePointer) {
        connections.withLock { $0.received(key(connection)) }
    }

    /// A 503 is the service saying it cannot serve now (starting, its store
    /// or broker away), not a failure of the request: one line when a route
    /// starts answering it and one when it answers again.
    private func noteAvailability(_ exchange: Exchange) {
        let change = unavailability.withLock { $0.answered(exchange.status, on: exchange.route) }
        switch change {
        case .began?:
            unavailableRoutes.add(1, ordering: .relaxed)
            logger.warning(
                "answering 503 (unavailable) on this route from now on",
                [
                    "requestId": exchange.requestID, "method": exchange.method, "route": exchange.route
                ])
        case .ended(let count)?:
            unavailableRoutes.subtract(1, ordering: .relaxed)
            logger.info(
                "answering again after 503s", ["route": exchange.route, "refused": String(count), "status": String(exchange.status)])
        case nil:
            break
        }
    }

    private func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }

    func complete(_ exchange: Exchange, reason: MHD_RequestTerminationCode) {
        if exchange.holdsUpload { uploads.subtract(1, ordering: .acquiringAndReleasing) }
        if inFlight.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { drained.ring() }
        let duration = uptime.now - exchange.started
        observer(RequestRecord(method: exchange.method, route: exchange.route, status: exchange.status, duration: duration))
        let failed = reason != .REQUEST_TERMINATED_COMPLETED_OK
        if !failed && (exchange.status == 503 || unavailableRoutes.load(ordering: .relaxed) > 0) { noteAvailability(exchange) }
        // The access log is built only when it will be written.
        guard failed || (exchange.status >= 500 && exchange.status != 503) || logger.isEnabled(.debug) else { return }
        let fields = [
            "requestId": exchange.requestID, "method": exchange.method, "route": exchange.route,
            "status": String(exchange.status), "ms": String(format: "%.2f", duration.seconds * 1000)
        ]
        if failed {
            logger.info("request ended before its answer was sent", fields.merging(["reason": String(reason.rawValue)]) { $1 })
        } else if exchange.status == 501 {
            // The client asked for what this server does not implement: its
            // fault, no alarm for an operator.
            logger.info("request asked for what is not implemented", fields)
        } else if exchange.status >= 500 && exchange.status != 503 {
            logger.error("request failed", fields)
        } else {
            logger.debug("request", fields)
        }
    }
}
