import Common
import Foundation
import Guidance
import HTTP
import Kafka
import Synchronization

/// Records every read of student data by a teacher (`AccessRecord`) on the
/// access topic, for the notifier to store. The request only appends to a
/// buffer (a lock and an append; the record's id and time text are made
/// later); every 200 ms, or at 100 records, the buffer goes to the producer
/// as one message, and `stop` sends what is left. Each message costs
/// librdkafka's threads about 60 µs, so batches of 25 cost 2.4 µs a read
/// and of 100 0.9 µs (at 44,000–54,000 look-ups/s). Batches of 100 once
/// took peak RSS to 92 MiB: the producer kept each finished send's
/// completion, and with it the batch's records, until the sends before it
/// finished; it no longer does (61 MiB). A message the broker refuses after the producer's retries
/// is logged and counted (`access_records_lost_total`), never silently
/// dropped. What a kill -9 can lose: the last 200 ms of records.
package final class AccessLog: Sendable {
    private let producer: Producer
    private let topic: String
    private let metrics: Metrics
    private let logger: Logger
    private let buffer = Mutex<[Pending]>([])
    /// What the flusher's period is measured on.
    private let clock: any Clock<Duration>
    /// The service's clock: when a record was made, and its school day.
    private let now: @Sendable () -> Double
    /// Record ids: one random UUID per process, its last 48 bits counted up
    /// (a UUID per record cost two `getrandom` calls on the request path).
    private let idPrefix: String
    private let idBase: UInt64
    private let issued = Atomic<UInt64>(0)
    /// The reads recorded this school day (`Seen`): a view is one record
    /// per teacher, kind, target and day, so a list the gate refreshes every
    /// 30 s, or a photo shown again, is not a new read.
    private let seen = Mutex(Seen())

    struct Seen {
        /// The newest school day (days since 1970 in a school's time zone) seen.
        var day = 0
        /// The reads recorded, each as a 64-bit hash of its day, teacher,
        /// kind, school and target: a province's morning of look-ups on one
        /// replica is about a million, 8 bytes each, not a string each.
        var keys: Set<Int> = []

        /// Whether this read is new today; notes it.
        mutating func first(_ key: Int, day: Int) -> Bool {
            if day > self.day {
                // A new day somewhere: start again (a school in another time
                // zone may record one read twice across the change).
                self.day = day
                keys.removeAll(keepingCapacity: true)
            }
            return keys.insert(key).inserted
        }
    }

    /// A read as the request leaves it.
    struct Pending {
        let at: Double
        let school: String
        let teacher: String
        let action: AccessRecord.Action
        let target: String
        let client: String
    }
    static let batch = 100
    static let interval: Duration = .milliseconds(200)

    package init(
        producer: Producer, topic: String, metrics: Metrics, logger: Logger, clock: any Clock<Duration>,
        now: @escaping @Sendable () -> Double
    ) {
        self.producer = producer
        self.clock = clock
        self.now = now
        self.topic = topic
        self.metrics = metrics
        self.logger = logger
        let base = RandomID.uuid()
        idPrefix = String(base.prefix(24))
        idBase = UInt64(base.suffix(12), radix: 16) ?? 0
    }

    /// The part that sends the buffer every 200 ms, and what is left at
    /// `stop` (which comes before the producer closes).
    package var part: Part {
        let flusher = Loop(
            "access log", every: AccessLog.interval, wokenBy: "`stop`; the period is its batch (a full batch of 100 goes from the request)",
            clock: clock, waitsFirst: true
        ) { [weak self] in self?.flush() }
        return flusher.part { self.flush() }
    }

    /// Records `action` on `target` by the caller, once per school day for a
    /// read (an export and an erasure every time); nothing when no teacher
    /// is signed in (authentication off).
    package func record(_ caller: Caller, _ action: AccessRecord.Action, school: String, target: String) {
        guard let teacher = caller.teacher else { return }
        let now = self.now()
        if action != .export && action != .erase {
            let offset = caller.roster.school(school).map { $0.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: now)) } ?? 0
            let day = Int(((now + Double(offset)) / 86_400).rounded(.down))
            var hasher = Hasher()
            hasher.combine(teacher.id)
            hasher.combine(action)
            hasher.combine(school)
            hasher.combine(target)
            hasher.combine(day)
            let key = hasher.finalize()
            guard seen.withLock({ $0.first(key, day: day) }) else { return }
        }
        let record = Pending(at: now, school: school, teacher: teacher.id, action: action, target: target, client: caller.client)
        let full = buffer.withLock { records -> [Pending]? in
            records.append(record)
            guard records.count >= AccessLog.batch else { return nil }
            defer { records = AccessLog.emptyBatch() }
            return records
        }
        if let full { send(full) }
    }

    func flush() {
        let records = buffer.withLock { records in
            defer { records = AccessLog.emptyBatch() }
            return records
        }
        if !records.isEmpty { send(records) }
    }

    /// The `issued`-th record's id: the process's UUID with its last 48 bits
    /// counted up, written into one string.
    private func accessID(_ issued: UInt64) -> String {
        let low = (idBase &+ issued) & 0xFFFF_FFFF_FFFF
        return String(unsafeUninitializedCapacity: 36) { text in
            var at = 0
            for byte in idPrefix.utf8 {
                text[at] = byte
                at += 1
            }
            for shift in stride(from: 44, through: 0, by: -4) {
                text[at] = AccessLog.hexDigits[Int(low >> UInt64(shift) & 0xF)]
                at += 1
            }
            return at
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Room for a whole batch at once: grown by doubling, a batch of 25
    /// took six allocations under the lock every request shares (of 100, eight).
    private static func emptyBatch() -> [Pending] {
        var records: [Pending] = []
        records.reserveCapacity(batch)
        return records
    }

    private func send(_ pending: [Pending]) {
        let (metrics, logger) = (self.metrics, self.logger)
        let first = issued.add(UInt64(pending.count), ordering: .relaxed).oldValue
        let records = pending.enumerated().map { index, read in
            AccessRecord(
                accessId: accessID(first &+ UInt64(index)), at: Timestamp.format(read.at), schoolId: read.school,
                teacherId: read.teacher, action: read.action, target: read.target, client: read.client)
        }
        // One message per batch, keyed by its first school: records carry their school, and
        // a message per school made hundreds of one-record messages in a district.
        let key = Array((records.first?.schoolId ?? "").utf8)
        // The report needs the count only: the records stay out of what it holds.
        let count = records.count
        producer.send(OutgoingMessage(topic: topic, key: key, value: AccessRecord.message(records))) { result in
            guard case .failure(let error) = result else { return }
            metrics.increment("access_records_lost_total", help: "Access records the broker did not acknowledge", by: Double(count))
            logger.error("access records were not stored", ["records": String(count), "error": error.message])
        }
    }
}
