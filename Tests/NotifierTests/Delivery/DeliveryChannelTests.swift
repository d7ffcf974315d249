import Common
import Foundation
import Guidance
import Store
import Synchronization
import TestSupport
import XCTest

@testable import Notifier

/// A channel that exists in the tests only: it "sends" by remembering, and
/// asks once for every delivery to be tried again. Adding it took this type
/// and the list the dispatcher is given, nothing in the dispatcher.
final class NoteChannel: DeliveryChannel {
    let id = Channel(rawValue: "note")
    let summary = "notes kept in memory"
    let connections = 2
    let timeout: Duration = .seconds(5)
    /// Notes are for the school's board, not a teacher's phone: never held.
    let followsTeacherHours = false
    /// Each attempt: the delivery's id and the connection it went over.
    let attempts = Mutex<[(deliveryId: String, connection: Int)]>([])
    /// Sends under way per connection, to catch two at once on one.
    private let busy = Mutex<[Int: Int]>([:])
    let overlapped = Atomic<Bool>(false)

    /// Only homeroom teachers get notes; everyone else is left out.
    func target(of digest: Digest, in roster: Roster, preferences: DeliveryPreferences) -> String? {
        roster.teachers[digest.teacherId]?.has(.homeroom) == true ? "note:\(digest.teacherId)" : nil
    }

    func send(_ claim: ClaimedDelivery, roster: Roster, over connection: Int, now: Double) -> DeliveryAttempt {
        if busy.withLock({ busy in
            busy[connection, default: 0] += 1
            return busy[connection]! > 1
        }) {
            overlapped.store(true, ordering: .relaxed)
        }
        defer { busy.withLock { $0[connection, default: 0] -= 1 } }
        let first = attempts.withLock { attempts in
            attempts.append((claim.delivery.deliveryId, connection))
            return attempts.filter { $0.deliveryId == claim.delivery.deliveryId }.count == 1
        }
        // A send that takes time on the wire: two sends on one connection at once would overlap.
        Thread.sleep(forTimeInterval: 0.02)
        return first ? .retriable("busy", retryAfter: 1) : .sent
    }
}

final class DeliveryChannelTests: XCTestCase {
    private static let roster: Roster = {
        let schools = "school_id,name,timezone,digest_time\nsa,한빛고,Asia/Seoul,08:50\n"
        let students = "school_id,student_id,grade,class,number,name,photo_url\nsa,s111,1,1,1,김민지,\n"
        let teachers =
            "school_id,teacher_id,name,email,role,grade,class\n"
            + "sa,hr11,담임11,,homeroom,1,1\nsa,hr12,담임12,,homeroom,1,2\nsa,hr13,담임13,,homeroom,1,3\nsa,vd1,봉사1,,volunteer_duty,1,\n"
        return try! Roster.parse(schools: schools, students: students, teachers: teachers)
    }()

    private static func digest(_ teacher: String) -> Digest {
        let recipient = Recipient(
            teacherId: teacher, scope: teacher == "vd1" ? .grade : .class, grade: 1, classNumber: teacher == "vd1" ? nil : 1)
        return Digest(
            digestId: Digest.id(school: "sa", date: "2026-11-30", recipient: recipient, revision: 1), teacherId: teacher, schoolId: "sa",
            date: "2026-11-30", scope: recipient.scope, grade: 1, classNumber: recipient.classNumber, revision: 1,
            createdAt: Timestamp.format(Timestamp.now()),
            read: false, subject: "s", text: "t", entries: [], counts: [:])
    }

    func testAChannelAddedOutsideTheDispatcherGetsItsTargetsRetriesAndOutcomes() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("channel-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try SQLStore.sqlite(path: folder + "/notifier.db", clock: Timestamp.now)
        var config = DeliveryConfig()
        config.pollInterval = .milliseconds(100)
        let note = NoteChannel()
        let dispatcher = Dispatcher(
            config: config, channels: [note], roster: LiveRoster(Self.roster), store: store, metrics: Metrics(),
            logger: quietLogger("dispatcher"), clock: Timestamp.now, timer: ContinuousClock())

        let digests = try store.writeDigests(
            school: "sa", date: "2026-11-30", completedAt: "2026-11-29T23:50:00Z",
            plan: { _ in
                ["hr11", "hr12", "hr13", "vd1"].map(Self.digest)
            }, targets: { dispatcher.targets(for: $0, roster: Self.roster, preferences: DeliveryPreferences(), now: 0) })
        XCTAssertEqual(digests.count, 4)
        let queued = try store.deliveries(school: "sa", status: nil, limit: 10)
        XCTAssertEqual(
            Set(queued.map(\.deliveryId)), Set(["hr11", "hr12", "hr13"].map { "\(Self.digest($0).digestId).note" }),
            "the volunteer teacher has no note")
        XCTAssertEqual(Set(queued.map(\.target)), ["note:hr11", "note:hr12", "note:hr13"])

        let sending = Parts([[dispatcher.part(stoppingWithin: .seconds(5))]], logger: quietLogger("parts"))
        try await sending.start()
        let sent = try await eventually(within: .seconds(15)) {
            try store.deliveries(school: "sa", status: .sent, limit: 10)
        } until: {
            $0.count >= 3
        }
        await sending.stop()

        XCTAssertEqual(sent.count, 3, "every note sent after one retry")
        XCTAssertEqual(Set(sent.map(\.attempts)), [2], "one retriable answer, then sent")
        XCTAssertEqual(Set(sent.map(\.channel)), [note.id])
        let attempts = note.attempts.withLock { $0 }
        XCTAssertEqual(attempts.count, 6, "each delivery tried exactly twice: \(attempts)")
        XCTAssertTrue(attempts.allSatisfy { (0..<note.connections).contains($0.connection) }, "a connection the channel does not have")
        XCTAssertFalse(note.overlapped.load(ordering: .relaxed), "two sends at once over one connection")
    }
}
