import Common
import Curl
import Foundation
import XCTest

/// A push endpoint is a URL a browser named: the notifier connects only to
/// public addresses for it, checked at each connection (after libcurl's own
/// name resolution), whatever the name resolved to when it was saved.
final class HTTPSessionDestinationTests: XCTestCase {
    /// A listening socket on 127.0.0.1 that is never accepted from: the
    /// kernel completes a connection into its backlog, so `connections()`
    /// tells whether a client reached it.
    final class Listener {
        let socket: Int32
        let port: Int

        init() throws {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(socket, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
            }
            _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
            self.socket = socket
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(socket) }

        /// How many connections reached it since the last call.
        func connections() -> Int {
            var count = 0
            while true {
                let accepted = accept(socket, nil, nil)
                guard accepted >= 0 else { return count }
                close(accepted)
                count += 1
            }
        }
    }

    func testAPushSessionNeverConnectsToTheServicesOwnNetworkWhateverTheName() throws {
        let listener = try Listener()
        let push = try HTTPSession(timeout: .seconds(2), destinations: .publicHTTPS)
        for url in [
            "https://127.0.0.1:\(listener.port)/x", "https://localhost:\(listener.port)/x", "https://[::ffff:127.0.0.1]:\(listener.port)/x"
        ] {
            guard case .unreachable = push.post(url, headers: [], body: Array("{}".utf8)) else { return XCTFail("\(url) was answered") }
            XCTAssertEqual(listener.connections(), 0, "\(url): no connection was made")
        }
        guard case .unreachable = push.post("http://8.8.8.8:\(listener.port)/x", headers: [], body: []) else {
            return XCTFail("http answered")
        }

        // The same request from a session that may go anywhere (a school's webhook) connects.
        let webhook = try HTTPSession(timeout: .seconds(1), destinations: .any)
        _ = webhook.post("http://localhost:\(listener.port)/x", headers: [], body: Array("{}".utf8))
        XCTAssertEqual(listener.connections(), 1, "the listener is reachable: the refusals above were the session's")
        // The tests' push service: loopback allowed, nothing else private.
        let local = try HTTPSession(timeout: .seconds(1), destinations: .publicOrLoopback)
        _ = local.post("http://127.0.0.1:\(listener.port)/x", headers: [], body: [])
        XCTAssertEqual(listener.connections(), 1)
    }

    func testPublicAddressesAreTheInternetsOnly() {
        func v4(_ text: String) -> Bool {
            var address = in_addr()
            XCTAssertEqual(inet_pton(AF_INET, text, &address), 1, text)
            return PublicAddress.allows(ipv4: UInt32(bigEndian: address.s_addr))
        }
        func v6(_ text: String) -> Bool {
            var address = in6_addr()
            XCTAssertEqual(inet_pton(AF_INET6, text, &address), 1, text)
            return PublicAddress.allows(ipv6: withUnsafeBytes(of: address) { Array($0) })
        }
        for refused in [
            "127.0.0.1", "127.255.0.9", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "100.64.0.1", "224.0.0.1", "255.255.255.255", "192.0.2.10", "198.18.0.1"
        ] {
            XCTAssertFalse(v4(refused), refused)
        }
        for allowed in ["8.8.8.8", "142.250.196.10", "172.32.0.1", "100.128.0.1", "1.1.1.1"] { XCTAssertTrue(v4(allowed), allowed) }
        for refused in [
            "::1", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
            "2002:7f00:1::1", "2001:0:4136:e378::1", "64:ff9b::7f00:1"
        ] {
            XCTAssertFalse(v6(refused), refused)
        }
        for allowed in ["2607:f8b0:4004:c07::5f", "2a00:1450:4001:82a::200e", "::ffff:8.8.8.8"] { XCTAssertTrue(v6(allowed), allowed) }
        XCTAssertEqual(PublicAddress.resolvesAllowed("localhost"), false, "a name is judged by what it resolves to")
        XCTAssertEqual(PublicAddress.resolvesAllowed("localhost", loopback: true), true)
    }
}
