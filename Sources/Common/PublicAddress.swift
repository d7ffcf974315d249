import Glibc

/// Whether an address is on the public internet: where the service may
/// send what a user named (a push endpoint), and never into its own
/// network. Loopback, private, shared (CGNAT), link-local (cloud metadata
/// at 169.254.169.254), documentation, benchmarking, multicast and reserved
/// ranges are not; an IPv6 address is public only in global unicast
/// (2000::/3) outside documentation, 6to4, Teredo and the IETF's own
/// blocks; an IPv4-mapped one (`::ffff:127.0.0.1`) is its IPv4 address.
package enum PublicAddress {
    /// `loopback` (the tests' own push service) lets 127.0.0.0/8 and ::1 through too.
    package static func allows(_ address: UnsafePointer<sockaddr>, loopback: Bool) -> Bool {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt32(bigEndian: $0.pointee.sin_addr.s_addr) }
            return allows(ipv4: ipv4, loopback: loopback)
        case AF_INET6:
            let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
            }
            return allows(ipv6: bytes, loopback: loopback)
        default:
            return false
        }
    }

    /// An IPv4 address in host order.
    package static func allows(ipv4 address: UInt32, loopback: Bool = false) -> Bool {
        if loopback && address >> 24 == 127 { return true }
        return !refusedIPv4.contains { address & $0.mask == $0.network }
    }

    /// An IPv6 address's 16 bytes.
    package static func allows(ipv6 bytes: [UInt8], loopback: Bool = false) -> Bool {
        guard bytes.count == 16 else { return false }
        // ::ffff:a.b.c.d, an IPv4 address reached over an IPv6 socket.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            let ipv4 = bytes[12...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return allows(ipv4: ipv4, loopback: loopback)
        }
        if loopback && bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        guard bytes[0] & 0xe0 == 0x20 else { return false }  // 2000::/3, global unicast
        let first32 = bytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        if first32 == 0x2001_0db8 { return false }  // documentation
        if first32 >> 16 == 0x2002 { return false }  // 6to4: an IPv4 address inside
        if first32 >> 9 == 0x2001_0000 >> 9 { return false }  // 2001::/23: Teredo, ORCHID, the IETF's
        return true
    }

    /// Where names are resolved (`getaddrinfo` blocks, up to its own
    /// timeouts): a slow resolver holds these threads and no others.
    package static let lookups = BlockingExecutor("lookups", threads: 2)

    /// Resolves `host` and says whether every address it names is allowed:
    /// nil when it does not resolve now (the connection checks again).
    package static func resolvesAllowed(_ host: String, loopback: Bool = false) -> Bool? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, "443", &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(first) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            guard let address = current.pointee.ai_addr, allows(UnsafePointer(address), loopback: loopback) else { return false }
            entry = current.pointee.ai_next
        }
        return true
    }

    /// IPv4 blocks that are not the public internet (RFC 6890's registry).
    private static let refusedIPv4: [(network: UInt32, mask: UInt32)] = [
        ("0.0.0.0", 8), ("10.0.0.0", 8), ("100.64.0.0", 10), ("127.0.0.0", 8), ("169.254.0.0", 16), ("172.16.0.0", 12),
        ("192.0.0.0", 24), ("192.0.2.0", 24), ("192.88.99.0", 24), ("192.168.0.0", 16), ("198.18.0.0", 15),
        ("198.51.100.0", 24), ("203.0.113.0", 24), ("224.0.0.0", 4), ("240.0.0.0", 4)
    ].map { block in
        let parts = block.0.split(separator: ".").map { UInt32($0)! }
        let mask = block.1 == 0 ? 0 : UInt32.max << (32 - UInt32(block.1))
        return (parts.reduce(0) { $0 << 8 | $1 }, mask)
    }
}
