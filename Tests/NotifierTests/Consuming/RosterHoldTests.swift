import Kafka
import Store
import XCTest

@testable import Notifier

/// The hold's rules without a broker: a message naming an id the roster
/// does not list waits at the head of its partition, with everything behind
/// it, until the roster lists the id or the grace passes; other partitions
/// and broken messages are not held.
final class RosterHoldTests: XCTestCase {
    /// The roster of the moment: the student ids it lists.
    private var listed: Set<String> = ["known"]

    private func message(_ student: String, partition: Int32, offset: Int64) -> ConsumedMessage {
        ConsumedMessage(
            topic: "t", partition: partition, offset: offset, key: nil, value: Array(student.utf8), headers: [], timestampMilliseconds: nil)
    }

    /// A message's value is a student id; "broken" breaks a rule.
    private func decode(_ message: ConsumedMessage) -> Result<StoredEvent, DecodeFailure> {
        let student = String(decoding: message.value ?? [], as: UTF8.self)
        if student == "broken" { return .failure(DecodeFailure(reason: "occurredAt is not RFC 3339")) }
        guard listed.contains(student) else { return .failure(DecodeFailure(reason: "no student '\(student)'", awaitingRoster: true)) }
        return .success(
            .deleted(guidanceId: "\(message.partition)/\(message.offset)", schoolId: "sa", grade: 1, deletedBy: student, occurredAt: ""))
    }

    private func take(_ hold: inout RosterHold, _ batch: [ConsumedMessage] = [], at now: Double, held: inout [Int64]) -> [String] {
        hold.take(batch, now: now, decode: decode) { message, _ in held.append(message.offset) }.map { item in
            switch item.outcome {
            case .event: "\(item.message.partition)/\(item.message.offset)"
            case .deadLetter(let reason): "\(item.message.partition)/\(item.message.offset) dead: \(reason)"
            }
        }
    }

    func testAnUnknownIdHoldsItsPartitionUntilTheRosterListsIt() {
        var hold = RosterHold(grace: 60)
        var held: [Int64] = []
        let first = take(
            &hold,
            [
                message("known", partition: 0, offset: 1), message("new", partition: 0, offset: 2),
                message("known", partition: 0, offset: 3),
                message("known", partition: 1, offset: 7), message("broken", partition: 1, offset: 8)
            ], at: 100, held: &held)
        XCTAssertEqual(Set(first), ["0/1", "1/7", "1/8 dead: occurredAt is not RFC 3339"])
        XCTAssertEqual(held, [2], "told once, when first held")
        XCTAssertEqual(hold.count, 2, "the held message and the one behind it")

        let second = take(
            &hold, [message("known", partition: 0, offset: 4), message("known", partition: 1, offset: 9)], at: 101, held: &held)
        XCTAssertEqual(second, ["1/9"], "partition 1 goes on; partition 0 waits in order")
        XCTAssertEqual(held, [2], "not told again")

        listed.insert("new")
        let released = hold.take([message("known", partition: 0, offset: 5)], now: 110, decode: decode) { _, _ in XCTFail("held again") }
        XCTAssertEqual(
            released.map { "\($0.message.partition)/\($0.message.offset)" }, ["0/2", "0/3", "0/4", "0/5"], "in order, the new one last")
        XCTAssertEqual(released.first?.held, 10, "how long it waited")
        XCTAssertEqual(hold.count, 0)
    }

    func testAfterTheGraceTheUnknownIdIsDeadLetteredAndItsPartitionGoesOn() {
        var hold = RosterHold(grace: 5)
        var held: [Int64] = []
        XCTAssertEqual(
            take(&hold, [message("new", partition: 0, offset: 1), message("known", partition: 0, offset: 2)], at: 100, held: &held), [])
        XCTAssertEqual(take(&hold, at: 104.9, held: &held), [])
        XCTAssertEqual(take(&hold, at: 105, held: &held), ["0/1 dead: no student 'new' (not in the roster after 5 s)", "0/2"])
    }

    func testARevokedPartitionIsForgotten() {
        var hold = RosterHold(grace: 60)
        var held: [Int64] = []
        XCTAssertEqual(
            take(&hold, [message("new", partition: 0, offset: 1), message("new", partition: 1, offset: 1)], at: 100, held: &held), [])
        hold.drop([TopicPartition(topic: "t", partition: 0)])
        XCTAssertEqual(hold.count, 1)
        listed.insert("new")
        XCTAssertEqual(take(&hold, at: 101, held: &held), ["1/1"], "only what this replica still owns")
    }
}
