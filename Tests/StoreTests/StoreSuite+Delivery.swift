import Dispatch
import Foundation
import Guidance
import Synchronization
import XCTest

@testable import Store

/// The outbox and the inbox, against either store.
extension StoreSuite {
    func outboxLeasesRetriesAndRequeues() throws {
        let store = try makeStore()
        _ = try store.apply([.registered(record("g1"))])
        let digests = try store.writeDigests(school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z") {
            simplePlan($0)
        } targets: { _ in
            [
                DeliveryTarget(channel: .email, target: "hr@school.example"),
                DeliveryTarget(channel: .webhook, target: "https://hooks.example/x")
            ]
        }
        let digest = try XCTUnwrap(digests.first)
        let created = try XCTUnwrap(Timestamp.parse(digest.createdAt))
        XCTAssertEqual(
            try store.deliveryBacklog(of: [.email, .webhook]).sorted { $0.channel.rawValue < $1.channel.rawValue },
            [
                DeliveryBacklog(channel: .email, pending: 1, oldestCreatedAt: created),
                DeliveryBacklog(channel: .webhook, pending: 1, oldestCreatedAt: created)
            ])
        let now = created + 1

        // One claim at a time: B finds nothing while A holds the lease.
        let claimed = try store.claimDeliveries(channel: .email, limit: 10, owner: "A", now: now, leaseUntil: now + 60)
        XCTAssertEqual(claimed.map(\.delivery.deliveryId), ["\(digest.digestId).email"])
        XCTAssertEqual(claimed.first?.digest, try store.inbox(teacher: "t-hr").first, "the digest as written, entries and all")
        XCTAssertEqual(claimed.first?.takenOver, false)
        XCTAssertEqual(try store.claimDeliveries(channel: .email, limit: 10, owner: "B", now: now, leaseUntil: now + 60).count, 0)

        // A retry is not due before its time, and its next claim is no takeover.
        try store.record([("\(digest.digestId).email", .retry(error: "451 try later", at: now + 30))], owner: "A", now: now)
        XCTAssertEqual(try store.claimDeliveries(channel: .email, limit: 10, owner: "B", now: now + 10, leaseUntil: now + 70).count, 0)
        let retried = try store.claimDeliveries(channel: .email, limit: 10, owner: "B", now: now + 31, leaseUntil: now + 91)
        XCTAssertEqual(retried.map(\.takenOver), [false])
        XCTAssertEqual(retried.first?.delivery.attempts, 1)
        XCTAssertEqual(retried.first?.delivery.lastError, "451 try later")

        // B never reports back: after its lease, A takes the delivery over.
        XCTAssertEqual(try store.claimDeliveries(channel: .email, limit: 10, owner: "A", now: now + 60, leaseUntil: now + 120).count, 0)
        let takenOver = try store.claimDeliveries(channel: .email, limit: 10, owner: "A", now: now + 92, leaseUntil: now + 152)
        XCTAssertEqual(takenOver.map(\.takenOver), [true])
        // B's late failure report changes nothing; A's success is recorded.
        try store.record([("\(digest.digestId).email", .failed(error: "late"))], owner: "B", now: now + 93)
        try store.record([("\(digest.digestId).email", .sent)], owner: "A", now: now + 94)
        let sent = try XCTUnwrap(try store.deliveries(school: "sa", status: .sent, limit: 10).first)
        XCTAssertEqual(sent.attempts, 2)
        XCTAssertEqual(sent.sentAt, now + 94)
        XCTAssertNil(sent.nextAttemptAt)
        XCTAssertEqual(try store.requeue(school: "sa", deliveryId: sent.deliveryId, now: now + 95), .notFailed(.sent))

        // A released claim is claimed again without counting as a takeover.
        XCTAssertEqual(try store.claimDeliveries(channel: .webhook, limit: 10, owner: "A", now: now, leaseUntil: now + 60).count, 1)
        try store.release(deliveryIds: ["\(digest.digestId).webhook"], owner: "A")
        let webhook = try store.claimDeliveries(channel: .webhook, limit: 10, owner: "B", now: now, leaseUntil: now + 60)
        XCTAssertEqual(webhook.map(\.takenOver), [false])

        // A failure stays until an admin queues it again.
        try store.record([("\(digest.digestId).webhook", .failed(error: "HTTP 410: gone"))], owner: "B", now: now + 1)
        XCTAssertEqual(try store.deliveries(school: "sa", status: .failed, limit: 10).map(\.lastError), ["HTTP 410: gone"])
        XCTAssertEqual(
            try store.claimDeliveries(channel: .webhook, limit: 10, owner: "B", now: now + 3600, leaseUntil: now + 3660).count, 0)
        XCTAssertEqual(
            try store.requeue(school: "sb", deliveryId: "\(digest.digestId).webhook", now: now + 2), .notFound, "another school's delivery")
        XCTAssertEqual(try store.requeue(school: "sa", deliveryId: "missing", now: now + 2), .notFound)
        XCTAssertEqual(try store.requeue(school: "sa", deliveryId: "\(digest.digestId).webhook", now: now + 2), .requeued)
        XCTAssertEqual(try store.claimDeliveries(channel: .webhook, limit: 10, owner: "B", now: now + 2, leaseUntil: now + 62).count, 1)
        XCTAssertEqual(try store.deliveryBacklog(of: [.email, .webhook]).map(\.channel), [.webhook])
    }

    /// Runs share a commit, not a fate: a run that fails (here, writing the
    /// same digest twice) is rolled back alone, and the other school's run
    /// in the same call is written.
    func aFailedRunInABatchLeavesTheOthersWritten() throws {
        let store = try makeStore()
        _ = try store.apply([.registered(record("g1")), .registered(record("g2", school: "sb"))])
        let email: @Sendable (Digest) -> [DeliveryTarget] = { _ in [DeliveryTarget(channel: .email, target: "hr@school.example")] }
        let results = try store.writeDigests([
            DeliveryRun(
                school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z",
                plan: { state in
                    let digests = self.simplePlan(state)
                    return digests + digests
                }, targets: email),
            DeliveryRun(
                school: "sb", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z",
                plan: { self.simplePlan($0, teacher: "t-hr-b", school: "sb") },
                targets: email)
        ])
        XCTAssertEqual(results.count, 2)
        XCTAssertThrowsError(try results[0].get())
        XCTAssertEqual(try results[1].get().map(\.teacherId), ["t-hr-b"])
        XCTAssertEqual(try store.inbox(teacher: "t-hr"), [])
        XCTAssertEqual(try store.deliveries(school: "sa", status: nil, limit: 10), [])
        XCTAssertFalse(try store.runCompleted(school: "sa", date: "2026-11-30"))
        XCTAssertEqual(try store.inbox(teacher: "t-hr-b").count, 1)
        XCTAssertEqual(try store.deliveries(school: "sb", status: .pending, limit: 10).map(\.digestId), ["d-t-hr-b-r1"])
        XCTAssertTrue(try store.runCompleted(school: "sb", date: "2026-11-30"))
    }

    func inboxReadState() throws {
        let store = try makeStore()
        _ = try store.apply([.registered(record("g1"))])
        let digest = try XCTUnwrap(
            try store.writeDigests(school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z") {
                simplePlan($0)
            } targets: { _ in
                []
            }.first)
        XCTAssertEqual(try store.inbox(teacher: "t-hr").filter { !$0.read }.count, 1)
        XCTAssertTrue(try store.markRead(teacher: "t-hr", digestId: digest.digestId))
        XCTAssertTrue(try store.markRead(teacher: "t-hr", digestId: digest.digestId), "marking twice is fine")
        XCTAssertFalse(try store.markRead(teacher: "someone-else", digestId: digest.digestId))
        XCTAssertFalse(try store.markRead(teacher: "t-hr", digestId: "missing"))
        XCTAssertEqual(try store.inbox(teacher: "t-hr").filter { !$0.read }.count, 0)
        XCTAssertEqual(try store.inbox(teacher: "t-hr").first?.read, true)
    }
}

extension StoreSuite {
    /// A teacher's devices: the same endpoint renews, another session's
    /// sign-out drops only its own, and the five renewed last are kept.
    func pushSubscriptionsAreBoundAndCapped() throws {
        let store = try makeStore()
        func device(_ n: Int, session: String = "s1", renewed: Int64) -> PushSubscription {
            PushSubscription(
                endpoint: "https://push.example/\(n)", schoolId: "sa", teacherId: "t-hr", p256dh: "k\(n)", auth: "a", sessionHash: session,
                sessionSeen: nil, renewedMs: renewed, createdAt: "2026-12-01T00:00:00Z")
        }
        for n in 1...7 { try store.savePushSubscription(device(n, renewed: Int64(n))) }
        XCTAssertEqual(
            try store.pushSubscriptions(school: "sa", teacher: "t-hr").map(\.endpoint), (3...7).map { "https://push.example/\($0)" },
            "the five renewed last")
        try store.savePushSubscription(device(3, session: "s2", renewed: 100))
        XCTAssertEqual(try store.pushSubscriptions(school: "sa", teacher: "t-hr").first { $0.endpoint.hasSuffix("/3") }?.sessionHash, "s2")
        XCTAssertEqual(try store.removePushSubscriptions(school: "sb", teacher: "t-hr", endpoint: "https://push.example/3"), 0)
        XCTAssertEqual(try store.removePushSubscriptions(school: "sa", teacher: "t-hr", endpoint: "https://push.example/3"), 1)
        XCTAssertEqual(try store.deliveryPreferences(schools: ["sa"]).pushing, ["t-hr"])
        XCTAssertEqual(try store.removePushSubscriptions(school: "sa", teacher: "t-hr"), 4)
        XCTAssertEqual(try store.deliveryPreferences(schools: ["sa"]).pushing, [])
    }
}
