import Access
import Common
import Foundation
import Guidance
import HTTP
import Kafka
import Sessions
import Web
import Wiring

/// guidance-ingest, assembled from its configuration: roster, producer and
/// HTTP server. `main` only wires signals; tests start it on port 0.
package final class IngestService: Sendable {
    package let config: IngestConfig
    package let roster: LiveRoster
    package let metrics = Metrics()
    private let producer: Producer
    private let server: HTTPServer
    private let logger: Logger
    /// The long-lived parts, in the order they start.
    private let parts: Parts

    package init(config: IngestConfig, roster: Roster? = nil, logger: Logger = Logger(component: "ingest")) throws {
        self.config = config
        self.logger = logger
        let roster =
            try roster.map { LiveRoster($0, logger: logger.with(["part": "roster"])) }
            ?? Startup.liveRoster(from: config.rosterDirectory, web: config.web, clock: config.clock, logger: logger, metrics: metrics)
        try Startup.checkCredentials(
            roster.current, web: config.web, directory: config.rosterDirectory, exposes: "record and delete guidances", logger: logger)
        self.roster = roster
        producer = try Producer(config: config.producer, logger: logger.with(["part": "producer"]), timer: config.timer)
        let metrics = self.metrics
        let producer = self.producer
        metrics.gauge("ingest_events_in_flight", help: "Events produced and awaiting the broker's acknowledgement.") {
            [([], Double(producer.inFlight))]
        }
        metrics.gauge("ingest_producer_replacements", help: "Times a fatal idempotent producer was replaced.") {
            [([], Double(producer.replacements))]
        }
        let policy = AccessPolicy.forService(
            cookieName: SessionCookie.app, publicURL: config.publicURL, settings: config.web, rosters: roster, kafka: config.producer.kafka,
            producer: producer, clock: config.clock, logger: logger)
        let sessions = policy.sessions
        let rosterLog = RosterLog(
            topic: config.topics.roster, kafka: config.producer.kafka, producer: producer, roster: roster, clock: config.clock,
            logger: logger.with(["part": "roster-log"]))
        let photoLog = try PhotoLog(
            topic: config.topics.photos, kafka: config.producer.kafka, producer: producer, logger: logger.with(["part": "photo-log"]))
        var router = Router()
        // Ready once a send goes straight to its partition's leader: before,
        // the first requests waited for topic metadata (p99 643 ms in the
        // first 8 s after a fresh broker, 12-36 ms steady). The access topic
        // too: the first look-ups' records, queued meanwhile, took 8-17 MiB
        // of peak memory at 40,000 reads/s.
        let topics = config.topics.events + [config.topics.access]
        router.addOperationalRoutes(metrics: metrics) {
            guard let missing = await producer.partitionsWithoutLeader(of: topics) else { return (false, "no Kafka broker answers") }
            guard missing.isEmpty else { return (false, "no leader known yet for \(missing.joined(separator: ", "))") }
            guard sessions.log.caughtUp else { return (false, "reading the session log") }
            guard rosterLog.caughtUp else { return (false, "reading the roster log") }
            return (true, "broker reachable; every partition's leader known")
        }
        var routes = GuardedRouter(router: router, policy: policy)
        let accessLog = AccessLog(
            producer: producer, topic: config.topics.access, metrics: metrics, logger: logger.with(["part": "access-log"]),
            clock: config.timer, now: config.clock)
        let photos = StudentPhotos(
            rosterDirectory: roster.directory, uploads: photoLog.directory, accessLog: accessLog, logger: logger.with(["part": "photos"]))
        IngestHandlers(
            producer: producer, topics: config.topics, photos: photos,
            accessLog: accessLog, retention: config.retention, clock: config.clock, metrics: metrics, logger: logger
        ).routes(into: &routes)
        RosterHandlers(log: rosterLog, photoLog: photoLog, photos: photos, roster: roster, accessLog: accessLog, clock: config.clock)
            .routes(into: &routes)
        NotifierReads(
            notifier: config.notifierURL.map {
                Forwarding(
                    base: $0, cookieName: SessionCookie.notifier, sessions: sessions, logger: logger.with(["part": "notifier-reads"]))
            }
        ).routes(into: &routes)
        let errands = Errands(logger: logger.with(["part": "errands"]))
        let signIn = SignIn(
            title: AppPage.title, roles: AppPage.roles, policy: policy, mail: config.mail, publicURL: config.publicURL, errands: errands,
            logger: logger.with(["part": "web"]))
        AppPage(signIn: signIn).routes(into: &routes)
        let http = HTTPMetrics(metrics)
        server = HTTPServer(config: config.http, router: routes.router, logger: logger.with(["part": "http"]), timer: config.timer) {
            record in
            http.record(record)
        }
        parts = Parts(
            [
                [.producer(producer, timeout: config.producer.deliveryTimeout)],
                [accessLog.part],
                [sessions.log.part, rosterLog.part, photoLog.part],
                // Stopped once no request can start one.
                [errands.part(within: config.drainPeriod, clock: config.timer)],
                [.http(server, portVariable: "INGEST_PORT", service: "guidance-ingest", drain: config.drainPeriod)]
                    + [roster.watching(every: config.rosterCheckInterval, clock: config.timer)].compactMap { $0 }
            ], logger: logger)
        let loaded = roster.current
        logger.info(
            "roster loaded",
            ["schools": String(loaded.schools.count), "students": String(loaded.studentCount), "teachers": String(loaded.teachers.count)])
    }

    /// The bound HTTP port (useful with port 0).
    package var port: Int { server.port }

    /// How each of its parts waits: `docs/design.md`'s table.
    package var waits: [Part.Waits] { parts.waits }

    /// Creates missing topics, then starts serving.
    package func start() async throws {
        await ensureTopics()
        try await parts.start()
    }

    /// Stops accepting, drains in-flight requests, flushes the producer.
    package func shutdown() async {
        logger.info("shutting down: draining requests")
        await parts.stop()
        logger.info("shut down")
    }

    /// The topics the ingest creates, each kept for its retention: events
    /// `TOPIC_RETENTION_DAYS`, dead letters `DLQ_RETENTION_DAYS`.
    static func topicSpecs(_ config: IngestConfig) -> [TopicSpec] {
        config.topics.all.map { topic in
            let days = topic == config.topics.deadLetters ? config.retention.deadLetterDays : config.retention.topicDays
            return TopicSpec(name: topic, partitions: config.partitions, configs: ["retention.ms": String(days * 86_400_000)])
        }
    }

    /// Topics are created when missing; a broker that is down now only delays
    /// that, it does not stop the service (it answers 503 until Kafka is back).
    private func ensureTopics() async {
        let specs = IngestService.topicSpecs(config)
        let kafka = config.producer.kafka
        let logger = self.logger
        let partitions = config.partitions
        do {
            // Admin calls block.
            let counts = try await BlockingExecutor.broker.run {
                try Admin(config: kafka, logger: logger).ensureTopics(specs, timeout: .seconds(5))
            }
            for (topic, count) in counts.sorted(by: { $0.key < $1.key }) where count < partitions {
                logger.warning(
                    "topic has fewer partitions than TOPIC_PARTITIONS",
                    ["topic": topic, "partitions": String(count), "wanted": String(partitions)])
            }
        } catch {
            logger.error("could not check or create the topics; requests answer 503 until Kafka is reachable", ["error": "\(error)"])
        }
    }
}
