import Common
import Foundation
import Guidance
import Kafka
import Synchronization

/// What every replica of both services must agree on about sessions, kept
/// in one Kafka topic (`guidance.sessions`, one partition, kept
/// `SESSION_DAYS` + 1 days) that each process reads whole: sessions ended,
/// teachers signed out everywhere, device codes issued, and sign-in grants
/// (links, codes) used. Nothing here names a student; sessions and codes
/// appear only as SHA-256 hashes.
///
/// Kafka, not the notifier's store: the ingest keeps signing in and
/// registering while the notifier or its store is down, and a record reaches
/// every replica within milliseconds. A grant is used once because the log
/// has one order: a replica publishes its use, waits until it has read the
/// log up to it, and wins only if its use is the first one there.
package final class SessionLog: Sendable {
    package enum Record: Sendable, Equatable {
        /// One session signed out.
        case ended(session: String, at: Int64)
        /// Every session of the teacher renewed at or before `at` ends, and
        /// every grant (link, device code) made for the teacher until then.
        case signedOut(teacher: String, at: Int64)
        /// A device code, valid until `until`, signs a device in as `teacher`
        /// with the issuing session's credential. `session` is the issuing
        /// session's hash and `seen` how far the issuing replica had read the
        /// log when that session was signed in (`Session.seen`); nil in
        /// records written before they were kept.
        case code(code: String, teacher: String, credential: String, until: Int64, at: Int64, session: String?, seen: Int64?)
        /// A grant (link or code) used by the session `session`.
        case used(grant: String, session: String, at: Int64)
    }

    struct Code: Sendable, Equatable {
        let teacher: String
        let credential: String
        let until: Int64
        /// The issuing session's hash, if the record names it.
        let session: String?
        /// Ended by the log: its session was signed out, or its teacher
        /// signed out everywhere, before it or after it in the log's order.
        var void = false
    }

    /// A teacher signed out everywhere: when (the replica's clock) and where
    /// in the log (the record's offset). The offset is what orders it
    /// against sessions and codes minted on replicas that had not read it.
    struct Cut: Sendable, Equatable {
        let at: Int64
        let offset: Int64
    }

    struct State: Sendable {
        var ended: [String: Int64] = [:]
        var signedOut: [String: Cut] = [:]
        var codes: [String: Code] = [:]
        var used: [String: (session: String, at: Int64)] = [:]
        /// The offset after the last record applied.
        var position: Int64 = 0
        /// The log's end when reading began; nil until known.
        var startEnd: Int64?
        var caughtUp: Bool { startEnd.map { position >= $0 } ?? false }
        /// The reading thread did not run for a while (the process was
        /// frozen, or starved): until it has read up to the log's end as
        /// asked after that, what it holds may miss sign-outs.
        var behind = false

        /// Applies `record`, read at `offset`: the log's order, not the
        /// clocks of the replicas that wrote it, decides what a sign-out ends.
        mutating func apply(_ record: Record, offset: Int64) {
            switch record {
            case .ended(let session, let at):
                ended[session] = at
                for (hash, code) in codes where code.session == session { codes[hash]?.void = true }
            case .signedOut(let teacher, let at):
                signedOut[teacher] = Cut(at: max(signedOut[teacher]?.at ?? 0, at), offset: offset)
                for (hash, code) in codes where code.teacher == teacher { codes[hash]?.void = true }
            case .code(let code, let teacher, let credential, let until, let at, let session, let seen):
                var issued = Code(teacher: teacher, credential: credential, until: until, session: session)
                // Minted by a session that a sign-out before it in the log ended
                // (its replica had not read that yet), or by one signed out.
                issued.void =
                    session.map { ended[$0] != nil } ?? false
                    || signedOut[teacher].map { cut in seen.map { $0 <= cut.offset } ?? (at <= cut.at) } ?? false
                codes[code] = issued
            // The first use of a grant is the one that counts; a code's use
            // counts only if nothing before it in the log voided the code (a
            // 로그아웃 of the session that showed it, published while the use
            // was being checked): then nobody wins it.
            case .used(let grant, let session, let at):
                guard used[grant] == nil else { break }
                let voided = grant.hasPrefix("code/") && codes[String(grant.dropFirst("code/".count))]?.void == true
                used[grant] = (voided ? "" : session, at)
            }
        }

        /// Whether a session signed in with `seen` and last renewed at
        /// `renewedAt` was ended by a sign-out everywhere of `teacher`: one
        /// at or after the place in the log its replica had read to when it
        /// signed it in (so it did not see it), whatever the replicas'
        /// clocks say; for a cookie from before `seen` was kept, one made at
        /// or after its renewal.
        func signedOut(_ teacher: String, seen: Int64?, renewedAt: Int64) -> Bool {
            guard let cut = signedOut[teacher] else { return false }
            guard let seen else { return renewedAt <= cut.at }
            return seen <= cut.offset
        }

        /// Forgets what can no longer matter: ends and sign-outs older than
        /// the longest a session lives unrenewed, codes past their time,
        /// uses of grants long expired.
        mutating func prune(now: Int64, lifetime: Int64) {
            ended = ended.filter { $0.value > now - lifetime }
            signedOut = signedOut.filter { $0.value.at > now - lifetime }
            codes = codes.filter { $0.value.until > now }
            used = used.filter { $0.value.at > now - 86_400_000 }
        }
    }

    package let topic: String
    let lifetime: Duration
    /// The service's clock.
    package let clock: @Sendable () -> Double
    private let kafka: KafkaConfig
    /// nil: a log of this process alone (`local`).
    private let producer: Producer?
    private let logger: Logger
    private let state = Mutex(State())
    /// When the reading thread last went round its loop, in milliseconds
    /// of `uptime`; `.min` before the first time.
    private let heartbeat = Atomic<Int64>(.min)
    /// The system's time: a freeze stops this process, not the time the
    /// requests that wait meanwhile live in.
    private let uptime = Uptime()
    /// Rung each time the reading thread went round its loop.
    private let wentRound = Doorbell()
    /// The longest the reading thread may go without a turn before what it
    /// holds is no longer trusted.
    static let staleAfter: Duration = .seconds(1)

    package convenience init(
        topic: String, kafka: KafkaConfig, producer: Producer, lifetime: Duration, clock: @escaping @Sendable () -> Double, logger: Logger
    ) {
        self.init(topic: topic, kafka: kafka, producer: Optional(producer), lifetime: lifetime, clock: clock, logger: logger)
    }

    /// A log that lives in this process only, for a single process that
    /// needs no broker (the access tests).
    package static func local(lifetime: Duration = .seconds(30 * 86_400), clock: @escaping @Sendable () -> Double) -> SessionLog {
        let log = SessionLog(
            topic: "(local)", kafka: KafkaConfig(), producer: nil, lifetime: lifetime, clock: clock, logger: Logger(component: "sessions"))
        log.state.withLock { $0.startEnd = 0 }
        return log
    }

    private init(
        topic: String, kafka: KafkaConfig, producer: Producer?, lifetime: Duration, clock: @escaping @Sendable () -> Double, logger: Logger
    ) {
        self.clock = clock
        self.topic = topic
        self.kafka = kafka
        self.producer = producer
        self.lifetime = lifetime
        self.logger = logger
    }

    /// Whether the log was read up to where it ended when the service started:
    /// before, a session ended a moment ago might still pass.
    package var caughtUp: Bool { state.withLock { $0.caughtUp } }

    /// Whether this process's view of the log can be trusted now: its
    /// reading thread went round within `staleAfter` and is not catching up
    /// after a freeze. A replica paused with SIGSTOP (or starved) wakes with
    /// requests that arrived meanwhile and a view as old as the pause; the
    /// monotonic clock went on, so the heartbeat tells.
    package var isCurrent: Bool {
        guard producer != nil else { return true }
        let beat = heartbeat.load(ordering: .acquiring)
        guard beat != .min, uptime.now.milliseconds - beat <= SessionLog.staleAfter.milliseconds else { return false }
        return !state.withLock { $0.behind }
    }

    /// Returns once the view is current (`isCurrent`), or after `limit`.
    package func current(atMost limit: Duration) async -> Bool {
        await until(atMost: limit) { isCurrent }
    }

    /// Returns once `holds` is true — looked at again after each turn of the
    /// reading thread, which is when it can change — or after `limit`;
    /// whether it held.
    package func until(atMost limit: Duration, _ holds: () -> Bool) async -> Bool {
        await wentRound.wait(until: holds, atMost: limit)
    }

    /// The part that reads the log on a thread of its own, creating the
    /// topic when missing (a broker that is down only delays this); its
    /// stop returns within a poll, 100 ms, and closes the consumer. Made
    /// once, by the service's `Parts`; nothing for a `local` log.
    package var part: Part {
        guard producer != nil else { return Part("session log") }
        let reader = Mutex(Reader(lastPrune: now(), started: now()))
        let bell = Doorbell()
        let loop = Loop(
            "session log", onThreadEvery: .seconds(1), bell: bell,
            wokenBy:
                "its own turn while it reads (each waits in a poll of 100 ms, then rings `wentRound` for waiters `until` a condition); a broker not reachable yet: the period"
        ) { [self] in turn(reader, bell: bell) }
        // Closed and let go: its handle (and librdkafka's threads) end with it.
        return loop.part {
            reader.withLock { reader in
                reader.consumer?.close()
                reader.consumer = nil
            }
        }
    }

    /// Publishes `record`; returns once the broker acknowledged it and this
    /// process has read the log up to it (so its own view includes it).
    package func publish(_ record: Record, timeout: Duration = .seconds(5)) async throws(KafkaError) {
        guard let producer else {
            state.withLock { state in
                state.apply(record, offset: state.position)
                state.position += 1
            }
            return
        }
        let report = try await producer.send(SessionLog.message(record, topic: topic))
        guard await until(atMost: timeout, { state.withLock { $0.position } > report.offset }) else {
            throw KafkaError(.deliveryTimedOut, "the session log was not read up to offset \(report.offset) within \(timeout)")
        }
    }

    /// Where a session or code minted now has read the log to: the offset
    /// after the last record applied, or, while catching up at start, the
    /// log's end then (what was written before this process started is
    /// older than anything it signs in).
    var position: Int64 { state.withLock { max($0.position, $0.startEnd ?? 0) } }

    /// Reads the state under the lock.
    func read<T>(_ body: (State) -> T) -> T { state.withLock { body($0) } }

    /// What the reading thread keeps from one turn to the next.
    private struct Reader {
        var consumer: Consumer?
        /// On the service's clock, in milliseconds (`now()`).
        var lastPrune: Int64
        let started: Int64
        var reported = false
    }

    /// One turn of the reading thread: a poll of the log (then it rings
    /// `bell` for the next at once), or, before it can read, an attempt to
    /// (again after the loop's period, a second).
    private func turn(_ reader: borrowing Mutex<Reader>, bell: Doorbell) {
        guard let consumer = reader.withLock({ $0.consumer }) else {
            if let consumer = connect() {
                reader.withLock { $0.consumer = consumer }
                bell.ring()
            }
            return
        }
        defer { bell.ring() }
        // A turn that comes late means this thread was not running: what it
        // holds is trusted again only once read up to the end as it is now.
        let beat = uptime.now.milliseconds
        let previous = heartbeat.load(ordering: .acquiring)
        var end: Int64?
        if previous != .min, beat - previous > SessionLog.staleAfter.milliseconds {
            state.withLock { $0.behind = true }
            logger.warning(
                "the session log's reader did not run for a while (a frozen or starved process); cookies wait until it has read the log's end",
                ["seconds": String(format: "%.1f", Double(beat - previous) / 1000)])
        }
        if state.withLock({ $0.behind }) {
            end = try? consumer.watermarks(of: TopicPartition(topic: topic, partition: 0), timeout: .seconds(2)).high
        }
        // After the look-up: its wait (a slow broker) is no freeze.
        heartbeat.store(uptime.now.milliseconds, ordering: .releasing)
        let messages = consumer.poll(maxMessages: 500, timeout: .milliseconds(100))
        let now = self.now()
        let (started, reported, prune) = reader.withLock { reader in
            let prune = now - reader.lastPrune > 60_000
            if prune { reader.lastPrune = now }
            return (reader.started, reader.reported, prune)
        }
        let caughtUp = state.withLock { state in
            for message in messages {
                if let value = message.value, let record = SessionLog.decode(value) {
                    state.apply(record, offset: message.offset)
                } else {
                    logger.warning("session log record not understood; skipped", ["offset": String(message.offset)])
                }
                state.position = max(state.position, message.offset + 1)
            }
            if let end, state.position >= end { state.behind = false }
            if prune { state.prune(now: now, lifetime: lifetime.milliseconds) }
            return state.caughtUp
        }
        if !reported && caughtUp {
            reader.withLock { $0.reported = true }
            logger.info("session log read; cookie sign-ins are served", ["ms": String(now - started)])
        }
        wentRound.ring()
    }

    /// A consumer reading the whole log, its topic created when missing,
    /// and where the log starts and ends noted; nil (logged) when the broker
    /// cannot be reached yet.
    private func connect() -> Consumer? {
        do {
            // Retention deletes what no longer matters: the log starts where it still has records.
            let (reader, start, end) = try WholeLog.open(
                topic, kafka: kafka, configs: ["retention.ms": String((lifetime + .seconds(86_400)).milliseconds)], logger: logger)
            state.withLock { state in
                state.position = max(state.position, start)
                state.startEnd = end
            }
            logger.info("reading the session log", ["topic": topic, "records": String(end - start)])
            return reader
        } catch {
            logger.warning("cannot read the session log yet; cookie sign-ins wait for it", ["error": "\(error)"])
            return nil
        }
    }

    /// Milliseconds since 1970, the log's clock.
    /// Now on the service's clock, in Unix milliseconds: every session's times.
    package func now() -> Int64 { Int64(clock() * 1000) }

    /// The Kafka message that carries `record` (also for `guidance-admin`).
    package static func message(_ record: Record, topic: String) -> OutgoingMessage {
        OutgoingMessage(topic: topic, key: Array(key(record).utf8), value: encode(record))
    }

    static func key(_ record: Record) -> String {
        switch record {
        case .ended(let session, _): "ended/" + session
        case .signedOut(let teacher, _): "signedOut/" + teacher
        case .code(let code, _, _, _, _, _, _): "code/" + code
        case .used(let grant, let session, _): "used/\(grant)/\(session)"
        }
    }

    static func encode(_ record: Record) -> [UInt8] {
        var writer = JSONWriter(capacity: 160)
        switch record {
        case .ended(let session, let at):
            writer.field("type", "ended")
            writer.field("session", session)
            writer.field("at", at)
        case .signedOut(let teacher, let at):
            writer.field("type", "signedOut")
            writer.field("teacher", teacher)
            writer.field("at", at)
        case .code(let code, let teacher, let credential, let until, let at, let session, let seen):
            writer.field("type", "code")
            writer.field("code", code)
            writer.field("teacher", teacher)
            writer.field("credential", credential)
            writer.field("until", until)
            writer.field("at", at)
            if let session { writer.field("session", session) }
            if let seen { writer.field("seen", seen) }
        case .used(let grant, let session, let at):
            writer.field("type", "used")
            writer.field("grant", grant)
            writer.field("session", session)
            writer.field("at", at)
        }
        return writer.finish()
    }

    static func decode(_ bytes: [UInt8]) -> Record? {
        guard let object = try? JSONReader.object(bytes) else { return nil }
        let fields = JSONFields(object)
        func at() throws(FieldError) -> Int64 { Int64(try fields.integer("at")) }
        do {
            switch try fields.string("type") {
            case "ended": return .ended(session: try fields.string("session"), at: try at())
            case "signedOut": return .signedOut(teacher: try fields.string("teacher"), at: try at())
            case "code":
                return .code(
                    code: try fields.string("code"), teacher: try fields.string("teacher"), credential: try fields.string("credential"),
                    until: Int64(try fields.integer("until")), at: try at(),
                    session: try fields.optionalString("session"),
                    seen: object["seen"] == nil ? nil : Int64(try fields.integer("seen")))
            case "used": return .used(grant: try fields.string("grant"), session: try fields.string("session"), at: try at())
            default: return nil
            }
        } catch {
            return nil
        }
    }
}
