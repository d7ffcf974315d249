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
        Logger.flush()
        dup2(saved, 2)
        close(saved)
        try pipe.fileHandleForWriting.close()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    func testFieldsComeInKeyOrderTheLinesValueWinsAndTheLeadingKeysAreNotRepeated() throws {
        let logger = Logger(component: "ingest", metadata: ["part": "http", "zone": "z", "msg": "not this"])
        let written = try line { logger.info("request \"done\"", ["part": "producer", "a": "1", "ts": "not this either"]) }
        XCTAssertTrue(written.hasPrefix(#"{"ts":""#), written)
        XCTAssertTrue(
            written.hasSuffix(#""component":"ingest","msg":"request \"done\"","a":"1","part":"producer","zone":"z"}"# + "\n"), written)
        XCTAssertEqual(written.components(separatedBy: "\"msg\"").count, 2, written)
        XCTAssertEqual(written.components(separatedBy: "\"ts\"").count, 2, written)
        XCTAssertEqual(
            try line { logger.with(["b": "2"]).warning("w") }.hasSuffix(#""msg":"w","b":"2","part":"http","zone":"z"}"# + "\n"), true)
        XCTAssertEqual(try line { logger.debug("hidden") }, "")
    }

    func testInfoLinesGoOutWithinMillisecondsAndAWarningAtOnceAfterThem() throws {
        let pipe = Pipe()
        let saved = dup(2)
        dup2(pipe.fileHandleForWriting.fileDescriptor, 2)
        defer {
            Logger.flush()
            dup2(saved, 2)
            close(saved)
        }
        let logger = Logger(component: "batch")
        logger.info("first")
        logger.info("second")
        logger.warning("third")
        // Without waiting: the warning took the lines before it along, in order.
        var read = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
        XCTAssertEqual(
            read.components(separatedBy: "\n").filter { !$0.isEmpty }.map {
                $0.contains(#""msg":"first""#) ? 1 : $0.contains(#""msg":"second""#) ? 2 : $0.contains(#""msg":"third""#) ? 3 : 0
            }, [1, 2, 3], read)
        // An info line alone goes out by itself, a few milliseconds later.
        logger.info("fourth")
        var ready = pollfd(fd: pipe.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&ready, 1, 2000), 1, "the line was not written within 2 s")
        read = String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
        XCTAssertTrue(read.contains(#""msg":"fourth""#), read)
    }
}
