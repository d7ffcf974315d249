import Access
import Common
import Guidance
import HTTP
import Kafka
import Sessions
import Store
import Wiring

/// Everything guidance-notifier needs, read once from the environment.
package struct NotifierConfig: Sendable {
    package var http: HTTPServerConfig
    package var rosterDirectory: String
    package var store: StoreLocation
    package var kafka: KafkaConfig
    package var groupID: String
    /// Static group membership (`group.instance.id`) from the host name, when
    /// set: a replica restarted under the same name gets its partitions back
    /// without a rebalance.
    package var instanceID: String?
    package var topics: Topics
    /// E-mail and webhooks.
    package var delivery = DeliveryConfig()
    /// Sessions, proxies and connection limits of the teacher page.
    package var web = WebSettings()
    /// Partitions the topics should have (`TOPIC_PARTITIONS`); fewer is warned about.
    package var partitions: Int
    /// How often changes to already-sent dates become amendments (`AMENDMENT_INTERVAL_SECONDS`).
    package var amendmentInterval: Duration
    /// How often the schedule checks whether a school's digest time has come;
    /// nil turns the schedule and the amendment tick off (tests drive runs by HTTP).
    package var scheduleInterval: Duration?
    /// How long a run waits for the group to catch up with the cutoff.
    package var cutoffTimeout: Duration = .seconds(30)
    package var drainPeriod: Duration = .seconds(10)
    /// Seconds since the epoch now, for the schedule and "today"; tests move it.
    package var clock: @Sendable () -> Double = Timestamp.now
    /// What the loops' periods and the cutoff's wait are measured on: the
    /// continuous clock; a test's `ManualClock`, moved instead of slept.
    package var timer: any Clock<Duration> = systemTimer
    /// How often the roster folder is checked for changes (SIGHUP reloads at once).
    package var rosterCheckInterval: Duration = .seconds(5)
    /// How long an event naming an id the roster does not list (a student
    /// ingest's newer roster has) is held and retried, its partition waiting
    /// behind it, before it is dead-lettered (`ROSTER_GRACE_SECONDS`).
    package var rosterGrace: Duration = .seconds(60)
    /// Most events applied in one store transaction. A poll takes only what
    /// is already fetched, so batches are this large only when behind. Random
    /// guidance ids touch index pages all over, so big batches write each page
    /// once for many events: on a 100,000-event backlog, 1,000 applied
    /// 46,700-49,100 events/s to SQLite, 5,000 applied 55,500-60,900.
    package var maxBatch = 5000
    /// `LOG_LEVEL`: the least severe level written.
    package var logLevel: Logger.Level = .info
    /// What is kept how long: the daily purge, and events and runs for days
    /// past `RETENTION_DAYS` refused.
    package var retention = Retention()
    /// `INGEST_URL`: the ingest the teacher page records service through
    /// (`봉사 완료`); nil: recording answers 503, the 봉사 명단 still shows.
    package var ingestURL: String?

    package init(
        http: HTTPServerConfig, rosterDirectory: String, store: StoreLocation, kafka: KafkaConfig,
        groupID: String = "guidance-notifier", instanceID: String? = nil, topics: Topics = Topics(), partitions: Int = 12,
        amendmentInterval: Duration = .seconds(600), scheduleInterval: Duration? = .seconds(15)
    ) {
        self.http = http
        self.rosterDirectory = rosterDirectory
        self.store = store
        self.kafka = kafka
        self.groupID = groupID
        self.instanceID = instanceID
        self.topics = topics
        self.partitions = partitions
        self.amendmentInterval = amendmentInterval
        self.scheduleInterval = scheduleInterval
    }

    package static func fromEnvironment(_ environment: Environment = Environment()) throws(ConfigurationError) -> NotifierConfig {
        var config = NotifierConfig(
            http: HTTPServerConfig(port: try environment.port("NOTIFIER_PORT", default: 8081)),
            rosterDirectory: environment.string("ROSTER_DIR", default: "examples/roster"),
            store: try StoreLocation.fromEnvironment(environment),
            kafka: try KafkaConfig.fromEnvironment(environment),
            groupID: environment.string("NOTIFIER_GROUP_ID", default: "guidance-notifier"),
            instanceID: environment["HOSTNAME"],
            partitions: try environment.int("TOPIC_PARTITIONS", default: 12, range: 1...10_000),
            amendmentInterval: .seconds(try environment.int("AMENDMENT_INTERVAL_SECONDS", default: 600, range: 1...86_400)))
        config.rosterGrace = .seconds(try environment.int("ROSTER_GRACE_SECONDS", default: 60, range: 0...86_400))
        config.delivery = try DeliveryConfig.fromEnvironment(environment)
        config.web = try WebSettings.fromEnvironment(environment)
        config.http.perIPConnectionLimit = config.web.connectionsPerAddress
        config.logLevel = try environment.logLevel()
        config.retention = try Retention.fromEnvironment(environment)
        config.ingestURL = try environment.publicURL("INGEST_URL")
        return config
    }
}
