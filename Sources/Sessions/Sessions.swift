import Common
import Crypto
import Foundation
import Guidance
import Kafka

/// A signed-in browser, as its cookie carries it (signed, so it cannot be
/// altered). The server stores nothing per session until it ends.
package struct Session: Sendable, Equatable {
    /// 128 random bits in hex. Only its SHA-256 (`hash`) ever leaves the
    /// cookie, into the session log.
    package let id: String
    package let teacherID: String
    /// When it was signed in or last renewed, in ms since 1970; it ends
    /// `SESSION_DAYS` after, unless used (and so renewed) before.
    package let renewedAt: Int64
    /// How it was signed in: `token:<fingerprint>` ends with that token;
    /// `link` (an e-mailed link). A device paired by code inherits it.
    package let credential: String
    /// How far its replica had read the session log (the offset after the
    /// last record applied) when the teacher signed in with it: a sign-out
    /// everywhere at or after that offset was not seen, and ends it. A
    /// renewal keeps it, so a cookie renewed by a request in flight at a
    /// revocation dies with the session. nil: a cookie from before it was
    /// kept (its renewal time is compared with the sign-out's instead).
    package let seen: Int64?

    package init(id: String, teacherID: String, renewedAt: Int64, credential: String, seen: Int64?) {
        self.id = id
        self.teacherID = teacherID
        self.renewedAt = renewedAt
        self.credential = credential
        self.seen = seen
    }

    /// The same session renewed at `time`.
    func renewed(at time: Int64, seen: Int64? = nil) -> Session {
        Session(id: id, teacherID: teacherID, renewedAt: time, credential: credential, seen: seen ?? self.seen)
    }

    package var hash: String { SHA256.hex(SHA256.hash(utf8: id)) }
}

/// Why a sign-in link or device code did not sign anyone in.
package enum GrantRefusal: Error, Sendable, Equatable {
    case invalid
    case expired
    case used
    /// Made before its teacher was signed out everywhere (by the teacher,
    /// an admin or `guidance-admin session revoke`).
    case revoked
}

/// Sessions: signing them into cookies, checking them on every request,
/// ending them, and the two ways in that need no token (an e-mailed link,
/// a device code). Ends and grant uses are shared through the `SessionLog`.
package final class Sessions: Sendable {
    package let days: Int
    package let log: SessionLog
    private let key: [UInt8]

    /// A link's life, and a device code's.
    package static let linkLifetime: Int64 = 15 * 60_000
    package static let codeLifetime: Int64 = 10 * 60_000
    /// A session used after this long since it was renewed gets a new cookie.
    static let renewAfter: Int64 = 3_600_000
    /// Code characters: no 0/O, 1/I/L look-alikes.
    static let codeAlphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")

    /// - Parameters:
    ///   - secret: `SESSION_SECRET`; nil: a random one per process.
    ///   - days: `SESSION_DAYS`, how long an unused session lives.
    package init(secret: String?, days: Int, log: SessionLog) {
        self.days = days
        self.log = log
        let secret = secret.map { Array($0.utf8) } ?? RandomID.bytes(32)
        key = SHA256.hash(Array("guidance sessions\n".utf8) + secret)
    }

    var lifetime: Int64 { Int64(days) * 86_400_000 }
    /// The cookie's `Max-Age`.
    package var maxAge: Duration { .seconds(days * 86_400) }

    // MARK: - Cookies

    /// A new session for `teacher`, ended by any sign-out everywhere at or
    /// after `seen` in the log (by default, where this replica has read to).
    package func new(teacher: String, credential: String, seen: Int64? = nil) -> Session {
        Session(
            id: SHA256.hex(RandomID.bytes(16)), teacherID: teacher, renewedAt: log.now(), credential: credential,
            seen: seen ?? log.position)
    }

    /// The cookie value for `session` under the cookie `name` (a gate cookie
    /// is not a teacher-page cookie).
    package func cookieValue(_ session: Session, name: String) -> String {
        seal(
            "session/" + name,
            [session.id, session.teacherID, String(session.renewedAt), session.credential] + (session.seen.map { [String($0)] } ?? []))
    }

    package enum Check: Sendable {
        case valid(Session, Teacher)
        /// The cookie no longer signs anyone in; why, for the log.
        case invalid(String)
        /// The session log is not read up to where it stood at start yet, or
        /// this process's view of it is not current (`SessionLog.isCurrent`).
        case starting
    }

    /// Whether the cookie `value` still signs its teacher in.
    package func check(_ value: String, name: String, roster: Roster) -> Check {
        // Four fields: a cookie from before `seen` was kept.
        guard let fields = open("session/" + name, value), fields.count == 4 || fields.count == 5, let renewedAt = Int64(fields[2]),
            fields.count == 4 || Int64(fields[4]) != nil
        else {
            return .invalid("not a session cookie of this service")
        }
        let session = Session(
            id: fields[0], teacherID: fields[1], renewedAt: renewedAt, credential: fields[3],
            seen: fields.count == 5 ? Int64(fields[4]) : nil)
        let now = log.now()
        guard renewedAt + lifetime > now else { return .invalid("expired") }
        guard let teacher = roster.teachers[session.teacherID] else { return .invalid("teacher no longer in the roster") }
        if session.credential.hasPrefix("token:")
            && !roster.holdsToken(teacher: teacher.id, fingerprint: String(session.credential.dropFirst(6)))
        {
            return .invalid("its token was revoked")
        }
        let hash = session.hash
        guard log.isCurrent else { return .starting }
        return log.read { state -> Check in
            guard state.caughtUp else { return .starting }
            if state.ended[hash] != nil { return .invalid("signed out") }
            if state.signedOut(teacher.id, seen: session.seen, renewedAt: renewedAt) { return .invalid("signed out everywhere") }
            return .valid(session, teacher)
        }
    }

    /// Whether the session `hash` of `teacher`, signed in having read the log
    /// up to `seen` and last known renewed at `renewedAt`, has ended: signed
    /// out, signed out everywhere, or unused past `SESSION_DAYS`. Nil while
    /// this process's view of the log is not current.
    package func hasEnded(hash: String, teacher: String, seen: Int64?, renewedAt: Int64) -> Bool? {
        if renewedAt + lifetime <= log.now() { return true }
        guard log.isCurrent else { return nil }
        return log.read { state -> Bool? in
            guard state.caughtUp else { return nil }
            return state.ended[hash] != nil || state.signedOut(teacher, seen: seen, renewedAt: renewedAt)
        }
    }

    /// The session renewed now, when it was last renewed over an hour ago.
    package func renewal(of session: Session) -> Session? {
        let now = log.now()
        guard now - session.renewedAt > Sessions.renewAfter else { return nil }
        return session.renewed(at: now)
    }

    // MARK: - Ending

    /// Ends one session, on every replica.
    package func end(_ session: Session) async throws(KafkaError) {
        try await log.publish(.ended(session: session.hash, at: log.now()))
    }

    /// Ends every session of `teacher` signed in before the sign-out's
    /// place in the log (or, for cookies from before that was kept, renewed
    /// until now, this millisecond included), and every device code they
    /// made. The caller's own session, if it should go on, comes back
    /// renewed after the cut, having seen it.
    package func signOutEverywhere(teacher: String, keeping session: Session? = nil) async throws(KafkaError) -> Session? {
        let cut = log.now()
        try await log.publish(.signedOut(teacher: teacher, at: cut))
        // `publish` returned once this replica read the log past the cut.
        let seen = log.position
        return session.map { $0.renewed(at: max(cut + 1, log.now()), seen: seen) }
    }

    // MARK: - Sign-in links

    /// A link token for `teacher`, valid 15 minutes and once.
    package func linkToken(for teacher: Teacher) -> String {
        seal("link", [teacher.id, SHA256.hex(RandomID.bytes(16)), String(log.now() + Sessions.linkLifetime)])
    }

    /// The teacher a link token names, if it is genuine, in time and not
    /// revoked (it may have been used).
    package func linkTeacher(_ token: String) -> Result<String, GrantRefusal> {
        guard let fields = open("link", token), fields.count == 3, let until = Int64(fields[2]) else { return .failure(.invalid) }
        guard until > log.now() else { return .failure(.expired) }
        if revoked(fields[0], grantMadeAt: until - Sessions.linkLifetime) { return .failure(.revoked) }
        return .success(fields[0])
    }

    /// Uses the link: a new session for its teacher, or why not.
    package func useLink(_ token: String, roster: Roster) async throws(KafkaError) -> Result<Session, GrantRefusal> {
        // Before the checks: a sign-out read after them ends the new session.
        let seen = log.position
        let teacherID: String
        switch linkTeacher(token) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let id): teacherID = id
        }
        guard roster.teachers[teacherID] != nil else { return .failure(.invalid) }
        let session = new(teacher: teacherID, credential: "link", seen: seen)
        guard try await use(grant: "link/" + SHA256.hex(SHA256.hash(utf8: token)), by: session) else { return .failure(.used) }
        return .success(session)
    }

    // MARK: - Device codes

    /// A new device code for `session`'s teacher, shown as `ABCD-EFGH`.
    package func issueCode(for session: Session) async throws(KafkaError) -> String {
        var generator = SystemRandomNumberGenerator()
        let code = String((0..<8).map { _ in Sessions.codeAlphabet[Int(generator.next(upperBound: UInt32(Sessions.codeAlphabet.count)))] })
        // Never before the issuing session's renewal: a session kept through
        // a sign-out everywhere is renewed 1 ms past the cut, and its codes
        // must outlive the cut with it.
        let now = max(log.now(), session.renewedAt)
        // The log voids it if a sign-out before it ended its session.
        try await log.publish(
            .code(
                code: codeHash(code), teacher: session.teacherID, credential: session.credential,
                until: now + Sessions.codeLifetime, at: now, session: session.hash, seen: session.seen))
        return code.prefix(4) + "-" + code.suffix(4)
    }

    /// Uses a device code as typed (any case, spaces and dashes ignored):
    /// a new session for the teacher who showed it, or why not. `waiting`:
    /// look for a code not read here yet for up to 2 s.
    package func useCode(_ typed: String, roster: Roster, waiting: Bool = true) async throws(KafkaError) -> Result<Session, GrantRefusal> {
        let code = String(typed.uppercased().filter { !" -".contains($0) })
        guard code.count == 8, code.allSatisfy(Sessions.codeAlphabet.contains) else { return .failure(.invalid) }
        let hash = codeHash(code)
        // Shown on another replica a moment ago, it may still be on its way
        // here: look for up to 2 s (which also slows anyone guessing).
        if waiting { _ = await log.until(atMost: .seconds(2)) { log.read { $0.codes[hash] } != nil } }
        // Before the checks: a sign-out read after them ends the new session.
        let seen = log.position
        guard let issued = log.read({ $0.codes[hash] }) else { return .failure(.invalid) }
        guard issued.until > log.now() else { return .failure(.expired) }
        guard roster.teachers[issued.teacher] != nil else { return .failure(.invalid) }
        if issued.void { return .failure(.revoked) }
        let session = new(teacher: issued.teacher, credential: issued.credential, seen: seen)
        guard try await use(grant: "code/" + hash, by: session) else {
            // Voided before this use in the log's order (a 로그아웃 at the same moment), or used by another.
            return .failure(log.read { $0.codes[hash]?.void == true } ? .revoked : .used)
        }
        return .success(session)
    }

    /// Whether `teacher` was signed out everywhere at or after `made`: a
    /// link made before the cut dies with the sessions that could use it.
    private func revoked(_ teacher: String, grantMadeAt made: Int64) -> Bool {
        log.read { state in state.signedOut[teacher].map { made <= $0.at } ?? false }
    }

    /// Codes have 40 bits: keyed, so the log does not let anyone who reads
    /// it find them by trying every one.
    private func codeHash(_ code: String) -> String {
        SHA256.hex(HMAC.sha256(key: key, message: Array("code\n\(code)".utf8)))
    }

    /// Whether `session` is the first to use `grant`: its use is published,
    /// and wins only if it is the first in the log's order.
    private func use(grant: String, by session: Session) async throws(KafkaError) -> Bool {
        if log.read({ $0.used[grant] != nil }) { return false }
        try await log.publish(.used(grant: grant, session: session.hash, at: log.now()))
        return log.read { $0.used[grant]?.session == session.hash }
    }

    // MARK: - Forwarded requests

    /// The `Forwarded-Client` header a service sends with a request it
    /// passes on to the other (`Forwarding`): the client's address, sealed
    /// with the shared secret and good for 30 s, so that the other service
    /// records who asked, not the service that asked for them.
    package func forwardedClient(_ address: String) -> String {
        seal("client", [address, String(log.now() + 30_000)])
    }

    /// The address a `Forwarded-Client` header carries, if this service
    /// sealed it (or its peer, with the same `SESSION_SECRET`) in the last 30 s.
    package func forwardedClient(from header: String) -> String? {
        guard let fields = open("client", header), fields.count == 2, let until = Int64(fields[1]), until > log.now() else {
            return nil
        }
        return fields[0]
    }

    // MARK: - Sealing

    /// `base64url(fields joined by LF).base64url(HMAC-SHA256(purpose LF payload))`.
    func seal(_ purpose: String, _ fields: [String]) -> String {
        let payload = Array(fields.joined(separator: "\n").utf8)
        return RandomID.base64url(payload) + "."
            + RandomID.base64url(HMAC.sha256(key: key, message: Array((purpose + "\n").utf8) + payload))
    }

    func open(_ purpose: String, _ text: String) -> [String]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, text.utf8.count < 2048, let payload = RandomID.unbase64url(parts[0]),
            let mac = RandomID.unbase64url(parts[1]),
            SHA256.constantTimeEqual(mac, HMAC.sha256(key: key, message: Array((purpose + "\n").utf8) + payload))
        else { return nil }
        return String(decoding: payload, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }
}
