import Access
import Common
import Foundation
import Guidance
import HTTP
import Ingest
import Kafka
import KafkaMock
import Notifier
import Wiring

/// The local default: a mock Kafka cluster with the topics created.
/// `--broker-only` runs only the cluster (for tests that start the services as
/// separate processes) and writes its bootstrap string to `--bootstrap-file`.
struct DevOptions {
    var brokerOnly = false
    var brokers = 3
    var bootstrapFile: String?

    static func parse(_ arguments: [String]) throws(ConfigurationError) -> DevOptions {
        var options = DevOptions()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--broker-only":
                options.brokerOnly = true
            case "--brokers":
                guard let text = remaining.popFirst(), let count = Int(text), (1...9).contains(count) else {
                    throw ConfigurationError(variable: "--brokers", reason: "needs a broker count from 1 to 9")
                }
                options.brokers = count
            case "--bootstrap-file":
                guard let path = remaining.popFirst() else {
                    throw ConfigurationError(variable: "--bootstrap-file", reason: "needs a file path")
                }
                options.bootstrapFile = path
            case "-h", "--help":
                print("usage: guidance-dev [--broker-only] [--brokers N] [--bootstrap-file FILE]")
                exit(0)
            default:
                throw ConfigurationError(variable: argument, reason: "unknown option (see --help)")
            }
        }
        return options
    }
}

/// Writes a line to standard output unbuffered, so scripts reading it see it at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

// What this writes under var/ (the store, e-mails holding live sign-in
// links and students' names) is for the user who runs it alone.
umask(0o077)

do {
    let environment = Environment()
    let level = try environment.logLevel()
    let options = try DevOptions.parse(Array(CommandLine.arguments.dropFirst()))
    let partitions = try environment.int("TOPIC_PARTITIONS", default: 12, range: 1...1000)
    let cluster = try MockCluster(brokers: options.brokers, logger: Logger(component: "kafka-mock", level: level))
    for topic in Topics().all {
        try cluster.createTopic(topic, partitions: partitions)
    }
    // The mock cluster does not create topics on request: the session log's too.
    try cluster.createTopic(try WebSettings.fromEnvironment(environment).topic, partitions: 1)
    try cluster.createTopic(Topics().roster, partitions: 1)
    try cluster.createTopic(Topics().photos, partitions: 1)
    let bootstrap = cluster.bootstrapServers
    if let path = options.bootstrapFile {
        // Write then rename, so a reader never sees half a line.
        let temporary = path + ".tmp"
        try Data((bootstrap + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
        _ = rename(temporary, path)
    }
    say("mock Kafka cluster: \(options.brokers) brokers, topics \(Topics().all.joined(separator: ", ")) with \(partitions) partitions")
    say("KAFKA_BOOTSTRAP_SERVERS=\(bootstrap)")
    var services: (IngestService, NotifierService)?
    if !options.brokerOnly {
        // The services read the same variables as in production, with the
        // mock cluster and a local SQLite file as defaults.
        var values = environment.values
        values["KAFKA_BOOTSTRAP_SERVERS"] = bootstrap
        try FileManager.default.createDirectory(atPath: "var", withIntermediateDirectories: true)
        // A folder left by an earlier version, or made by hand, is closed too.
        for folder in ["var", "var/mail"] { chmod(folder, 0o700) }
        // One instance per folder: a second would share (and reset) the first's state.
        let lock = open("var/guidance-dev.lock", O_CREAT | O_RDWR, 0o600)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            throw ConfigurationError(
                variable: "guidance-dev", reason: "another guidance-dev runs from this folder (var/guidance-dev.lock); stop it first")
        }
        // A local run on this machine: a roster without tokens.csv is served
        // open (with the services' loud warning) rather than refused.
        if values["AUTHENTICATION"] == nil { values["AUTHENTICATION"] = "optional" }
        // A local run shows every e-mail at once, whatever the hour; set QUIET_HOURS to try them.
        if values["QUIET_HOURS"] == nil { values["QUIET_HOURS"] = "off" }
        if values["STORE_URL"] == nil {
            // The mock cluster starts empty, so the store does too: old
            // digests beside a new cluster's offsets would mix two histories.
            for suffix in ["", "-wal", "-shm"] { unlink("var/guidance-dev.db" + suffix) }
            values["STORE_URL"] = "sqlite:var/guidance-dev.db"
            say(
                "state: the mock cluster is in memory and the SQLite store \(FileManager.default.currentDirectoryPath)/var/guidance-dev.db starts empty on every run, so both begin together; set STORE_URL to keep a store of your own"
            )
        } else {
            say(
                "state: STORE_URL is set, so its data stays, while the mock cluster starts empty: events and offsets begin again at 0 (replays are harmless); the store's old digests stay"
            )
        }
        // E-mails (digests, sign-in links) link to the pages on this machine.
        for (variable, port) in [
            ("PUBLIC_NOTIFIER_URL", values["NOTIFIER_PORT"] ?? "8081"), ("PUBLIC_INGEST_URL", values["INGEST_PORT"] ?? "8080")
        ]
        where values[variable] == nil && port != "0" {
            values[variable] = "http://127.0.0.1:\(port)"
        }
        // The gate page reads the school's day from the notifier.
        let notifierPort = values["NOTIFIER_PORT"] ?? "8081"
        if values["NOTIFIER_URL"] == nil && notifierPort != "0" {
            values["NOTIFIER_URL"] = "http://127.0.0.1:\(notifierPort)"
        }
        // The teacher page records service (봉사 완료) through the ingest.
        let ingestPort = values["INGEST_PORT"] ?? "8080"
        if values["INGEST_URL"] == nil && ingestPort != "0" {
            values["INGEST_URL"] = "http://127.0.0.1:\(ingestPort)"
        }
        // Both services sign sessions and device codes with one secret, as
        // every replica must in production; here a new one each run.
        if values["SESSION_SECRET"] == nil { values["SESSION_SECRET"] = RandomID.uuid() + RandomID.uuid() }
        let serviceEnvironment = Environment(values)
        var ingestConfig = try IngestConfig.fromEnvironment(serviceEnvironment)
        var notifierConfig = try NotifierConfig.fromEnvironment(serviceEnvironment)
        if notifierConfig.delivery.mail == nil {
            // No mail server here: each e-mail is written where a mail client opens it.
            let folder = FileManager.default.currentDirectoryPath + "/var/mail"
            // Mails of an earlier run name students of a store that is gone: they go with it.
            if values["STORE_URL"] == "sqlite:var/guidance-dev.db", let old = try? FileManager.default.contentsOfDirectory(atPath: folder) {
                for name in old where name.hasSuffix(".eml") { unlink(folder + "/" + name) }
            }
            let mail = MailSettings(transport: .directory(folder), from: MailAddress("학생부 알림 <guidance@school.example>")!)
            notifierConfig.delivery.mail = mail
            ingestConfig.mail = mail
            say(
                "e-mail: no SMTP_URL, so each e-mail (digests, sign-in links) is written as an .eml file (open it with a mail client) into \(folder), emptied at each start with the store"
            )
        }
        let ingest = try IngestService(config: ingestConfig, logger: Logger(component: "ingest", level: ingestConfig.logLevel))
        try await ingest.start()
        let notifierLogger = Logger(component: "notifier", level: notifierConfig.logLevel)
        let notifier = try await MockCluster.joining(logger: notifierLogger) {
            try NotifierService(config: notifierConfig, logger: notifierLogger)
        }
        services = (ingest, notifier)
        say(DevGuide.text(ingestPort: ingest.port, notifierPort: notifier.port, roster: ingest.roster.current))
    }
    let signal = await waitForTerminationSignal()
    Logger(component: "guidance-dev", level: level).info("stopping", ["signal": String(signal)])
    if let (ingest, notifier) = services {
        await ingest.shutdown()
        await notifier.shutdown()
    }
    // Release the services' Kafka clients before the cluster they talk to.
    services = nil
    if let path = options.bootstrapFile { unlink(path) }
    withExtendedLifetime(cluster) {}
} catch {
    Logger(component: "guidance-dev").error("guidance-dev could not start: \(error)")
    exit(1)
}
