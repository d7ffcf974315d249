import Guidance
import Store
import XCTest

@testable import Notifier

/// A connection's batch, decided without libcurl or a store: each test
/// plays the dispatcher, doing what `next` says and telling `sent` what a
/// send came to, on a clock it moves itself.
final class DeliveryBatchTests: XCTestCase {
    /// 1 s base, 60 s at most between tries, 24 h in all.
    let retry = RetryPolicy(base: 1, maxBackoff: 60, maxAge: 86_400)

    func testEachOutcomeIsRecordedAsItsKindAndWrittenBeforeTheBatchEnds() {
        var batch = DeliveryBatch(claims: claims(3), retry: retry, longestSend: 11, now: 1_000)
        var played = Play()
        played.run(&batch, from: 1_000, leaseUntil: 2_000) { index in
            [.sent, .notRetriable("550 no such mailbox"), .retriable("timed out", retryAfter: 30)][index]
        }
        XCTAssertEqual(played.sent, ["d0", "d1", "d2"])
        XCTAssertEqual(played.givenBack, [])
        // Sends within 50 ms of one another are written together, once, after the last.
        XCTAssertEqual(played.records.count, 1)
        let outcomes = played.records.joined().map(\.outcome)
        XCTAssertEqual(outcomes.map(\.kind), ["sent", "failed", "retry"])
        XCTAssertEqual(outcomes[1], .failed(error: "550 no such mailbox"))
        // The receiver's Retry-After wins over the backoff.
        XCTAssertEqual(outcomes[2], .retry(error: "timed out", at: 1_000 + 30))
        XCTAssertEqual(played.last, .done)
    }

    func testOutcomesAreWrittenEveryFiftyMillisecondsAsTheBatchGoes() {
        var batch = DeliveryBatch(claims: claims(4), retry: retry, longestSend: 11, now: 1_000)
        var played = Play(secondsPerSend: 0.03)
        played.run(&batch, from: 1_000, leaseUntil: 2_000) { _ in .sent }
        // Sent at 1000.03, .06, .09, .12: written after the second and the fourth.
        XCTAssertEqual(played.records.map { $0.map(\.deliveryId) }, [["d0", "d1"], ["d2", "d3"]])
    }

    func testARetryBacksOffThenGivesUpAtTheMaximumAge() {
        var young = DeliveryBatch(claims: claims(1, attempts: 2), retry: retry, longestSend: 11, now: 1_000)
        var played = Play()
        played.run(&young, from: 1_000, leaseUntil: 2_000) { _ in .retriable("421 busy") }
        // Third attempt: 4 s of backoff, with jitter 0.5 ... 1 of it (random 1 in the play).
        XCTAssertEqual(played.records.joined().first?.outcome, .retry(error: "421 busy", at: 1_000 + 4))

        var old = DeliveryBatch(claims: claims(1, attempts: 9, queuedAt: 1_000 - 86_390), retry: retry, longestSend: 11, now: 1_000)
        played = Play()
        played.run(&old, from: 1_000, leaseUntil: 2_000) { _ in .retriable("421 busy") }
        XCTAssertEqual(played.records.joined().first?.outcome, .failed(error: "gave up after 10 attempts over 24 h: 421 busy"))
    }

    func testWhatCannotBeSentInsideTheLeaseIsGivenBackAfterTheOutcomesSoFar() {
        // Sends take 5 s, the lease ends at 1,020 and a send may take 11 s:
        // the first two go (1,000 and 1,005 + 11 ≤ 1,020), the third would
        // end after the lease (1,010 + 11 > 1,020).
        var batch = DeliveryBatch(claims: claims(4), retry: retry, longestSend: 11, now: 1_000)
        var played = Play(secondsPerSend: 5)
        played.run(&batch, from: 1_000, leaseUntil: 1_020) { _ in .sent }
        XCTAssertEqual(played.sent, ["d0", "d1"])
        XCTAssertEqual(played.givenBack, ["d2", "d3"])
        XCTAssertEqual(played.order.suffix(2), ["record", "giveBack"], "outcomes written before the rest is released")
    }

    func testAStopGivesBackTheRestAndTheSendItCutShortIsNoAttempt() {
        var batch = DeliveryBatch(claims: claims(3), retry: retry, longestSend: 11, now: 1_000)
        var played = Play()
        // The second send is cut short by the stop: a retriable failure that is not one.
        played.run(&batch, from: 1_000, leaseUntil: 2_000, stopsAfter: 1) { index in
            index == 0 ? .sent : .retriable("cancelled")
        }
        XCTAssertEqual(played.sent, ["d0", "d1"])
        XCTAssertEqual(played.records.joined().map(\.deliveryId), ["d0"], "the cut send is not recorded")
        XCTAssertEqual(played.givenBack, ["d1", "d2"])
        XCTAssertEqual(played.last, .done)
    }

    // MARK: - Playing the dispatcher

    private func claims(_ count: Int, attempts: Int = 0, queuedAt: Double = 900) -> [ClaimedDelivery] {
        (0..<count).map { index in
            let digest = Digest(
                digestId: "g\(index)", teacherId: "t1", schoolId: "sa", date: "2026-11-30", scope: .class, grade: 1, classNumber: 3,
                revision: 1, createdAt: "2026-11-30T07:50:00Z", read: false, subject: "s", text: "t", entries: [], counts: [:])
            let delivery = Delivery(
                deliveryId: "d\(index)", digestId: "g\(index)", schoolId: "sa", teacherId: "t1", channel: .email,
                target: "t1@school.example",
                status: .pending, attempts: attempts, lastError: nil, createdAt: 900, nextAttemptAt: 900, sentAt: nil)
            return ClaimedDelivery(delivery: delivery, digest: digest, queuedAt: queuedAt, takenOver: false)
        }
    }

    /// What the batch had done, in order.
    private struct Play {
        enum Last: Equatable { case done, other }
        var secondsPerSend = 0.0
        var sent: [String] = []
        var records: [[(deliveryId: String, outcome: DeliveryOutcome)]] = []
        var givenBack: [String] = []
        var order: [String] = []
        var last = Last.other

        /// Plays the dispatcher's loop to `.done`; a stop comes once
        /// `stopsAfter` sends ended (the next send is cut short by it).
        mutating func run(
            _ batch: inout DeliveryBatch, from start: Double, leaseUntil: Double, stopsAfter: Int = .max,
            attempt: (Int) -> DeliveryAttempt
        ) {
            var now = start
            for _ in 0..<100 {
                let stopping = sent.count > stopsAfter
                switch batch.next(now: now, leaseUntil: leaseUntil, stopping: stopping) {
                case .send(let claim):
                    order.append("send")
                    sent.append(claim.delivery.deliveryId)
                    now += secondsPerSend
                    _ = batch.sent(attempt(sent.count - 1), now: now, stopping: sent.count > stopsAfter, random: 1)
                case .record(let outcomes):
                    order.append("record")
                    records.append(outcomes)
                case .giveBack(let ids):
                    order.append("giveBack")
                    givenBack += ids
                case .done:
                    last = .done
                    return
                }
            }
            XCTFail("the batch never ended")
        }
    }
}

extension DeliveryOutcome {
    fileprivate var kind: String {
        switch self {
        case .sent: "sent"
        case .retry: "retry"
        case .failed: "failed"
        }
    }
}
