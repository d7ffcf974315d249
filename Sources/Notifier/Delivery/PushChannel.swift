import Access
import Common
import Crypto
import Curl
import Foundation
import Guidance
import Sessions
import Store
import Web

/// Digests as a notification on each device a teacher turned push on for
/// (Web Push: RFC 8030, encrypted per RFC 8291, signed per RFC 8292). The
/// message names no student: a phone's lock screen is public. It carries
/// the list's title (its subject, which gives a seat at most), a count and
/// where the app opens it; the names are behind sign-in.
final class PushChannel: DeliveryChannel {
    let id = Channel.push
    let summary = "Web Push to the devices teachers turned it on for"
    let connections: Int
    var timeout: Duration { posts.timeout }
    private let vapid: VAPIDSettings
    private let store: SQLStore
    private let sessions: Sessions
    private let allowsHTTP: Bool
    private let posts: HTTPPosts
    private let logger: Logger

    /// How long a push service keeps a message for a device that is off:
    /// a list of today is stale tomorrow.
    static let timeToLive = 12 * 3600

    init(vapid: VAPIDSettings, config: DeliveryConfig, store: SQLStore, sessions: Sessions, logger: Logger) throws(ConfigurationError) {
        self.vapid = vapid
        self.store = store
        self.sessions = sessions
        self.logger = logger
        allowsHTTP = config.pushOverHTTP
        connections = config.concurrency
        posts = try HTTPPosts(
            connections: connections, timeout: config.sendTimeout(config.webhookTimeout), variable: "VAPID_PRIVATE_KEY",
            destinations: config.pushOverHTTP ? .publicOrLoopback : .publicHTTPS)
    }

    func cancelSends() { posts.cancel() }

    /// The devices of a teacher who has any (they are read when sending).
    func target(of digest: Digest, in roster: Roster, preferences: DeliveryPreferences) -> String? {
        preferences.pushing.contains(digest.teacherId) ? "devices" : nil
    }

    /// The host of `endpoint` if it may be pushed to, else nil: a browser's
    /// push service is `https://name/path` on the default port. Refused:
    /// another scheme, userinfo, a port, an address written as digits in any
    /// form (`127.1`, `0x7f000001`, `[::1]`), spaces and control characters
    /// (a header injected into the request line). Plain http on loopback
    /// (`127.0.0.1`, `localhost`, any port) only where the configuration
    /// allows it for the tests' push service (`DeliveryConfig.pushOverHTTP`).
    /// The name's addresses are checked too, at subscription
    /// (`PublicAddress.resolvesAllowed`) and at each connection (`HTTPSession`).
    static func endpointHost(_ endpoint: String, overHTTP: Bool) -> String? {
        guard endpoint.utf8.count <= 2048, endpoint.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else { return nil }
        let https = endpoint.hasPrefix("https://")
        guard https || (overHTTP && endpoint.hasPrefix("http://")) else { return nil }
        let rest = endpoint.drop(while: { $0 != "/" }).dropFirst(2)
        let authority = rest.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" })
        guard !authority.contains("@"), !authority.contains("\\") else { return nil }
        if !https {
            let host = authority.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            return host == "127.0.0.1" || host == "localhost" ? host : nil
        }
        let host = authority.hasSuffix(":443") ? String(authority.dropLast(4)).lowercased() : String(authority).lowercased()
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        var numeric = in_addr()
        guard labels.count >= 2, host.utf8.count <= 253, inet_aton(host, &numeric) == 0,
            labels.allSatisfy({ label in
                (1...63).contains(label.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
            }),
            labels.last!.unicodeScalars.contains(where: { ("a"..."z").contains($0) })
        else { return nil }
        return host
    }

    func send(_ claim: ClaimedDelivery, roster: Roster, over connection: Int, now: Double) -> DeliveryAttempt {
        let delivery = claim.delivery
        let found: [PushSubscription]?
        do {
            found = try live(store.pushSubscriptions(school: delivery.schoolId, teacher: delivery.teacherId))
        } catch {
            return .retriable("the store did not answer: \(error)")
        }
        // Send nothing rather than to a device that may have signed out.
        guard let devices = found else { return .retriable("the session log is not current; held until it is") }
        // Nothing to send to: the teacher's devices signed out or turned push off since.
        guard !devices.isEmpty else { return .sent }
        let payload = PushChannel.payload(claim.digest, merged: claim.merged)
        var outcomes: [DeliveryAttempt] = []
        for device in devices {
            outcomes.append(push(payload, to: device, claim: claim, over: connection, now: now))
        }
        if let retriable = outcomes.first(where: { if case .retriable = $0 { true } else { false } }) { return retriable }
        if outcomes.contains(.sent) { return .sent }
        return outcomes.first ?? .sent
    }

    /// The subscriptions whose session still lives; the others are dropped
    /// (the device signed out, the teacher was signed out everywhere, or
    /// the session went unused past `SESSION_DAYS`). Nil while this
    /// replica's view of the session log is not current.
    private func live(_ devices: [PushSubscription]) throws(StoreError) -> [PushSubscription]? {
        var kept: [PushSubscription] = []
        for device in devices {
            switch sessions.hasEnded(
                hash: device.sessionHash, teacher: device.teacherId, seen: device.sessionSeen, renewedAt: device.renewedMs)
            {
            case true?:
                try store.removePushSubscription(endpoint: device.endpoint)
                logger.info("push subscription dropped: its session ended", ["teacher": device.teacherId])
            case false?: kept.append(device)
            case nil: return nil
            }
        }
        return kept
    }

    private func push(_ payload: [UInt8], to device: PushSubscription, claim: ClaimedDelivery, over connection: Int, now: Double)
        -> DeliveryAttempt
    {
        // The token's audience is the endpoint's origin (RFC 8292 §2).
        let audience = AccessPolicy.origin(of: device.endpoint)
        guard PushChannel.endpointHost(device.endpoint, overHTTP: allowsHTTP) != nil, let p256dh = RandomID.unbase64url(device.p256dh),
            let auth = RandomID.unbase64url(device.auth),
            let body = WebPush.encrypt(payload, p256dh: p256dh, auth: auth),
            let authorization = WebPush.authorization(
                audience: audience, subject: vapid.subject, expires: Int(now) + PushChannel.timeToLive, key: vapid.key)
        else {
            return .notRetriable("a device's subscription cannot be encrypted for or reached")
        }
        var headers = [
            ("Content-Type", "application/octet-stream"), ("Content-Encoding", "aes128gcm"), ("TTL", String(PushChannel.timeToLive)),
            ("Urgency", claim.urgent ? "high" : "normal"), ("Authorization", authorization)
        ]
        // A list's newer revision replaces one the push service still holds for an absent device.
        if claim.digest.scope != .rule { headers.append(("Topic", PushChannel.topic(claim.digest))) }
        let result = posts.post(device.endpoint, headers: headers, body: body, over: connection)
        if case .answered(let status, _, _) = result, status == 404 || status == 410 {
            // RFC 8030 §7.3: the subscription expired or the browser dropped it.
            try? store.removePushSubscription(endpoint: device.endpoint)
            logger.info(
                "push subscription dropped: the push service says it is gone", ["teacher": device.teacherId, "status": String(status)])
            // Nothing is owed to a device that is gone, as to a teacher with
            // none: the message is in the 알림함, and no failure is counted.
            return .sent
        }
        // What an admin reads in 관리 says what happened, never what the far
        // side said or how its connection failed: an endpoint is a browser's
        // choice, and its answers would make the notifier a scanner.
        switch result {
        case .answered(let status, let retryAfter, _):
            return HTTPPosts.attempt(.answered(status: status, retryAfter: retryAfter, body: ""), now: now)
        case .unreachable: return .retriable("the push service did not answer")
        }
    }

    /// What the device shows: the list's title, a count, and the app's
    /// address of the list. `tag` (the digest's id) makes a retry's copy
    /// replace the first notification instead of showing twice. A
    /// message that replaced held ones (`merged`) says how many it stands for.
    static func payload(_ digest: Digest, merged: Int) -> [UInt8] {
        let added = digest.entries.count { $0.change != .removed }
        let removed = digest.entries.count - added
        let what: String
        switch digest.scope {
        case _ where merged > 0: what = "알림 \(merged + 1)건"
        case .rule: what = "학교 규칙 알림"
        // Never pushed: a 보호자 안내 goes to the school's webhook only.
        case .guardian: what = "보호자 안내"
        case .service, .overdue: what = "학생 \(digest.entries.count)명"
        case .class, .grade:
            what = digest.revision > 1 ? "정정 · 추가 \(added)건" + (removed > 0 ? " · 삭제 \(removed)건" : "") : "지도 \(added)건"
        }
        var writer = JSONWriter(capacity: 256)
        writer.field("title", digest.subject)
        writer.field("body", what + " · 앱에서 보기")
        writer.field("entries", digest.entries.count)
        writer.field("messages", merged + 1)
        writer.field("url", Page.digestPath(of: digest.digestId))
        writer.field("tag", digest.digestId)
        return writer.finish()
    }

    /// RFC 8030 §5.4: at most 32 characters of the URL-safe base64 alphabet.
    static func topic(_ digest: Digest) -> String {
        String(RandomID.base64url(SHA256.hash(utf8: "\(digest.schoolId)/\(digest.scope.rawValue)/\(digest.date)")).prefix(32))
    }
}

/// `VAPID_PRIVATE_KEY` and `VAPID_SUBJECT`: who this server says it is to
/// push services. Push is on when they are set.
package struct VAPIDSettings: Sendable {
    package let key: P256Key
    /// `mailto:` the operator, or their `https:` page.
    package let subject: String

    package init(key: P256Key, subject: String) {
        self.key = key
        self.subject = subject
    }

    /// The public key browsers subscribe with (`applicationServerKey`), base64url.
    package var publicKey: String { RandomID.base64url(key.publicKey) }

    static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> VAPIDSettings? {
        guard let text = environment["VAPID_PRIVATE_KEY"], !text.isEmpty else {
            // A subject alone says the operator meant push on: say why it is not.
            if environment["VAPID_SUBJECT"] != nil {
                throw ConfigurationError(
                    variable: "VAPID_SUBJECT",
                    reason: "is set but VAPID_PRIVATE_KEY is not: set both for Web Push (`guidance-admin vapid`), or neither")
            }
            return nil
        }
        guard let scalar = RandomID.unbase64url(text), let key = P256Key(privateKey: scalar) else {
            throw ConfigurationError(
                variable: "VAPID_PRIVATE_KEY",
                reason: "is not a P-256 private key as base64url of 32 bytes; `guidance-admin vapid` makes one")
        }
        let subject = environment["VAPID_SUBJECT"] ?? ""
        guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
            throw ConfigurationError(
                variable: "VAPID_SUBJECT",
                reason: "must be mailto:<the operator's address> or https://<their page> when VAPID_PRIVATE_KEY is set")
        }
        return VAPIDSettings(key: key, subject: subject)
    }
}
