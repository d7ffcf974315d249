import Common
import Crypto
import Foundation
import Guidance
import HTTP
import Ingest
import Kafka
import KafkaMock
import TestSupport
import XCTest

/// Transfers, new teachers and new tokens reach a running service without a
/// restart; a broken change leaves the service on the roster it had.
final class RosterReloadTests: XCTestCase {
    var cluster: MockCluster!
    var service: IngestService!
    var directory: URL!
    let root = repositoryRoot

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("roster-\(UUID())")
        try FileManager.default.copyItem(at: root.appendingPathComponent("examples/roster"), to: directory)
        cluster = try MockCluster(brokers: 1, logger: quietLogger("mock"))
        let topics = Topics(prefix: "r\(UUID().uuidString.prefix(6)).")
        for topic in topics.all { try cluster.createTopic(topic, partitions: 1) }
        try cluster.createTopic("guidance.sessions", partitions: 1)
        try cluster.createTopic(topics.roster, partitions: 1)
        try cluster.createTopic(topics.photos, partitions: 1)
        var config = IngestConfig(
            http: HTTPServerConfig(host: "127.0.0.1", port: 0), rosterDirectory: directory.path,
            producer: ProducerConfig(kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers)), topics: topics, partitions: 1)
        config.rosterCheckInterval = .milliseconds(200)
        service = try IngestService(config: config, logger: quietLogger("ingest"))
        try await service.start()
    }

    override func tearDown() async throws {
        await service?.shutdown()
        service = nil
        cluster = nil
        try? FileManager.default.removeItem(at: directory)
    }

    /// Replaces a roster file the way an operator's tooling should: whole.
    private func write(_ name: String, _ text: String) throws {
        let temporary = directory.appendingPathComponent(name + ".tmp")
        try Data(text.utf8).write(to: temporary)
        _ = rename(temporary.path, directory.appendingPathComponent(name).path)
    }

    private func lookUp(token: String = "demo-t-gate-01") async throws -> Reply {
        try await fetch(
            "GET", "http://127.0.0.1:\(service.port)/v1/schools/demo-hs/students/1/1/1", headers: ["Authorization": "Bearer \(token)"])
    }

    func testChangesAreServedWithoutARestartAndABrokenChangeIsNot() async throws {
        let students = try String(contentsOf: directory.appendingPathComponent("students.csv"), encoding: .utf8)
        let original = try await lookUp().object["name"]?.string ?? ""
        XCTAssertFalse(original.isEmpty)

        // A renamed student and a new token, in two files.
        try write("students.csv", students.replacingOccurrences(of: ",\(original),", with: ",새이름,"))
        let tokens = try String(contentsOf: directory.appendingPathComponent("tokens.csv"), encoding: .utf8)
        try write("tokens.csv", tokens + "\(SHA256.hex(SHA256.hash(Array("fresh-token".utf8)))),t-gate-02\n")
        let renamed = try await eventually { try await self.lookUp(token: "fresh-token").object["name"]?.string == "새이름" }
        XCTAssertTrue(renamed, "the changed roster was not served")

        // A seat given twice: the whole change is refused, the roster in service stays.
        let lines = students.split(separator: "\n", omittingEmptySubsequences: false)
        try write("students.csv", students + lines[1].replacingOccurrences(of: "s10101", with: "s99999") + "\n")
        let counted = try await eventually {
            self.service.metrics.value("roster_reloads_total", labels: [("outcome", "failed")]) >= 1
        }
        XCTAssertTrue(counted, "the broken roster was not counted")
        try await assertEqualAsync(await lookUp().object["name"]?.string, "새이름", "a broken roster replaced the working one")
        XCTAssertEqual(service.metrics.value("roster_reloads_total", labels: [("outcome", "ok")]), 1)
    }

    func testSIGHUPReloadsAtOnce() async throws {
        let roster = LiveRoster(
            directory: directory.path, roster: try Roster.load(from: directory.path), clock: Timestamp.now, logger: quietLogger("roster"),
            metrics: Metrics())
        let watch = Parts([[try XCTUnwrap(roster.watching(every: .seconds(3600), clock: ContinuousClock()))]], logger: quietLogger("parts"))
        try await watch.start()
        let teachers = try String(contentsOf: directory.appendingPathComponent("teachers.csv"), encoding: .utf8)
        try write("teachers.csv", teachers + "demo-hs,t-new-01,새선생,t-new-01@demo-hs.school.example,gate,,\n")
        XCTAssertNil(roster.current.teachers["t-new-01"])
        // Sent from this thread, in a process full of other threads, as
        // `kill -HUP` reaches a service.
        kill(getpid(), SIGHUP)
        let reloaded = try await eventually { roster.current.teachers["t-new-01"] != nil }
        XCTAssertTrue(reloaded, "SIGHUP did not reload the roster")
        await watch.stop()
    }
}
