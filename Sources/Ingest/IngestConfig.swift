import Access
import Common
import Guidance
import HTTP
import Kafka
import Sessions
import Wiring

/// Everything guidance-ingest needs, read once from the environment.
package struct IngestConfig: Sendable {
    package var http: HTTPServerConfig
    package var rosterDirectory: String
    package var producer: ProducerConfig
    package var topics: Topics
    /// Partitions for topics created at start (`TOPIC_PARTITIONS`).
    package var partitions: Int
    /// How often the roster folder is checked for changes (SIGHUP reloads at once).
    package var rosterCheckInterval: Duration = .seconds(5)
    /// Seconds since the epoch now: an event's times and a school's "today"
    /// (how far back a registration may reach); tests move it.
    package var clock: @Sendable () -> Double = Timestamp.now
    /// What the loops' periods are measured on: the continuous clock; a
    /// test's `ManualClock`, moved instead of slept.
    package var timer: any Clock<Duration> = systemTimer
    /// How long SIGTERM waits for in-flight requests.
    package var drainPeriod: Duration = .seconds(10)
    /// `PUBLIC_INGEST_URL`: where teachers open the gate page; https makes
    /// the session cookie `Secure`, and its origin is the one page requests
    /// must come from.
    package var publicURL: String?
    /// Sessions, proxies and connection limits of the gate page.
    package var web = WebSettings()
    /// How sign-in links are mailed (`SMTP_URL`…); nil: no links.
    package var mail: MailSettings?
    /// `NOTIFIER_URL`: a notifier the gate page's day list is read from
    /// (e.g. `http://notifier:8081`); nil: the page says it cannot load it.
    package var notifierURL: String?
    /// `LOG_LEVEL`: the least severe level written.
    package var logLevel: Logger.Level = .info
    /// `RETENTION_DAYS` (how far back `occurredAt` may reach) and the topics' retention.
    package var retention = Retention()

    package init(http: HTTPServerConfig, rosterDirectory: String, producer: ProducerConfig, topics: Topics = Topics(), partitions: Int = 12)
    {
        self.http = http
        self.rosterDirectory = rosterDirectory
        self.producer = producer
        self.topics = topics
        self.partitions = partitions
    }

    package static func fromEnvironment(_ environment: Environment = Environment()) throws(ConfigurationError) -> IngestConfig {
        let kafka = try KafkaConfig.fromEnvironment(environment)
        let producer = ProducerConfig(kafka: kafka, clientID: "guidance-ingest")
        // The HTTP connection must outlive the longest wait for an acknowledgement.
        let http = HTTPServerConfig(
            port: try environment.port("INGEST_PORT", default: 8080),
            connectionTimeout: max(.seconds(30), producer.deliveryTimeout + .seconds(5)))
        var config = IngestConfig(
            http: http,
            rosterDirectory: environment.string("ROSTER_DIR", default: "examples/roster"),
            producer: producer,
            partitions: try environment.int("TOPIC_PARTITIONS", default: 12, range: 1...10_000))
        config.publicURL = try environment.publicURL("PUBLIC_INGEST_URL")
        config.web = try WebSettings.fromEnvironment(environment)
        config.http.perIPConnectionLimit = config.web.connectionsPerAddress
        config.mail = try MailSettings.fromEnvironment(environment)
        config.notifierURL = try environment.publicURL("NOTIFIER_URL")
        config.logLevel = try environment.logLevel()
        config.retention = try Retention.fromEnvironment(environment)
        return config
    }
}
