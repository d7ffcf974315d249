import Foundation

/// A TCP connection to 127.0.0.1 that sends bytes exactly as given, for what
/// URLSession will not send: repeated headers, lying lengths, slow clients.
/// `source` is the loopback address it comes from (any of 127.0.0.0/8), to
/// play several clients.
package final class RawConnection {
    private let socket: Int32

    package init(port: Int, from source: String? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if let source {
            guard withIPv4(source, port: 0, { bind(socket, $0, $1) }) == 0 else {
                close(socket)
                throw NSError(domain: "RawConnection", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "bind to \(source) failed"])
            }
        }
        guard withIPv4("127.0.0.1", port: port, { connect(socket, $0, $1) }) == 0 else {
            close(socket)
            throw NSError(domain: "RawConnection", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "connect failed"])
        }
    }

    deinit { close(socket) }

    /// Sends the text; false once the server closed the connection.
    @discardableResult
    package func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Everything the server sends until it closes the connection or
    /// `timeout` passes.
    package func receive(timeout: TimeInterval = 5) -> String {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 else { break }
            guard poller.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Whether the server closed the connection within `timeout`.
    package func closedByServer(within timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 else { return true }
            guard poller.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return true }
        }
        return false
    }
}

/// Calls `body` with the socket address of `host`:`port` (IPv4).
package func withIPv4<T>(_ host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr(host)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// One request over a fresh connection; the whole answer as text.
package func rawExchange(port: Int, _ request: String, timeout: TimeInterval = 5) throws -> String {
    let connection = try RawConnection(port: port)
    connection.send(request)
    return connection.receive(timeout: timeout)
}
