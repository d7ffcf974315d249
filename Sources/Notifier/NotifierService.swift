import Access
import Common
import Foundation
import Guidance
import HTTP
import Kafka
import Sessions
import Store
import Synchronization
import Web
import Wiring

/// guidance-notifier, assembled from its configuration: roster, store,
/// materializer, digest runner and HTTP server. `main` only wires signals;
/// tests start it on port 0.
package final class NotifierService: Sendable, GroupMember {
    package let config: NotifierConfig
    package let roster: LiveRoster
    package let metrics = Metrics()
    private let store: SQLStore
    private let producer: Producer
    private let materializer: Materializer
    let runner: DigestRunner
    let dispatcher: Dispatcher
    let notices: RuleNotices
    private let server: HTTPServer
    private let logger: Logger
    private let parts: Parts

    package init(config: NotifierConfig, roster: Roster? = nil, logger: Logger = Logger(component: "notifier")) throws {
        self.config = config
        self.logger = logger
        let roster =
            try roster.map { LiveRoster($0, logger: logger.with(["part": "roster"])) }
            ?? Startup.liveRoster(from: config.rosterDirectory, web: config.web, clock: config.clock, logger: logger, metrics: metrics)
        try Startup.checkCredentials(
            roster.current, web: config.web, directory: config.rosterDirectory, exposes: "read every inbox", logger: logger)
        self.roster = roster
        store = try config.store.open(clock: config.clock)
        producer = try Producer(
            config: ProducerConfig(kafka: config.kafka, clientID: "guidance-notifier-dlq"), logger: logger.with(["part": "dlq-producer"]),
            timer: config.timer)
        materializer = try Materializer(config: config, roster: roster, store: store, producer: producer, metrics: metrics, logger: logger)
        let publicURL = config.delivery.publicNotifierURL
        let policy = AccessPolicy.forService(
            cookieName: SessionCookie.notifier, publicURL: publicURL, settings: config.web, rosters: roster, kafka: config.kafka,
            producer: producer, clock: config.clock, logger: logger)
        let sessions = policy.sessions
        let rosterLog = RosterLog(
            topic: config.topics.roster, kafka: config.kafka, producer: producer, roster: roster, clock: config.clock,
            logger: logger.with(["part": "roster-log"]))
        let photoLog = try PhotoLog(
            topic: config.topics.photos, kafka: config.kafka, producer: producer, logger: logger.with(["part": "photo-log"]))
        dispatcher = Dispatcher(
            config: config.delivery,
            channels: try config.delivery.channels(store: store, sessions: sessions, metrics: metrics, logger: logger), roster: roster,
            store: store, metrics: metrics, logger: logger, clock: config.clock, timer: config.timer)
        runner = try DigestRunner(
            config: config, roster: roster, store: store, dispatcher: dispatcher, commits: materializer.committed, metrics: metrics,
            logger: logger)
        var router = Router()
        let store = self.store
        let producer = self.producer
        let materializer = self.materializer
        let (groupID, timer) = (config.groupID, config.timer)
        router.addOperationalRoutes(metrics: metrics) {
            if let outage = materializer.storeOutage { return (false, "store writes are failing: \(outage.cause)") }
            // Until it joined, a replica applies nothing: the events ingest
            // acknowledged meanwhile are not in its lists yet.
            if materializer.memberID == nil { return (false, "not yet a member of consumer group \(groupID)") }
            if !sessions.log.caughtUp { return (false, "reading the session log") }
            if !rosterLog.caughtUp { return (false, "reading the roster log") }
            // A hung store must not hang the probe: it answers within a second.
            switch await store.executor.run(within: .seconds(1), clock: timer, { Result { () throws(StoreError) in try store.ping() } }) {
            case nil: return (false, "the store does not answer within 1 s")
            case .failure(let error)?: return (false, "the store fails: \(error.message)")
            case .success?: break
            }
            return await producer.brokersReachable() ? (true, "store and broker reachable") : (false, "no Kafka broker answers")
        }
        var routes = GuardedRouter(router: router, policy: policy)
        // While events wait for the store, every answer from it would be
        // incomplete or fail: the API says so and when to come back.
        routes.unavailable = {
            materializer.storeOutage.map { _ in
                HTTPError.unavailable(
                    "the store is not taking writes; acknowledged events wait to be applied. Retry shortly", retryAfterSeconds: 5)
            }
        }
        let accessLog = AccessLog(
            producer: producer, topic: config.topics.access, metrics: metrics, logger: logger.with(["part": "access-log"]),
            clock: config.timer, now: config.clock)
        let photos = StudentPhotos(
            rosterDirectory: roster.directory, uploads: photoLog.directory, accessLog: accessLog, logger: logger.with(["part": "photos"]))
        NotifierHandlers(
            store: store, runner: runner, photos: photos, accessLog: accessLog, retention: config.retention, push: config.delivery.vapid,
            pushOverHTTP: config.delivery.pushOverHTTP, quietHours: config.delivery.quietHours, clock: config.clock, logger: logger
        )
        .routes(into: &routes)
        DeliveryHandlers(store: store, clock: config.clock, logger: logger).routes(into: &routes)
        StudentHistoryHandlers(store: store, photos: photos, accessLog: accessLog, clock: config.clock).routes(into: &routes)
        OverviewHandlers(store: store, accessLog: accessLog, clock: config.clock).routes(into: &routes)
        CaseHandlers(store: store, accessLog: accessLog, clock: config.clock).routes(into: &routes)
        DataProtectionHandlers(store: store, accessLog: accessLog, clock: config.clock, logger: logger).routes(into: &routes)
        CommunityServiceHandlers(
            store: store, photos: photos, accessLog: accessLog, clock: config.clock,
            ingest: config.ingestURL.map {
                Forwarding(base: $0, cookieName: SessionCookie.app, sessions: sessions, logger: logger.with(["part": "service"]))
            },
            logger: logger
        ).routes(into: &routes)
        photos.routes(into: &routes)
        // The app is the ingest's: the session routes stay for API clients
        // (a cookie of the notifier's own), the pages send browsers there.
        let errands = Errands(logger: logger.with(["part": "errands"]))
        SignIn(
            title: "지도 알림", roles: [.homeroom, .volunteerDuty, .admin], policy: policy, mail: config.delivery.mail, publicURL: publicURL,
            errands: errands, logger: logger.with(["part": "web"])
        ).routes(into: &routes, scripts: [])
        NotifierService.sendToTheApp(config.delivery.publicAppURL, into: &routes)
        let http = HTTPMetrics(metrics)
        server = HTTPServer(config: config.http, router: routes.router, logger: logger.with(["part": "http"]), timer: config.timer) {
            record in
            http.record(record)
        }
        notices = RuleNotices(roster: roster, store: store, dispatcher: dispatcher, clock: config.clock, metrics: metrics, logger: logger)
        parts = NotifierService.parts(
            config: config, producer: producer, accessLog: accessLog, sessions: sessions, rosterLog: rosterLog, photoLog: photoLog,
            materializer: materializer,
            server: server,
            errands: errands, roster: roster,
            dispatcher: dispatcher,
            notices: notices,
            schedule: NotifierService.schedule(config: config, runner: runner, store: store, roster: roster, logger: logger),
            logger: logger)
    }

    /// The notifier's old pages, `/` and `/digests/{digestId}` (bookmarks,
    /// e-mails sent before the app), answer 303 to the same place in the app
    /// at `PUBLIC_INGEST_URL`; without it, a page saying where the app is.
    private static func sendToTheApp(_ appURL: String?, into router: inout GuardedRouter) {
        let answer: @Sendable (String) -> Response = { path in
            guard let appURL else {
                let main = """
                    <main class="narrow"><h1>지도 알림</h1>
                    <p class="error" role="alert">교사 앱은 교문 지도 서비스(guidance-ingest)의 주소에서 엽니다. 관리자는 PUBLIC_INGEST_URL을 설정하세요.</p></main>
                    """
                return Page.response(title: "지도 알림", main: main, status: 404)
            }
            return Response(status: 303, headers: [("Location", appURL + path), ("Cache-Control", "no-store")])
        }
        router.get("/", .open) { _, _ in answer("/") }
        router.get("/digests/{digestId}", .open) { request, _ in answer(Page.digestPath(of: request.parameter("digestId"))) }
    }

    package var port: Int { server.port }

    /// How each of its parts waits: `docs/design.md`'s table.
    package var waits: [Part.Waits] { parts.waits }

    /// Partitions of the events topics this replica consumes now (0 before it
    /// joined the group, or when other replicas hold them all).
    package var assignedPartitions: Int { materializer.assignedPartitions }

    /// The replica's member id in the consumer group; nil until it joined.
    package var memberID: String? { materializer.memberID }

    /// Whether this replica holds partitions within `limit`, looked at again
    /// as each rebalance rings.
    package func consumes(within limit: Duration) async -> Bool {
        await materializer.rebalanced.wait(until: { self.assignedPartitions > 0 }, atMost: limit)
    }

    /// Joins the consumer group, starts serving and, when configured, the schedule.
    package func start() async throws {
        await runner.checkPartitions(expected: config.partitions)
        try await parts.start()
        logger.info("notifier started", ["group": config.groupID, "instance": config.instanceID ?? "(dynamic)", "port": String(port)])
        if config.delivery.publicAppURL == nil {
            logger.warning(
                "PUBLIC_INGEST_URL is not set: e-mails and pushes carry no link to the app, and this service's / cannot send browsers to it",
                ["variable": "PUBLIC_INGEST_URL"])
        }
    }

    /// Stops the parts, the last started first: the schedule, HTTP (drained),
    /// the consumer (its batch committed) and the dispatcher at once, so that
    /// a hung store (each of its waits bounded) delays shutdown by one wait,
    /// not by one wait per part; then the logs; the producer last, flushing
    /// what they sent.
    package func shutdown() async {
        logger.info("shutting down")
        await parts.stop()
        logger.info("shut down")
    }

    /// The long-lived parts, in the order they start.
    private static func parts(
        config: NotifierConfig, producer: Producer, accessLog: AccessLog, sessions: Sessions, rosterLog: RosterLog, photoLog: PhotoLog,
        materializer: Materializer,
        server: HTTPServer, errands: Errands,
        roster: LiveRoster, dispatcher: Dispatcher, notices: RuleNotices, schedule: Part?, logger: Logger
    ) -> Parts {
        Parts(
            [
                [.producer(producer, timeout: .seconds(10))],
                [accessLog.part],
                [sessions.log.part, rosterLog.part, photoLog.part],
                // Stopped once no request can start one.
                [errands.part(within: config.drainPeriod, clock: config.timer)],
                [
                    // Stopping finishes the batch in hand, commits and leaves the group: it blocks.
                    materializer.part,
                    .http(server, portVariable: "NOTIFIER_PORT", service: "guidance-notifier", drain: config.drainPeriod),
                    dispatcher.part(stoppingWithin: config.drainPeriod),
                    notices.part(every: RuleNotices.period, clock: config.timer)
                ] + [roster.watching(every: config.rosterCheckInterval, clock: config.timer), schedule].compactMap { $0 }
            ], logger: logger)
    }

    /// Runs due digests and the purge every `scheduleInterval`, and
    /// amendments every `amendmentInterval` (every so many turns).
    private static func schedule(config: NotifierConfig, runner: DigestRunner, store: SQLStore, roster: LiveRoster, logger: Logger)
        -> Part?
    {
        guard let interval = config.scheduleInterval else { return nil }
        let amendEvery = max(1, Int((config.amendmentInterval / interval).rounded(.up)))
        let purger = Purger(store: store, retention: config.retention, clock: config.clock, logger: logger.with(["part": "purge"]))
        let state = Mutex<(turns: Int, purgeChecked: Int?)>((0, nil))
        // Digest times are whole minutes: a turn just after each minute
        // begins, so a school's run starts within a second of its time.
        let clock = config.clock
        return Loop(
            "schedule", every: interval, orSooner: { .seconds(60.05 - clock().truncatingRemainder(dividingBy: 60)) },
            wokenBy: "`stop`; the next minute or the period: what is due follows the wall clock and other replicas' runs",
            clock: config.timer
        ) {
            await runner.runEarlyLists()
            await runner.runDueSchools()
            let checked = await purger.runIfDue(roster: roster.current, checked: state.withLock { $0.purgeChecked })
            let amend = state.withLock { state in
                state.purgeChecked = checked
                state.turns += 1
                return state.turns % amendEvery == 0
            }
            if amend { await runner.runAmendments() }
        }.part()
    }
}
