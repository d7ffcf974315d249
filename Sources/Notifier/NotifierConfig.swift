import Access
import Common
import Guidance
import HTTP
import Kafka
import Wiring
import Sessions
import Store

/// How the store is reached (`STORE_URL`).
package enum StoreLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    package static func parse(_ text: String) throws(ConfigurationError) -> StoreLocation {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw ConfigurationError(
                    variable: "STORE_URL", reason: "sqlite: needs a file path, e.g. sqlite:/var/lib/guidance/notifier.db")
            }
            return .sqlite(path: path)
        }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            return .postgres(url: text)
        }
        throw ConfigurationError(
            variable: "STORE_URL", reason: "'\(redacted(text))' is neither sqlite:<path> nor postgres://user:password@host:5432/db")
    }

    /// `STORE_URL`, with `STORE_PASSWORD` (any bytes, e.g. from `openssl
    /// rand -base64`) put into a `postgres://` URL percent-encoded. A URL
    /// libpq cannot read is refused here, naming the password when the
    /// likely cause is a raw `/`, `@`, `?` or `#` in it.
    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> StoreLocation {
        var location = try parse(environment.string("STORE_URL", default: "sqlite:guidance-notifier.db"))
        guard case .postgres(var url) = location else {
            if environment["STORE_PASSWORD"] != nil {
                throw ConfigurationError(variable: "STORE_PASSWORD", reason: "is for a postgres:// STORE_URL; this one is SQLite")
            }
            return location
        }
        if let password = environment["STORE_PASSWORD"] {
            guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
                !url[scheme.upperBound..<at].contains(":"), !url[scheme.upperBound..<at].isEmpty
            else {
                throw ConfigurationError(
                    variable: "STORE_PASSWORD",
                    reason: "needs a STORE_URL with a user and no password, e.g. postgres://guidance@postgres:5432/guidance")
            }
            // Only RFC 3986's unreserved characters stay, as in a path segment.
            url.insert(contentsOf: ":" + Forwarding.segment(password), at: at)
            location = .postgres(url: url)
        }
        let advice =
            "if the password holds '/', '@', ':', '?', '#' or '%', percent-encode it, or give it alone in STORE_PASSWORD (any bytes work there)"
        switch SQLStore.postgresOptions(url) {
        case .failure(let error):
            throw ConfigurationError(variable: "STORE_URL", reason: "libpq cannot read '\(redacted(url))' (\(error.message)); \(advice)")
        case .success(let options):
            // A raw '/' in the password ends the host part early: libpq reads
            // `user:pass` as host and port and fails only when it connects.
            let port = options["port"] ?? ""
            if !port.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ",") }) || (options["dbname"] ?? "").contains("@") {
                throw ConfigurationError(
                    variable: "STORE_URL",
                    reason: "libpq reads its host and port as '\(options["host"] ?? "")' and a port that is not a number: \(advice)")
            }
        }
        return location
    }

    /// The URL as it may be logged: a password in the user part or the query
    /// (`password=`) replaced by `***`.
    package static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@"),
            let colon = text[scheme.upperBound..<at].firstIndex(of: ":")
        {
            text.replaceSubrange(text.index(after: colon)..<at, with: "***")
        }
        if let query = text.firstIndex(of: "?") {
            let parameters = text[text.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { part in
                part.lowercased().hasPrefix("password=") ? "password=***" : String(part)
            }
            text = String(text[...query]) + parameters.joined(separator: "&")
        }
        return text
    }

    /// The location as it may be logged.
    package var redacted: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let url): StoreLocation.redacted(url)
        }
    }
}

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
    package var timer: any Clock<Duration> = ContinuousClock()
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
