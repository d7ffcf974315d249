import Access
import Common
import Crypto
import Foundation
import Guidance
import HTTP
import Ingest
import Kafka
import KafkaMock
import Notifier
import Sessions
import TestSupport
import XCTest

@testable import Store

/// A mock cluster with topics of its own, guidance-ingest and
/// guidance-notifier on random ports, and a fresh SQLite file.
final class NotifierHarness: @unchecked Sendable {
    static let schools = """
        school_id,name,timezone,digest_time
        sa,서울고,Asia/Seoul,08:50
        sb,LA High,America/Los_Angeles,07:30

        """
    static let students = """
        school_id,student_id,grade,class,number,name,photo_url
        sa,a111,1,1,1,가가,
        sa,a112,1,1,2,가나,
        sa,a121,1,2,1,나가,
        sa,a122,1,2,2,나나,
        sa,a211,2,1,1,다가,
        sa,a311,3,1,1,라가,
        sb,b111,1,1,1,Ana,

        """
    static let teachers = """
        school_id,teacher_id,name,email,role,grade,class
        sa,t-hr-1-1,담임11,t-hr-1-1@sa.school.example,homeroom,1,1
        sa,t-hr-1-2,담임12,t-hr-1-2@sa.school.example,homeroom+gate,1,2
        sa,t-hr-2-1,담임21,t-hr-2-1@sa.school.example,homeroom,2,1
        sa,t-hr-3-1,담임31,t-hr-3-1@sa.school.example,homeroom,3,1
        sa,t-vd-1,봉사1,t-vd-1@sa.school.example,volunteer_duty,1,
        sa,t-vd-2,봉사2,,volunteer_duty,2,
        sa,t-vd-3,봉사3,t-vd-3@sa.school.example,volunteer_duty,3,
        sa,t-gate,교문,,gate,,
        sa,t-admin,관리,,admin,,
        sb,t-hr-b,Homeroom B,hr@sb.school.example,homeroom,1,1
        sb,t-vd-b,Duty B,vd@sb.school.example,volunteer_duty,1,
        sb,t-gate-b,Gate B,,gate,,

        """

    static func tokens() -> String {
        "token_sha256,teacher_id\n"
            + ["t-hr-1-1", "t-hr-1-2", "t-vd-1", "t-gate", "t-admin", "t-gate-b", "t-hr-b"].map {
                "\(SHA256.hex(SHA256.hash(Array("tok-\($0)".utf8)))),\($0)"
            }.joined(separator: "\n") + "\n"
    }

    /// `TEST_KAFKA_DEBUG=cgrp` (with `TEST_LOG_LEVEL=debug`) traces the group protocol.
    static let kafkaProperties: [String: String] = {
        var properties = ["topic.metadata.refresh.interval.ms": "1000"]
        if let debug = ProcessInfo.processInfo.environment["TEST_KAFKA_DEBUG"] { properties["debug"] = debug }
        return properties
    }()

    let cluster: MockCluster
    let topics: Topics
    let roster: Roster
    let directory: URL
    var ingest: IngestService!
    var notifier: NotifierService?
    var replicas: [NotifierService] = []
    var ingestBase = ""
    var notifierBase = ""
    var groupID: String
    /// The notifier's store; a fresh SQLite file when nil.
    let store: StoreLocation?
    /// The notifier's clock; the real one when nil.
    let clock: (@Sendable () -> Double)?
    /// What the notifier's loops wait on: a `ManualClock` the test moves.
    let timer: (any Clock<Duration>)?
    /// E-mail and webhooks; both off by default.
    let delivery: DeliveryConfig
    /// With `rosterFolders`, each service reads its own folder (`ingest-roster/`,
    /// `notifier-roster/` under `directory`), reloaded only when a test says.
    let rosterFolders: Bool
    /// Sessions both services share: one secret, a session log per test.
    let web: WebSettings
    /// Where the ingest's sign-in links point (nil: no links).
    let publicIngestURL: String?
    let rosterGrace: Duration
    /// What both services keep how long.
    let retention: Retention

    init(
        authentication: Bool = false, store: StoreLocation? = nil, clock: (@Sendable () -> Double)? = nil,
        timer: (any Clock<Duration>)? = nil,
        delivery: DeliveryConfig = DeliveryConfig(), webhooks: String? = nil, rosterFolders: Bool = false,
        rosterGrace: Duration = .seconds(60),
        publicIngestURL: String? = nil, failedSignInLimit: Int = 10, retention: Retention = Retention(), reasons: String? = nil,
        rules: String? = nil, schools: String? = nil, calendar: String? = nil, serviceSlots: String? = nil,
        quietHours: QuietHours? = nil
    ) async throws {
        self.retention = retention
        self.publicIngestURL = publicIngestURL
        self.store = store
        self.clock = clock
        self.timer = timer
        // No quiet hours unless a test asks: on the real clock a test's
        // e-mails would wait for the morning in Seoul from 12:00 UTC.
        var delivery = delivery
        delivery.quietHours = quietHours
        self.delivery = delivery
        self.rosterFolders = rosterFolders
        self.rosterGrace = rosterGrace
        cluster = try MockCluster(brokers: 3, logger: quietLogger("mock"))
        let prefix = "n\(UUID().uuidString.prefix(6))."
        topics = Topics(prefix: prefix)
        var web = WebSettings(secret: "harness-session-secret-of-at-least-32-bytes", topic: prefix + "guidance.sessions")
        web.failedSignInLimit = failedSignInLimit
        web.authentication = .optional
        web.failedSignInLimitPerAddress = max(failedSignInLimit, web.failedSignInLimitPerAddress)
        self.web = web
        for topic in topics.all { try cluster.createTopic(topic, partitions: 4) }
        try cluster.createTopic(web.topic, partitions: 1)
        try cluster.createTopic(topics.roster, partitions: 1)
        try cluster.createTopic(topics.photos, partitions: 1)
        roster = try Roster.parse(
            schools: schools ?? Self.schools, students: Self.students, teachers: Self.teachers,
            tokens: authentication ? Self.tokens() : nil, reasons: reasons, webhooks: webhooks, rules: rules, calendar: calendar,
            serviceSlots: serviceSlots)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("notifier-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        groupID = "g-\(UUID().uuidString.prefix(8))"
        if rosterFolders {
            for service in ["ingest", "notifier"] { try writeRoster(for: service, students: Self.students) }
        }
        ingest = try await startIngest()
        ingestBase = "http://127.0.0.1:\(ingest.port)"
        try await startNotifier()
    }

    /// An ingest on the harness's cluster, roster and sessions; `notifierURL`
    /// gives its app what the notifier holds. The caller shuts it down.
    func startIngest(notifierURL: String? = nil, trustedProxies: [String] = []) async throws -> IngestService {
        var config = IngestConfig(
            http: HTTPServerConfig(host: "127.0.0.1", port: 0), rosterDirectory: rosterFolders ? rosterFolder("ingest") : "(memory)",
            producer: ProducerConfig(kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers), deliveryTimeout: .seconds(5)),
            topics: topics, partitions: 4)
        config.rosterCheckInterval = .seconds(3600)
        config.web = web
        config.web.clients = ClientAddresses(trusted: trustedProxies)
        config.mail = delivery.mail
        config.publicURL = publicIngestURL
        config.notifierURL = notifierURL
        config.retention = retention
        // One clock for both services: the school's today is the same on each.
        if let clock { config.clock = clock }
        let service = try IngestService(config: config, roster: rosterFolders ? nil : roster, logger: quietLogger("ingest"))
        try await service.start()
        return service
    }

    /// Says when the mock cluster left a notifier out of its group and it was started again.
    private static let joinLogger = Logger(component: "harness", level: .warning)

    func startNotifier(group: String? = nil) async throws {
        if let group { groupID = group }
        // Tests start once the replica consumes: joining the mock's group
        // takes about 3 s, and a replica the mock left out is replaced.
        let service = try await MockCluster.joining(logger: Self.joinLogger) { try makeNotifier() }
        notifier = service
        notifierBase = "http://127.0.0.1:\(service.port)"
    }

    func rosterFolder(_ service: String) -> String {
        directory.appendingPathComponent("\(service)-roster").path
    }

    /// A store URL on a schema of its own in `TEST_POSTGRES_URL`'s database
    /// (named `prefix_<random>`), or a skip when it is not set.
    static func postgresURL(schema prefix: String) throws -> String {
        guard let base = ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"] else {
            throw XCTSkip("TEST_POSTGRES_URL is not set (scripts/test sets it)")
        }
        let schema = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        try PostgresConnection(url: base).execute("CREATE SCHEMA \(schema)")
        return base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
    }

    /// Writes `service`'s roster folder with `students.csv` as given.
    func writeRoster(for service: String, students: String) throws {
        let folder = URL(fileURLWithPath: rosterFolder(service))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, text) in [("schools.csv", Self.schools), ("students.csv", students), ("teachers.csv", Self.teachers)] {
            try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
    }

    /// Another notifier replica serving the same roster and sessions, with a
    /// store and consumer group of its own (so the first keeps its
    /// partitions), or with `sharing` the first's store and group (a
    /// replica as operators scale them); shut down with the harness.
    func startReplica(sharing: Bool = false) async throws -> NotifierService {
        let replica = try await MockCluster.joining(logger: Self.joinLogger) {
            sharing
                ? try makeNotifier()
                : try makeNotifier(
                    store: .sqlite(path: directory.appendingPathComponent("replica-\(replicas.count).db").path),
                    group: groupID + "-r\(replicas.count)")
        }
        replicas.append(replica)
        _ = try await eventually(within: .seconds(60)) { try await fetch("GET", "http://127.0.0.1:\(replica.port)/readyz").status == 200 }
        return replica
    }

    private func makeNotifier(store: StoreLocation? = nil, group: String? = nil) throws -> NotifierService {
        var config = NotifierConfig(
            http: HTTPServerConfig(host: "127.0.0.1", port: 0), rosterDirectory: rosterFolders ? rosterFolder("notifier") : "(memory)",
            store: store ?? self.store ?? .sqlite(path: directory.appendingPathComponent("notifier.db").path),
            kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers, properties: Self.kafkaProperties),
            groupID: group ?? groupID, topics: topics, partitions: 4, scheduleInterval: nil)
        config.drainPeriod = .seconds(2)
        config.delivery = delivery
        config.web = web
        config.rosterGrace = rosterGrace
        config.rosterCheckInterval = .seconds(3600)
        config.retention = retention
        if !ingestBase.isEmpty { config.ingestURL = ingestBase }
        if let clock { config.clock = clock }
        if let timer { config.timer = timer }
        return try NotifierService(config: config, roster: rosterFolders ? nil : roster, logger: quietLogger("notifier"))
    }

    func stopNotifier() async {
        await notifier?.shutdown()
        notifier = nil
    }

    func shutdown() async {
        for replica in replicas { await replica.shutdown() }
        replicas = []
        await stopNotifier()
        await ingest.shutdown()
        try? FileManager.default.removeItem(at: directory)
        if ProcessInfo.processInfo.environment["TEST_THREADS"] != nil,
            let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") })
        {
            print("harness: \(line)")
        }
    }

    func headers(_ teacher: String?) -> [String: String] {
        var headers = ["Content-Type": "application/json"]
        if let teacher { headers["Authorization"] = "Bearer tok-\(teacher)" }
        return headers
    }

    /// Registers through guidance-ingest and returns the guidanceId.
    @discardableResult
    func register(
        school: String = "sa", grade: Int, classNumber: Int, number: Int, code: String = "noShoes", detail: String? = nil,
        at occurredAt: String = "2026-11-20T23:30:00Z", guidanceID: String? = nil, as teacher: String? = nil
    ) async throws -> String {
        var body = #"{"student":{"grade":\#(grade),"classNumber":\#(classNumber),"number":\#(number)},"reason":{"code":"\#(code)""#
        if let detail { body += #","detail":"\#(detail)""# }
        body += #"},"recordedBy":"\#(school == "sa" ? "t-gate" : "t-gate-b")","occurredAt":"\#(occurredAt)""#
        if let guidanceID { body += #","guidanceId":"\#(guidanceID)""# }
        body += "}"
        let reply = try await fetch("POST", "\(ingestBase)/v1/schools/\(school)/guidances", body: body, headers: headers(teacher))
        XCTAssertEqual(reply.status, 202, reply.text)
        return reply.object["guidanceId"]?.string ?? ""
    }

    func delete(school: String = "sa", grade: Int, guidanceID: String, as teacher: String? = nil) async throws {
        let reply = try await fetch(
            "DELETE", "\(ingestBase)/v1/schools/\(school)/grades/\(grade)/guidances/\(guidanceID)", headers: teacher.map(headers) ?? [:])
        XCTAssertEqual(reply.status, 202, reply.text)
    }

    func runDigests(school: String? = "sa", date: String = "2026-11-21", as teacher: String? = nil) async throws -> Reply {
        let body = school.map { #"{"schoolId":"\#($0)","date":"\#(date)"}"# } ?? #"{"date":"\#(date)"}"#
        return try await fetch("POST", "\(notifierBase)/v1/digests/run", body: body, headers: headers(teacher))
    }

    /// The digests in a teacher's inbox, newest first.
    func inbox(_ teacher: String, signedIn: Bool = false) async throws -> [AnyCodable] {
        let reply = try await fetch("GET", "\(notifierBase)/v1/teachers/\(teacher)/inbox", headers: headers(signedIn ? teacher : nil))
        XCTAssertEqual(reply.status, 200, reply.text)
        guard case .array(let items) = reply.object["items"] else { return [] }
        return items
    }

    func list(school: String = "sa", date: String = "2026-11-21", query: String = "", as teacher: String? = nil) async throws -> Reply {
        try await fetch("GET", "\(notifierBase)/v1/schools/\(school)/guidances?date=\(date)\(query)", headers: headers(teacher))
    }

    /// The access log's items (`query` its filters, as `t-admin`), read
    /// again until `done` holds (or `within`): records travel through Kafka.
    func accessLog(_ query: String = "", within: Duration = .seconds(20), until done: @escaping ([AnyCodable]) -> Bool) async throws
        -> [AnyCodable]
    {
        try await eventually(within: within) {
            let log = try await fetch("GET", self.notifierBase + "/v1/schools/sa/access-log" + query, headers: self.headers("t-admin"))
            guard case .array(let items)? = log.object["items"] else { return [] }
            return items
        } until: {
            done($0)
        }
    }

    /// Waits until the notifier applied `count` events (or `within`).
    func waitUntilApplied(_ count: Double, within: Duration = .seconds(20)) async throws {
        _ = try await eventually(within: within) { (self.notifier?.metrics.value("notifier_events_applied_total") ?? 0) >= count }
    }

    /// Guidance ids listed for the date, polled until they are `expected` (or
    /// 20 s): a deletion travels on its own topic and may land after.
    func waitForList(school: String = "sa", date: String = "2026-11-21", equalTo expected: Set<String>, as teacher: String? = nil)
        async throws -> Set<String>
    {
        try await eventually {
            Set(try await self.waitForList(school: school, date: date, count: expected.count, as: teacher))
        } until: {
            $0 == expected
        }
    }

    /// Guidance ids listed for the date, polled until `count` appear (or 20 s).
    func waitForList(school: String = "sa", date: String = "2026-11-21", count: Int, as teacher: String? = nil) async throws -> [String] {
        try await eventually {
            let reply = try await self.list(school: school, date: date, as: teacher)
            guard case .array(let items) = reply.object["items"] else { return [] }
            return items.compactMap { $0["guidanceId"]?.string }
        } until: {
            $0.count >= count
        }
    }
}

extension AnyCodable {
    /// `entries` of a digest as "guidanceId change" strings, sorted.
    var entryChanges: [String] {
        guard case .array(let entries) = self["entries"] else { return [] }
        return entries.map { "\($0["guidanceId"]?.string ?? "?") \($0["change"]?.string ?? "?")" }.sorted()
    }
}
