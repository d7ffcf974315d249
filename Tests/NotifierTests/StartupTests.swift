import Common
import Foundation
import HTTP
import Ingest
@testable import Notifier
import ServiceSupport
import XCTest

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
        XCTAssertEqual(failure { _ = try IngestConfig.fromEnvironment(Environment(["KAFKA_BOOTSTRAP_SERVERS": "a:9092, PLAINTEXT://[::1]:9093"])) }, "no error")
    }

    func testAStoreURLIsNeverEchoedWithItsPassword() {
        let mistyped = failure { _ = try NotifierConfig.fromEnvironment(Environment(["STORE_URL": "postgress://guidance:s3cret@db:5432/guidance"])) }
        XCTAssertTrue(mistyped.hasPrefix("STORE_URL: "), mistyped)
        XCTAssertFalse(mistyped.contains("s3cret"), mistyped)
        XCTAssertTrue(mistyped.contains("guidance:***@db"), mistyped)
        let unreachable = failure { _ = try NotifierService.openStore(.postgres(url: "postgres://guidance:s3cret@127.0.0.1:1/guidance?password=s3cret&connect_timeout=2")) }
        XCTAssertTrue(unreachable.hasPrefix("STORE_URL: "), unreachable)
        XCTAssertFalse(unreachable.contains("s3cret"), unreachable)
    }

    func testAMissingSQLiteFolderOrRosterNamesTheVariable() {
        let store = failure { _ = try NotifierService.openStore(.sqlite(path: "/nonexistent-\(UUID())/notifier.db")) }
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
}
