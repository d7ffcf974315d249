import Common
import Foundation
import Guidance
import HTTP
import Ingest
import Store
import TestSupport
import Wiring
import XCTest

@testable import Notifier

/// Every start-up failure names the variable to fix, says how, and never
/// shows a password.
final class StartupTests: XCTestCase {
    private func failure(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testBadBootstrapServersNameTheVariable() {
        for value in ["localhost:notaport", "kafka:0", "kafka", "kafka:9092,", " "] {
            let message = failure { _ = try IngestConfig.fromEnvironment(Environment(["KAFKA_BOOTSTRAP_SERVERS": value])) }
            XCTAssertTrue(message.hasPrefix("KAFKA_BOOTSTRAP_SERVERS: "), "\(value): \(message)")
        }
        XCTAssertEqual(
            failure { _ = try IngestConfig.fromEnvironment(Environment(["KAFKA_BOOTSTRAP_SERVERS": "a:9092, PLAINTEXT://[::1]:9093"])) },
            "no error")
    }

    func testAStoreURLIsNeverEchoedWithItsPassword() {
        let mistyped = failure {
            _ = try NotifierConfig.fromEnvironment(Environment(["STORE_URL": "postgress://guidance:s3cret@db:5432/guidance"]))
        }
        XCTAssertTrue(mistyped.hasPrefix("STORE_URL: "), mistyped)
        XCTAssertFalse(mistyped.contains("s3cret"), mistyped)
        XCTAssertTrue(mistyped.contains("guidance:***@db"), mistyped)
        let unreachable = failure {
            _ = try StoreLocation.postgres(url: "postgres://guidance:s3cret@127.0.0.1:1/guidance?password=s3cret&connect_timeout=2").open(
                clock: Timestamp.now)
        }
        XCTAssertTrue(unreachable.hasPrefix("STORE_URL: "), unreachable)
        XCTAssertFalse(unreachable.contains("s3cret"), unreachable)
    }

    func testAMissingSQLiteFolderOrRosterNamesTheVariable() {
        let store = failure { _ = try StoreLocation.sqlite(path: "/nonexistent-\(UUID())/notifier.db").open(clock: Timestamp.now) }
        XCTAssertTrue(store.hasPrefix("STORE_URL: the folder '/nonexistent-"), store)
        XCTAssertTrue(store.contains("create it"), store)
        let roster = failure { _ = try Startup.roster(from: "/nonexistent-roster") }
        XCTAssertTrue(roster.hasPrefix("ROSTER_DIR: '/nonexistent-roster' has no schools.csv"), roster)
    }

    func testAPortInUseNamesTheVariableAndTheLikelyCause() throws {
        let first = HTTPServer(config: HTTPServerConfig(host: "127.0.0.1", port: 0), router: Router())
        try first.start()
        let second = HTTPServer(config: HTTPServerConfig(host: "127.0.0.1", port: first.port), router: Router())
        let message = failure { try Startup.listen(second, portVariable: "INGEST_PORT", service: "guidance-ingest") }
        XCTAssertTrue(message.hasPrefix("INGEST_PORT: port \(first.port) is in use: another guidance-ingest"), message)
        let done = expectation(description: "stopped")
        Task {
            await first.shutdown()
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
    }

    /// A new deployment is not open between `docker compose up` and the
    /// first token: without tokens.csv neither service starts unless
    /// AUTHENTICATION=optional says so; a running one refuses a roster
    /// change that removes it.
    func testWithoutTokensNeitherServiceStartsUnlessOpenIsAskedFor() throws {
        let root = repositoryRoot
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("open-\(UUID())")
        try FileManager.default.copyItem(at: root.appendingPathComponent("examples/roster"), to: folder)
        defer { try? FileManager.default.removeItem(at: folder) }
        let tokens = folder.appendingPathComponent("tokens.csv")
        let kept = try Data(contentsOf: tokens)
        try FileManager.default.removeItem(at: tokens)
        let environment = [
            "ROSTER_DIR": folder.path, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",
            "STORE_URL": "sqlite:" + folder.appendingPathComponent("n.db").path, "INGEST_PORT": "0", "NOTIFIER_PORT": "0"
        ]

        let ingest = failure {
            _ = try IngestService(
                config: try IngestConfig.fromEnvironment(Environment(environment)), logger: Logger(component: "t", level: .error))
        }
        XCTAssertTrue(ingest.hasPrefix("ROSTER_DIR: "), ingest)
        XCTAssertTrue(
            ingest.contains("no tokens.csv") && ingest.contains("guidance-admin token issue") && ingest.contains("AUTHENTICATION=optional"),
            ingest)
        let notifier = failure {
            _ = try NotifierService(
                config: try NotifierConfig.fromEnvironment(Environment(environment)), logger: Logger(component: "t", level: .error))
        }
        XCTAssertTrue(notifier.hasPrefix("ROSTER_DIR: ") && notifier.contains("no tokens.csv"), notifier)
        let typo = failure { _ = try IngestConfig.fromEnvironment(Environment(environment.merging(["AUTHENTICATION": "off"]) { $1 })) }
        XCTAssertTrue(typo.hasPrefix("AUTHENTICATION: "), typo)

        let open = environment.merging(["AUTHENTICATION": "optional"]) { $1 }
        XCTAssertEqual(
            failure {
                _ = try IngestService(
                    config: try IngestConfig.fromEnvironment(Environment(open)), logger: Logger(component: "t", level: .error))
            }, "no error")

        // Running with tokens, a change that removes them is refused.
        try kept.write(to: tokens)
        let service = try IngestService(
            config: try IngestConfig.fromEnvironment(Environment(environment)), logger: Logger(component: "t", level: .error))
        XCTAssertTrue(service.roster.current.authenticationEnabled)
        try FileManager.default.removeItem(at: tokens)
        XCTAssertFalse(service.roster.reload(because: "test"), "a roster without tokens.csv is not served")
        XCTAssertTrue(service.roster.current.authenticationEnabled)
    }
}
