import Common
import Notifier
import XCTest

final class NotifierConfigTests: XCTestCase {
    func testDefaultsAndStoreLocations() throws {
        let config = try NotifierConfig.fromEnvironment(Environment([:]))
        XCTAssertEqual(config.http.port, 8081)
        XCTAssertEqual(config.groupID, "guidance-notifier")
        XCTAssertEqual(config.partitions, 12)
        XCTAssertEqual(config.store, .sqlite(path: "guidance-notifier.db"))
        XCTAssertEqual(config.logLevel, .info)
        XCTAssertEqual(try NotifierConfig.fromEnvironment(Environment(["LOG_LEVEL": "WARN"])).logLevel, .warning)
        XCTAssertEqual(try StoreLocation.parse("postgres://u:p@db/guidance"), .postgres(url: "postgres://u:p@db/guidance"))
    }

    func testBadValuesNameTheirVariable() {
        for (variable, value) in [("STORE_URL", "mysql://db"), ("NOTIFIER_PORT", "eighty"), ("TOPIC_PARTITIONS", "0"), ("LOG_LEVEL", "loud"), ("AMENDMENT_INTERVAL_SECONDS", "-5")] {
            XCTAssertThrowsError(try NotifierConfig.fromEnvironment(Environment([variable: value])), variable) { error in
                XCTAssertEqual((error as? ConfigurationError)?.variable, variable)
            }
        }
    }
}
