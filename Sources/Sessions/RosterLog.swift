import Common
import Foundation
import Guidance
import Kafka
import Synchronization

/// Every school's roster versions (관리 → 명부), kept in one Kafka topic
/// (`guidance.roster`: one partition, compacted, each version its own key
/// `school/version`, so nothing is ever deleted) that every replica of both
/// services reads whole, in the log's one order, into its `LiveRoster`. No
/// shared folder: a version applied at one replica reaches the others, on
/// any host, within a poll.
///
/// A school's versions count up from 1. Two admins applying at once on two
/// replicas both publish the next number; the first in the log is the
/// version, the other is skipped by every reader and its publisher answers
/// that the roster changed meanwhile. The versions' students are read again
/// from the log when one is put back (`version(_:of:)`); a replica
/// keeps only each school's latest and every version's summary.
package final class RosterLog: Sendable {
    /// One version as the log keeps it, without its students.
    package struct Entry: Sendable, Equatable {
        package let version: Int
        package let madeBy: String
        package let madeAt: String
        package let restores: Int?
        /// How many students it seats; nil: it kept those in service.
        package let students: Int?
        /// Whether it set the teachers, and which of the school's tables.
        package let teachers: Bool
        package let tables: [SchoolTable]
        /// The school-local day it takes effect (진급); nil: at once.
        package let effective: String?
        /// Where in the log it is (read again to put it back).
        package let offset: Int64
    }

    /// Why a version was not published.
    package enum PublishError: Error, Sendable {
        /// Another version of the school with the same number came first.
        case superseded(by: Entry)
        /// The broker did not acknowledge it, or it was not read back in time.
        case broker(KafkaError)
        /// Larger than a Kafka message may be.
        case tooLarge(bytes: Int)
    }

    private struct State {
        var history: [String: [Entry]] = [:]
        /// Versions whose day has not come yet, by school, in number order.
        var pending: [String: [RosterVersion]] = [:]
    }

    /// The most bytes one version may take: Kafka's message limit
    /// (librdkafka's `message.max.bytes`, 1,000,000) less room for the key
    /// and headers; some 9,000 students.
    package static let maxBytes = 900_000

    private let log: WholeLog
    private let producer: Producer
    private let roster: LiveRoster
    private let logger: Logger
    private let state = Mutex(State())
    /// The service's clock: a version's day comes by it.
    private let clock: @Sendable () -> Double

    package init(
        topic: String, kafka: KafkaConfig, producer: Producer, roster: LiveRoster, clock: @escaping @Sendable () -> Double,
        logger: Logger
    ) {
        log = WholeLog(topic: topic, kafka: kafka, configs: ["cleanup.policy": "compact"], logger: logger)
        self.producer = producer
        self.roster = roster
        self.clock = clock
        self.logger = logger
    }

    package var topic: String { log.topic }

    /// Whether the log was read up to where it ended when the service
    /// started: before, a school's newest students may not be served yet.
    package var caughtUp: Bool { log.caughtUp }

    /// Returns once the log is read up to where it ended at start (every
    /// school's latest version served), or after `limit`; whether it was.
    package func readToEnd(atMost limit: Duration) async -> Bool { await log.readToEnd(atMost: limit) }

    /// Returns once this replica has read `school`'s version `number` or a
    /// later one, or after `limit`: a request may come to a replica a poll
    /// behind the one that answered the admin a moment ago.
    package func knows(_ number: Int, of school: String, atMost limit: Duration) async -> Bool {
        await log.until(atMost: limit) { latest(of: school) >= number }
    }

    /// The school's versions, oldest first.
    package func history(of school: String) -> [Entry] { state.withLock { $0.history[school] ?? [] } }

    /// The number of the school's newest version (0: none), whether served
    /// yet or waiting for its day: the next is based on it.
    package func latest(of school: String) -> Int { history(of: school).last?.version ?? 0 }

    /// Whether the school's version `number` waits for its day.
    package func isPending(_ number: Int, of school: String) -> Bool {
        state.withLock { $0.pending[school]?.contains { $0.version == number } ?? false }
    }

    /// The part that reads the log and serves each school's versions; a
    /// version waiting for its day is served within a poll of it.
    package var part: Part {
        log.part("roster log", everyPoll: true) { [self] messages in
            var read: [(RosterVersion, Int64)] = []
            for message in messages {
                do {
                    read.append((try RosterVersion(json: message.value ?? []), message.offset))
                } catch {
                    logger.error("roster log record not understood; skipped", ["offset": String(message.offset), "error": "\(error)"])
                }
            }
            apply(read)
        }
    }

    /// Publishes `version` and returns its entry once this replica has read
    /// it back and serves it.
    package func publish(_ version: RosterVersion, timeout: Duration = .seconds(10)) async throws(PublishError) -> Entry {
        let bytes = version.json
        guard bytes.count <= RosterLog.maxBytes else { throw .tooLarge(bytes: bytes.count) }
        let report: DeliveryReport
        do {
            report = try await producer.send(
                OutgoingMessage(topic: log.topic, key: Array("\(version.schoolId)/\(version.version)".utf8), value: bytes))
        } catch {
            throw .broker(error)
        }
        guard await log.read(past: report.offset, atMost: timeout) else {
            throw .broker(KafkaError(.deliveryTimedOut, "the roster log was not read up to offset \(report.offset) within \(timeout)"))
        }
        let kept = state.withLock { $0.history[version.schoolId]?.first { $0.version == version.version } }
        guard let kept else {
            throw .broker(KafkaError(.invalidConfiguration, "version \(version.version) of \(version.schoolId) was read but not kept"))
        }
        guard kept.offset == report.offset else { throw .superseded(by: kept) }
        return kept
    }

    /// The school's `version`, read again from the log; nil when the
    /// school has no such version.
    package func version(_ version: Int, of school: String) async throws(KafkaError) -> RosterVersion? {
        guard let entry = history(of: school).first(where: { $0.version == version }) else { return nil }
        return try await log.record(at: entry.offset)?.value.flatMap { try? RosterVersion(json: $0) }
    }

    /// Keeps each version that is its school's next number, in the log's
    /// order; a repeated number (two admins at once) is skipped, as every
    /// reader skips it. Serves those whose day has come — waiting ones
    /// first, then those read — each school's in the order of their day,
    /// then number: a 진급 version on its day replaces what was served,
    /// though versions made before that day have later numbers.
    private func apply(_ read: [(version: RosterVersion, offset: Int64)]) {
        let (now, served) = (clock(), roster.current)
        // Once a zone a poll: a February of a district's waiting versions is looked at every 100 ms.
        var days: [TimeZone: String] = [:]
        let today = { (school: String) -> String in
            let zone = served.school(school)?.timeZone ?? .gmt
            if let day = days[zone] { return day }
            let day = Timestamp.localDate(now, in: zone)
            days[zone] = day
            return day
        }
        let ready = state.withLock { state in
            var ready: [RosterVersion] = []
            for (school, waiting) in state.pending {
                let due = waiting.filter { ($0.effective ?? "") <= today(school) }
                guard !due.isEmpty else { continue }
                ready += due
                state.pending[school] = waiting.count == due.count ? nil : waiting.filter { ($0.effective ?? "") > today(school) }
            }
            for (version, offset) in read {
                let entries = state.history[version.schoolId] ?? []
                guard version.version == (entries.last?.version ?? 0) + 1 else { continue }
                state.history[version.schoolId, default: []].append(
                    Entry(
                        version: version.version, madeBy: version.madeBy, madeAt: version.madeAt, restores: version.restores,
                        students: version.students?.count, teachers: version.teachers != nil,
                        tables: SchoolTable.allCases.filter { version.tables[$0] != nil }, effective: version.effective,
                        offset: offset))
                if let effective = version.effective, effective > today(version.schoolId) {
                    state.pending[version.schoolId, default: []].append(version)
                } else {
                    ready.append(version)
                }
            }
            return ready
        }
        guard !ready.isEmpty else { return }
        let zone = { (school: String) in served.school(school)?.timeZone ?? .gmt }
        roster.apply(ready.sorted { ($0.day(in: zone($0.schoolId)), $0.version) < ($1.day(in: zone($1.schoolId)), $1.version) })
    }
}
