import Common
import Foundation
import HTTP
import Synchronization

/// What a sign-in attempt is counted against.
package enum AttemptKey: Hashable, Sendable {
    /// The client's address: a whole school behind one NAT address shares it.
    case address(String)
    /// The teacher the attempt names (a sign-in link's).
    case teacher(String)
    /// A mailbox sign-in links are mailed to (`SignIn.mailboxes`).
    case mailbox(String)
    /// Sign-in links asked for from a client address: no failures, and
    /// counted apart from them, so that a guesser behind a school's NAT does
    /// not take the e-mailed link from its teachers; bounded all the same
    /// (`linkLimit`), and each mailbox gets a few links at most whatever asks.
    case linkRequests(String)
}

/// Failed sign-ins (a wrong token, link or code) counted per key over a
/// sliding window: an address may fail `addressLimit` times (a school's
/// NAT carries every teacher's typos), a teacher `limit` times; past it, the
/// key is refused with 429 until its oldest failure ages out. Each replica
/// counts its own. The links mailed to a mailbox are counted the same way,
/// by a limiter of their own (`SignIn.mailboxes`).
package final class AttemptLimiter: Sendable {
    package let limit: Int
    package let addressLimit: Int
    package let window: Duration
    /// Each key's failures, as times on `clock` (seconds).
    private let failures = Mutex<[AttemptKey: [Double]]>([:])
    /// When the last failure was counted (the bits of its time; 0: never).
    /// With none within the window nobody can be over the limit, so a
    /// request passes without taking the lock (the ingest's hot path).
    private let lastFailure = Atomic<UInt64>(0)
    /// The service's clock.
    private let clock: @Sendable () -> Double

    package init(limit: Int = 10, addressLimit: Int = 100, window: Duration = .seconds(600), clock: @escaping @Sendable () -> Double) {
        self.limit = limit
        self.addressLimit = addressLimit
        self.window = window
        self.clock = clock
    }

    /// Link requests an address may make in a window: five times its
    /// failures' limit, so that every teacher of a school behind one address
    /// can ask for a link in the same few minutes of a Monday morning.
    package var linkLimit: Int { addressLimit * 5 }

    private func limit(of key: AttemptKey) -> Int {
        switch key {
        case .address: addressLimit
        case .teacher, .mailbox: limit
        case .linkRequests: linkLimit
        }
    }

    /// The 429 for the first of `keys` over its limit, if any.
    package func refusal(_ keys: [AttemptKey]) -> HTTPError? {
        guard failedLately else { return nil }
        let now = clock()
        return failures.withLock { refusal(keys, in: &$0, now: now) }
    }

    /// `refusal` of one key, its list made only when a failure is recent:
    /// every request with a bearer token asks.
    package func refusal(_ key: AttemptKey) -> HTTPError? {
        failedLately ? refusal([key]) : nil
    }

    /// Whether any failure was counted within the window.
    private var failedLately: Bool {
        let last = lastFailure.load(ordering: .relaxed)
        return last != 0 && clock() - Double(bitPattern: last) < window.seconds
    }

    /// Counts one failure against each of `keys`.
    package func fail(_ keys: [AttemptKey]) {
        let now = clock()
        failures.withLock { count(keys, in: &$0, now: now) }
    }

    /// An attempt whose outcome takes time (a device code looked for up to
    /// 2 s): refused past the limit, else counted at once as a failure, so
    /// that attempts made together cannot all pass the check before any is
    /// counted. `succeeded` takes it back.
    package func attempt(_ keys: [AttemptKey]) -> HTTPError? {
        let now = clock()
        return failures.withLock { failures in
            if let refusal = refusal(keys, in: &failures, now: now) { return refusal }
            count(keys, in: &failures, now: now)
            return nil
        }
    }

    /// Takes back what `attempt` counted.
    package func succeeded(_ keys: [AttemptKey]) {
        failures.withLock { failures in
            for key in keys where failures[key]?.isEmpty == false { failures[key]?.removeLast() }
        }
    }

    private func refusal(_ keys: [AttemptKey], in failures: inout [AttemptKey: [Double]], now: Double) -> HTTPError? {
        let wait = keys.compactMap { key -> Double? in
            let recent = (failures[key] ?? []).filter { now - $0 < window.seconds }
            guard recent.count >= limit(of: key), let oldest = recent.first else { return nil }
            return window.seconds - (now - oldest)
        }.max()
        guard let wait else { return nil }
        let seconds = max(1, Int(wait.rounded(.up)))
        return HTTPError(
            status: 429, detail: "too many failed sign-ins; try again in \(seconds) s", headers: [("Retry-After", String(seconds))])
    }

    private func count(_ keys: [AttemptKey], in failures: inout [AttemptKey: [Double]], now: Double) {
        lastFailure.store(now.bitPattern, ordering: .relaxed)
        for key in keys {
            failures[key, default: []].append(now)
            if let excess = failures[key].map({ $0.count - limit(of: key) }), excess > 0 { failures[key]?.removeFirst(excess) }
        }
        // Addresses come and go: forget the idle ones before they pile up.
        if failures.count > 10_000 { failures = failures.filter { now - ($0.value.last ?? now) < window.seconds } }
    }
}

/// Who a request comes from: the connection's peer, or behind a proxy of
/// `TRUSTED_PROXIES` (addresses or IPv4 CIDR ranges) the nearest untrusted
/// address in `X-Forwarded-For`. Anyone else's `X-Forwarded-For` is ignored.
package struct ClientAddresses: Sendable {
    let trusted: [String]

    package init(trusted: [String] = []) {
        self.trusted = trusted
    }

    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> ClientAddresses {
        let entries = (environment["TRUSTED_PROXIES"] ?? "").split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        for entry in entries where entry.contains("/") && ClientAddresses.range(entry) == nil {
            throw ConfigurationError(variable: "TRUSTED_PROXIES", reason: "'\(entry)' is not an IPv4 range like 172.16.0.0/12")
        }
        return ClientAddresses(trusted: entries)
    }

    package func client(of request: Request) -> String {
        guard isTrusted(request.peer), let forwarded = request.header("x-forwarded-for") else { return request.peer }
        let hops = forwarded.split(separator: ",").map { $0.trimmingWhitespace() }
        return hops.reversed().first { !isTrusted($0) } ?? hops.first ?? request.peer
    }

    func isTrusted(_ address: String) -> Bool {
        trusted.contains { entry in
            guard entry.contains("/") else { return entry == address }
            guard let (network, mask) = ClientAddresses.range(entry), let value = ClientAddresses.ipv4(address) else { return false }
            return value & mask == network & mask
        }
    }

    static func range(_ entry: String) -> (UInt32, UInt32)? {
        let parts = entry.split(separator: "/")
        guard parts.count == 2, let network = ipv4(String(parts[0])), let bits = Int(parts[1]), (0...32).contains(bits) else { return nil }
        return (network, bits == 0 ? 0 : UInt32.max << (32 - bits))
    }

    static func ipv4(_ text: String) -> UInt32? {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt32($0) }
        guard octets.count == 4, octets.allSatisfy({ $0 <= 255 }) else { return nil }
        return octets.reduce(0) { $0 << 8 | $1 }
    }
}
