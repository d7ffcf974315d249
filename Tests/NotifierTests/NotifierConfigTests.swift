import Common
import Foundation
import Notifier
import Store
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
        for (variable, value) in [
            ("STORE_URL", "mysql://db"), ("NOTIFIER_PORT", "eighty"), ("TOPIC_PARTITIONS", "0"), ("LOG_LEVEL", "loud"),
            ("AMENDMENT_INTERVAL_SECONDS", "-5"), ("QUIET_HOURS", "21-7"), ("VAPID_PRIVATE_KEY", "not-a-key"),
            ("VAPID_SUBJECT", "mailto:ops@school.example")
        ] {
            XCTAssertThrowsError(try NotifierConfig.fromEnvironment(Environment([variable: value])), variable) { error in
                XCTAssertEqual((error as? ConfigurationError)?.variable, variable)
            }
        }
    }

    /// The README's recipe, `openssl rand -base64 24`, holds a `/` about 40 %
    /// of the time; given in STORE_PASSWORD any bytes reach libpq as they
    /// are, and a raw one in the URL is refused at start naming the password.
    func testAnyPasswordReachesLibpqThroughStorePassword() throws {
        var passwords = ["Ab3/x+y=", "p@ss:w/rd?#%2F", "한글 비밀번호", "\\'\""]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            passwords.append(Data((0..<18).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString())
        }
        for password in passwords {
            let config = try NotifierConfig.fromEnvironment(
                Environment(["STORE_URL": "postgres://guidance@postgres:5432/guidance", "STORE_PASSWORD": password]))
            guard case .postgres(let url) = config.store else { return XCTFail("\(config.store)") }
            let options = try SQLStore.postgresOptions(url).get()
            XCTAssertEqual(options["password"], password)
            XCTAssertEqual(options["user"], "guidance")
            XCTAssertEqual(options["host"], "postgres")
            XCTAssertEqual(options["port"], "5432")
            XCTAssertEqual(options["dbname"], "guidance")
            XCTAssertFalse(config.store.redacted.contains(password), "the password is never logged")
        }
        XCTAssertThrowsError(
            try NotifierConfig.fromEnvironment(Environment(["STORE_URL": "postgres://guidance:Ab3/xyz@postgres:5432/guidance"]))
        ) { error in
            let error = error as? ConfigurationError
            XCTAssertEqual(error?.variable, "STORE_URL")
            XCTAssertTrue(
                error?.reason.contains("password") == true && error?.reason.contains("STORE_PASSWORD") == true,
                "\(String(describing: error))")
            XCTAssertFalse("\(String(describing: error))".contains("xyz"), "the password is not echoed")
        }
        // A raw delimiter or a stray '%': libpq's own text would quote a piece of the password (its host, its database).
        for (password, pieces) in [
            ("Zq9%xyz", ["Zq9", "xyz"]), ("abc@def", ["abc", "def"]), ("ab?cdef", ["cdef"]), ("ab#cdef", ["cdef"]), ("ab%4", ["ab%4"])
        ] {
            XCTAssertThrowsError(
                try NotifierConfig.fromEnvironment(
                    Environment(["STORE_URL": "postgres://guidance:\(password)@127.0.0.1:5432/guidance?connect_timeout=5"]))
            ) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("STORE_URL") && text.contains("STORE_PASSWORD"), text)
                for piece in pieces { XCTAssertFalse(text.contains(piece), "\(piece) of the password is in: \(text)") }
            }
        }
        // Bytes that are not UTF-8 (psql takes them): percent-encoded as they are, not replaced.
        let latin1: [UInt8] = [0x70, 0xe4, 0x73, 0x73, 0xff, 0x2f]
        let config = try NotifierConfig.fromEnvironment(
            Environment(
                ["STORE_URL": "postgres://guidance@postgres:5432/guidance", "STORE_PASSWORD": "\u{FFFD}"],
                nonUTF8: ["STORE_PASSWORD": latin1]))
        guard case .postgres(let url) = config.store else { return XCTFail("\(config.store)") }
        XCTAssertTrue(url.hasPrefix("postgres://guidance:p%E4ss%FF%2F@postgres"), url)
        // The process's own environment keeps such bytes too.
        let name = "GUIDANCE_TEST_NON_UTF8"
        XCTAssertEqual(
            latin1.withUnsafeBufferPointer { buffer in
                Array(buffer + [0]).withUnsafeBufferPointer {
                    setenv(name, UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), 1)
                }
            }, 0)
        defer { unsetenv(name) }
        XCTAssertEqual(Environment().bytes(name), latin1)
        XCTAssertThrowsError(
            try NotifierConfig.fromEnvironment(
                Environment(["STORE_URL": "postgres://guidance:old@postgres/guidance", "STORE_PASSWORD": "new"]))
        ) { error in
            XCTAssertEqual((error as? ConfigurationError)?.variable, "STORE_PASSWORD")
        }
    }
}
