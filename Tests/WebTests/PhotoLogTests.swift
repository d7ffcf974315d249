import Common
import Foundation
import Kafka
import Sessions
import XCTest

/// The folder a replica serves uploaded photos from holds minors' photos:
/// private to the process, and not left behind by one that was killed.
final class PhotoLogTests: XCTestCase {
    func testTheFolderIsPrivateAndOneAKilledProcessLeftIsRemoved() throws {
        // A process that no longer runs: its folder, with a photo in it.
        let dead = Process()
        dead.executableURL = URL(fileURLWithPath: "/bin/true")
        try dead.run()
        dead.waitUntilExit()
        let leftover = NSTemporaryDirectory() + "/guidance-photos-\(dead.processIdentifier)-test"
        try FileManager.default.createDirectory(atPath: leftover + "/sa", withIntermediateDirectories: true)
        try Data([0xFF, 0xD8]).write(to: URL(fileURLWithPath: leftover + "/sa/s1.jpg"))
        // A running process's folder (this one's own test process) stays.
        let alive = NSTemporaryDirectory() + "/guidance-photos-\(getppid())-test"
        try FileManager.default.createDirectory(atPath: alive, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: alive) }

        let producer = try Producer(
            config: ProducerConfig(kafka: KafkaConfig(bootstrapServers: "127.0.0.1:1")), logger: Logger(component: "test", level: .error))
        let log = try PhotoLog(
            topic: "photos", kafka: KafkaConfig(bootstrapServers: "127.0.0.1:1"), producer: producer, logger: Logger(component: "test"))
        defer { try? FileManager.default.removeItem(atPath: log.directory) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover), "the killed process's photos are gone")
        XCTAssertTrue(FileManager.default.fileExists(atPath: alive), "a running process's folder is not touched")
        var info = stat()
        XCTAssertEqual(stat(log.directory, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700, "the folder is the process's alone")
    }
}
