import Common
import Foundation
import Guidance
import Kafka

/// Students' photos as their school uploaded them (관리 → 명부, a ZIP of
/// files named by 학번 or student id), already made the size the app shows:
/// the Kafka topic `guidance.photos` (one partition, compacted, keyed
/// `school/studentId`, so a student's newest photo stays), which every
/// replica of both services reads whole into a folder of its own,
/// `<directory>/<school>/<studentId>.jpg`, served before the roster folder's
/// photos (`StudentPhotos`). The folder is private to the process (0700,
/// files 0600), made at start and removed at shutdown (one a killed
/// process left is removed by the next to start): the log is where the
/// photos are kept, the folder only what this replica serves from. A photo
/// belongs to its school: the key names both, and ids repeat across schools.
package final class PhotoLog: Sendable {
    /// One photo to publish, made small already.
    package struct Photo: Sendable {
        package let schoolId: String
        package let studentId: String
        package let jpeg: [UInt8]

        package init(schoolId: String, studentId: String, jpeg: [UInt8]) {
            self.schoolId = schoolId
            self.studentId = studentId
            self.jpeg = jpeg
        }
    }

    private let log: WholeLog
    private let producer: Producer
    package let directory: String
    private let logger: Logger

    package init(topic: String, kafka: KafkaConfig, producer: Producer, logger: Logger) throws {
        log = WholeLog(topic: topic, kafka: kafka, configs: ["cleanup.policy": "compact"], logger: logger)
        self.producer = producer
        self.logger = logger
        PhotoLog.removeLeftovers(logger: logger)
        var template = Array((NSTemporaryDirectory() + "/guidance-photos-\(getpid())-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ConfigurationError(variable: "TMPDIR", reason: "no folder for the schools' photos could be made there: \(errno)")
        }
        directory = String(cString: made)
    }

    /// Removes the folders that processes no longer running left behind
    /// (killed before their shutdown removed them): each names its process.
    private static func removeLeftovers(logger: Logger) {
        let base = NSTemporaryDirectory()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
        for name in names where name.hasPrefix("guidance-photos-") {
            guard let pid = Int32(name.dropFirst("guidance-photos-".count).prefix { $0 != "-" }), pid != getpid(),
                kill(pid, 0) != 0 && errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(atPath: base + "/" + name)
            logger.info("removed the photo folder a stopped process left", ["pid": String(pid)])
        }
    }

    /// Whether the log was read up to where it ended at start.
    package var caughtUp: Bool { log.caughtUp }

    /// The part that reads the log into the folder; stopping removes the folder.
    package var part: Part {
        let directory = self.directory
        return log.part("photo log", stopped: { try? FileManager.default.removeItem(atPath: directory) }) { [self] messages in
            for message in messages { write(message) }
        }
    }

    /// Publishes `photos`; returns once this replica has read them all back.
    package func publish(_ photos: [Photo], timeout: Duration = .seconds(30)) async throws(KafkaError) {
        var last: Int64 = -1
        for photo in photos {
            let report = try await producer.send(
                OutgoingMessage(topic: log.topic, key: Array("\(photo.schoolId)/\(photo.studentId)".utf8), value: photo.jpeg))
            last = max(last, report.offset)
        }
        guard last >= 0 else { return }
        guard await log.read(past: last, atMost: timeout) else {
            throw KafkaError(.deliveryTimedOut, "the photo log was not read up to offset \(last) within \(timeout)")
        }
    }

    /// Writes one record's photo whole (a temporary file renamed over the
    /// old one), or removes it for an empty record; a key that is no plain
    /// `school/student` is skipped.
    private func write(_ message: ConsumedMessage) {
        let parts = String(decoding: message.key ?? [], as: UTF8.self).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ String($0).isPlainFileName }) else {
            logger.warning("photo log record with an unusable key; skipped", ["offset": String(message.offset)])
            return
        }
        let folder = directory + "/" + parts[0]
        let path = folder + "/" + parts[1] + ".jpg"
        guard let jpeg = message.value, !jpeg.isEmpty else {
            unlink(path)
            return
        }
        mkdir(folder, 0o700)
        let temporary = path + ".part"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            logger.error("photo not written", ["offset": String(message.offset), "errno": String(errno)])
            return
        }
        let written = jpeg.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == jpeg.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            logger.error("photo not written", ["offset": String(message.offset), "errno": String(errno)])
            return
        }
    }
}
