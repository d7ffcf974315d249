import Kafka
import Store
import XCTest

@testable import Notifier

/// The materializer's decisions without a broker or a store: which
/// messages go to the dead-letter topic, when a batch is written, and that
/// its offsets are committed only after the store wrote it and its dead
/// letters were acknowledged, batch after batch in the order polled.
final class ConsumingTests: XCTestCase {
    func testABatchCommitsOnlyAfterItsDeadLettersAndTheStoreAndInTheOrderPolled() {
        var state = Materializer.Consuming(hold: RosterHold(grace: 60))
        // A poll: two events and one undecodable message between them.
        let first = state.polled([event(0, 1), broken(0, 2, "value is not JSON"), event(0, 3)], pollWasEmpty: false)
        XCTAssertEqual(first.map(\.name), ["deadLetter 0/2", "write 0/1 0/3"], "the dead letter first; nothing committed yet")
        guard case .write(let batch, let events) = first.last else { return XCTFail("no write") }
        XCTAssertEqual(events.count, 2)
        XCTAssertEqual(batch.settled.map(\.offset), [1, 2, 3], "the dead letter's offset is settled with the batch it came in")

        // The next poll comes while the first batch is written: that batch
        // is finished before the next is handed on, so commits keep order.
        let second = state.polled([event(1, 9)], pollWasEmpty: false)
        XCTAssertEqual(second.map(\.name), ["finish 0/1 0/3", "write 1/9"])

        // The store wrote the first batch and kept one event out: it goes
        // to the dead-letter topic before the batch's offsets are committed.
        let written = Materializer.Consuming.written(batch, rejections: [Rejection(index: 1, reason: "school: another school's id")])
        XCTAssertEqual(written.map(\.name), ["deadLetter 0/3", "commit 0/1 0/3"])

        // A poll that found nothing finishes the batch in hand at once.
        let idle = state.polled([], pollWasEmpty: true)
        XCTAssertEqual(idle.map(\.name), ["finish 1/9"])
        XCTAssertNil(state.writing)
        XCTAssertEqual(state.polled([], pollWasEmpty: true).map(\.name), [], "nothing in hand, nothing to do")
    }

    func testAPollOfOnlyDeadLettersStillCommitsThemThroughABatch() {
        var state = Materializer.Consuming(hold: RosterHold(grace: 60))
        let actions = state.polled([broken(0, 4, "unknown type")], pollWasEmpty: false)
        XCTAssertEqual(actions.map(\.name), ["deadLetter 0/4", "write "])
        guard case .write(let batch, _) = actions.last else { return XCTFail("no write") }
        XCTAssertEqual(batch.settled.map(\.offset), [4])
        XCTAssertEqual(Materializer.Consuming.written(batch, rejections: []).map(\.name), ["commit "])
    }

    func testAnEventTheStoreRefusesIsNarrowedDownAndTheRestWritten() {
        // The store refuses any write holding 13: only 13 is rejected, by its index in the batch.
        var writes: [[Int]] = []
        let rejections = Materializer.Consuming.narrowing(Array(10..<18)) { chunk -> Result<[Rejection], StoreError>? in
            writes.append(chunk)
            return chunk.contains(13) ? .failure(StoreError(.failed, "CHECK constraint failed")) : .success([])
        }
        XCTAssertEqual(rejections?.map(\.index), [3])
        XCTAssertEqual(rejections?.first?.reason, "store: CHECK constraint failed")
        XCTAssertEqual(writes, [Array(10..<18), [10, 11, 12, 13], [10, 11], [12, 13], [12], [13], [14, 15, 16, 17]])
        // The store's own rejections keep their place in the whole batch.
        let kept = Materializer.Consuming.narrowing(Array(0..<4)) { chunk -> Result<[Rejection], StoreError>? in
            if chunk.count == 4 { return .failure(StoreError(.failed, "value too long")) }
            return .success(chunk == [2, 3] ? [Rejection(index: 1, reason: "school: another school's id")] : [])
        }
        XCTAssertEqual(kept?.map(\.index), [3])
    }

    func testAWriteThatGivesUpBecauseOfAStopRejectsNothing() {
        var calls = 0
        let rejections = Materializer.Consuming.narrowing(Array(0..<4)) { _ -> Result<[Rejection], StoreError>? in
            calls += 1
            return calls == 1 ? .failure(StoreError(.failed, "constraint")) : nil
        }
        XCTAssertNil(rejections, "stopping: nothing rejected, nothing committed")
    }

    func testRetriesBackOffFromATenthOfASecondToFiveSeconds() {
        var backoff = Materializer.Consuming.Backoff()
        let pauses = (0..<9).map { _ in backoff.next() }
        XCTAssertEqual(pauses, [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5, 5])
    }

    // MARK: - Messages

    private func message(_ partition: Int32, _ offset: Int64) -> ConsumedMessage {
        ConsumedMessage(topic: "t", partition: partition, offset: offset, key: nil, value: [], headers: [], timestampMilliseconds: nil)
    }

    private func event(_ partition: Int32, _ offset: Int64) -> RosterHold.Released {
        RosterHold.Released(
            message: message(partition, offset),
            outcome: .event(.deleted(guidanceId: "g\(offset)", schoolId: "sa", grade: 1, deletedBy: "t1", occurredAt: "")), held: 0)
    }

    private func broken(_ partition: Int32, _ offset: Int64, _ reason: String) -> RosterHold.Released {
        RosterHold.Released(message: message(partition, offset), outcome: .deadLetter(reason: reason), held: 0)
    }
}

extension Materializer.Consuming.Action {
    /// The action and the messages it is about, as `partition/offset`.
    fileprivate var name: String {
        func offsets(_ messages: [ConsumedMessage]) -> String { messages.map { "\($0.partition)/\($0.offset)" }.joined(separator: " ") }
        switch self {
        case .deadLetter(let message, _): return "deadLetter \(offsets([message]))"
        case .write(let batch, _): return "write \(offsets(batch.sources))"
        case .finish(let batch): return "finish \(offsets(batch.sources))"
        case .commit(let batch): return "commit \(offsets(batch.sources))"
        }
    }
}
