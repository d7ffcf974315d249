import Common
import Foundation
import XCTest

final class LoggerTests: XCTestCase {
    /// The line the logger writes to standard error for `body`.
    private func line(_ body: () -> Void) throws -> String {
        let pipe = Pipe()
        let saved = dup(2)
        dup2(pipe.fileHandleForWriting.fileDescriptor, 2)
        body()
        dup2(saved, 2)
        close(saved)
        try pipe.fileHandleForWriting.close()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    func testFieldsComeInKeyOrderTheLinesValueWinsAndTheLeadingKeysAreNotRepeated() throws {
        let logger = Logger(component: "ingest", metadata: ["part": "http", "zone": "z", "msg": "not this"])
        let written = try line { logger.info("request \"done\"", ["part": "producer", "a": "1", "ts": "not this either"]) }
        XCTAssertTrue(written.hasPrefix(#"{"ts":""#), written)
        XCTAssertTrue(written.hasSuffix(#""component":"ingest","msg":"request \"done\"","a":"1","part":"producer","zone":"z"}"# + "\n"), written)
        XCTAssertEqual(written.components(separatedBy: "\"msg\"").count, 2, written)
        XCTAssertEqual(written.components(separatedBy: "\"ts\"").count, 2, written)
        XCTAssertEqual(try line { logger.with(["b": "2"]).warning("w") }.hasSuffix(#""msg":"w","b":"2","part":"http","zone":"z"}"# + "\n"), true)
        XCTAssertEqual(try line { logger.debug("hidden") }, "")
    }
}
