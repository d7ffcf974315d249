import Common
import Foundation
import Guidance
import Kafka

/// A message the notifier could not apply, as it goes to the dead-letter
/// topic: its own headers (less any named like ours, so that a letter's
/// `dlq-reason` is always the notifier's) and where it came from, why, and
/// when (`at`, on the service's clock).
package func deadLetter(_ message: ConsumedMessage, reason: String, group: String, topic: String, at: Double) -> OutgoingMessage {
    var headers = message.headers.filter { !$0.name.lowercased().hasPrefix("dlq-") }
    headers += [
        ("dlq-reason", reason), ("dlq-source-topic", message.topic), ("dlq-source-partition", String(message.partition)),
        ("dlq-source-offset", String(message.offset)), ("dlq-consumer-group", group), ("dlq-failed-at", Timestamp.format(at))
    ].map { (name: $0.0, value: Array($0.1.utf8)) }
    return OutgoingMessage(topic: topic, key: message.key ?? [], value: message.value, headers: headers)
}

/// Re-publishes chosen dead letters to the topic they came from, after an
/// operator fixed what made them fail (usually the roster). Replaying is
/// idempotent because consumption is: a registration already stored, or
/// replayed twice, changes nothing.
package struct DeadLetterReplay: Sendable {
    /// Which letters to take: by offset range (every partition, or one) and
    /// by a piece of their `dlq-reason`.
    package struct Selection: Sendable {
        package var partition: Int32?
        package var fromOffset: Int64
        package var toOffset: Int64
        package var reasonContains: String?

        package init(partition: Int32? = nil, fromOffset: Int64 = 0, toOffset: Int64 = .max, reasonContains: String? = nil) {
            self.partition = partition
            self.fromOffset = fromOffset
            self.toOffset = toOffset
            self.reasonContains = reasonContains
        }

        func contains(_ letter: ConsumedMessage) -> Bool {
            (partition == nil || partition == letter.partition)
                && (fromOffset...toOffset).contains(letter.offset)
                && (reasonContains.map { (letter.header("dlq-reason") ?? "").contains($0) } ?? true)
        }
    }

    /// One letter chosen, and where it goes back to.
    package struct Letter: Sendable, CustomStringConvertible {
        package let partition: Int32
        package let offset: Int64
        package let sourceTopic: String
        package let reason: String

        package var description: String { "dlq[\(partition)]@\(offset) → \(sourceTopic): \(reason)" }
    }

    let kafka: KafkaConfig
    let topics: Topics
    let logger: Logger

    package init(kafka: KafkaConfig, topics: Topics = Topics(), logger: Logger) {
        self.kafka = kafka
        self.topics = topics
        self.logger = logger
    }

    /// Reads the dead-letter topic up to its end, and unless `dryRun`
    /// re-publishes the selected letters (without their `dlq-*` headers, with
    /// `dlq-replayed-from`), each acknowledged before the next. Returns the
    /// letters selected.
    package func run(_ selection: Selection, dryRun: Bool, timeout: Duration = .seconds(60)) async throws -> [Letter] {
        let letters = try await BlockingExecutor.broker.run { [self] in try read(selection, timeout: timeout) }
        guard !dryRun else { return letters.map(\.letter) }
        let producer = try Producer(config: ProducerConfig(kafka: kafka, clientID: "guidance-dlq-replay"), logger: logger)
        var failure: (any Error)?
        do {
            for (letter, message) in letters {
                let headers =
                    message.headers.filter { !$0.name.hasPrefix("dlq-") }
                    + [(name: "dlq-replayed-from", value: Array("\(topics.deadLetters)/\(letter.partition)/\(letter.offset)".utf8))]
                _ = try await producer.send(
                    OutgoingMessage(topic: letter.sourceTopic, key: message.key ?? [], value: message.value, headers: headers))
                logger.info(
                    "dead letter replayed",
                    ["partition": String(letter.partition), "offset": String(letter.offset), "topic": letter.sourceTopic])
            }
        } catch {
            failure = error
        }
        // Closing waits for the polling thread: on the broker's threads.
        _ = try? await BlockingExecutor.broker.run { producer.close() }
        if let failure { throw failure }
        return letters.map(\.letter)
    }

    /// Every selected letter from the start of the topic to its end, as the
    /// end stood when reading began.
    private func read(_ selection: Selection, timeout: Duration) throws -> [(letter: Letter, message: ConsumedMessage)] {
        let consumer = try Consumer(
            config: ConsumerConfig(
                kafka: kafka, groupID: "guidance-dlq-replay-\(RandomID.uuid())", topics: [topics.deadLetters],
                clientID: "guidance-dlq-replay"),
            logger: logger)
        defer { consumer.close() }
        let ends = try OffsetsReader(kafka: kafka, groupID: consumer.config.groupID, clientID: "guidance-dlq-replay", logger: logger)
            .endOffsets(of: [topics.deadLetters])
        var remaining: [Int32: Int64] = [:]
        for (partition, end) in ends where end > 0 { remaining[partition.partition] = end }
        let reading = Uptime()
        var chosen: [(letter: Letter, message: ConsumedMessage)] = []
        while !remaining.isEmpty {
            guard reading.now < timeout else {
                throw KafkaError(.deliveryTimedOut, "the dead-letter topic was not read to its end within \(timeout)")
            }
            for message in consumer.poll(maxMessages: 500, timeout: .milliseconds(200)) {
                if let end = remaining[message.partition], message.offset + 1 >= end { remaining[message.partition] = nil }
                guard selection.contains(message) else { continue }
                let source = message.header("dlq-source-topic") ?? ""
                guard topics.events.contains(source) else {
                    logger.warning(
                        "dead letter without a known source topic; left alone",
                        ["partition": String(message.partition), "offset": String(message.offset)])
                    continue
                }
                chosen.append(
                    (
                        Letter(
                            partition: message.partition, offset: message.offset, sourceTopic: source,
                            reason: message.header("dlq-reason") ?? ""), message
                    ))
            }
        }
        return chosen.sorted { ($0.letter.partition, $0.letter.offset) < ($1.letter.partition, $1.letter.offset) }
    }
}
