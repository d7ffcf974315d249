import Foundation
import Guidance
import Kafka
import Notifier
import TestSupport
import XCTest

/// Ingest and the notifier reload the roster at different moments. An event
/// ingest acknowledged under its newer roster is applied all the same: a
/// student who moved class keeps the seat the event recorded, and a student
/// the notifier does not list yet is held until its roster reloads. On
/// today's `main` both were dead-lettered (`no student at grade 1, class 2,
/// number 3`).
final class RosterSkewTests: XCTestCase {
    func testEventsAcceptedUnderIngestsNewerRosterAreAllApplied() async throws {
        let harness = try await NotifierHarness(rosterFolders: true, rosterGrace: .seconds(60))
        let notifier = try XCTUnwrap(harness.notifier)

        // a112 moves from 1-1-2 to 1-2-3; ingest reloads first.
        let moved = NotifierHarness.students.replacingOccurrences(of: "sa,a112,1,1,2,가나,", with: "sa,a112,1,2,3,가나,")
        try harness.writeRoster(for: "ingest", students: moved)
        XCTAssertTrue(harness.ingest.roster.reload(because: "test: a student moved"))
        let movedID = try await harness.register(grade: 1, classNumber: 2, number: 3)

        // a113 joins 1-1-3 in ingest's roster 10 s before the notifier's.
        let added = moved + "sa,a113,1,1,3,가다,\n"
        try harness.writeRoster(for: "ingest", students: added)
        XCTAssertTrue(harness.ingest.roster.reload(because: "test: a student joined"))
        let addedAt = ContinuousClock.now
        let (addedID, addedPartition) = try await register(harness, grade: 1, classNumber: 1, number: 3)

        // Meanwhile other partitions go on.
        var others: Set<String> = []
        var otherOnAnotherPartition: String?
        var behindTheHeld = 0
        for (grade, number) in [(2, 1), (3, 1)] {
            let (id, partition) = try await register(harness, grade: grade, classNumber: 1, number: number)
            others.insert(id)
            if partition != addedPartition { otherOnAnotherPartition = id } else { behindTheHeld += 1 }
        }
        if let otherOnAnotherPartition {
            let listed = try await harness.waitForList(count: 2)
            XCTAssertTrue(listed.contains(otherOnAnotherPartition), "a partition without held events waited: \(listed)")
        } else {
            print("RosterSkewTests: grades 1, 2 and 3 share a partition; the other-partition check is skipped this run")
        }
        try await Task.sleep(until: addedAt + .seconds(10))
        let held = Set(try await harness.waitForList(count: others.count + 2 - behindTheHeld))
        XCTAssertTrue(held.contains(movedID), "the moved student's event, ahead of the held one, is applied: \(held)")
        XCTAssertFalse(held.contains(addedID), "applied before the notifier's roster listed the student")
        let metrics = try await fetch("GET", harness.notifierBase + "/metrics").text
        XCTAssertTrue(metrics.contains("notifier_events_held \(1 + behindTheHeld)\n"), "the held event and those behind it are counted:\n\(metrics)")

        try harness.writeRoster(for: "notifier", students: added)
        XCTAssertTrue(notifier.roster.reload(because: "test: the notifier catches up"))
        let expected = others.union([movedID, addedID])
        try await assertEqualAsync(await harness.waitForList(equalTo: expected), expected)
        XCTAssertEqual(notifier.metrics.value("notifier_dead_letters_total"), 0, "an acknowledged event was dead-lettered")

        let list = try await harness.list(query: "&grade=1&classNumber=2")
        guard case .array(let items) = list.object["items"] else { return XCTFail(list.text) }
        let seat = items.first { $0["guidanceId"]?.string == movedID }?["student"]
        XCTAssertEqual(seat?["number"]?.int, 3, "listed in the seat the event recorded: \(list.text)")
        await harness.shutdown()
    }

    /// a211 moves from grade 2 to grade 3 in ingest's roster first. A 봉사
    /// record for grade 3, acknowledged, is held by the notifier (on `main`
    /// it was dead-lettered at once); past the hold it is dead-lettered, and
    /// replayed once the rosters agree it is in the 봉사 명단.
    func testAServiceRecordForAStudentWhoChangedGradeIsHeldAndRecoveredByReplay() async throws {
        let harness = try await NotifierHarness(rosterFolders: true, rosterGrace: .seconds(3))
        let notifier = try XCTUnwrap(harness.notifier)
        let moved = NotifierHarness.students.replacingOccurrences(of: "sa,a211,2,1,1,다가,", with: "sa,a211,3,1,2,다가,")
        try harness.writeRoster(for: "ingest", students: moved)
        XCTAssertTrue(harness.ingest.roster.reload(because: "test: a student changed grade"))
        let serviceID = UUID().uuidString.lowercased()
        let body = #"{"serviceId":"\#(serviceID)","date":"2026-11-21","sessions":1,"recordedBy":"t-vd-3"}"#
        let reply = try await fetch("POST", "\(harness.ingestBase)/v1/schools/sa/grades/3/students/a211/service", body: body, headers: harness.headers(nil))
        XCTAssertEqual(reply.status, 202, reply.text)

        func until(_ what: String, within limit: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws {
            let deadline = ContinuousClock.now + limit
            while try await !condition() {
                guard ContinuousClock.now < deadline else { return XCTFail("never: \(what)") }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        try await until("the record held for the roster") {
            try await fetch("GET", harness.notifierBase + "/metrics").text.contains("notifier_events_held 1\n")
        }
        XCTAssertEqual(notifier.metrics.value("notifier_dead_letters_total"), 0, "dead-lettered without a hold")
        try await until("the record dead-lettered past the hold") { notifier.metrics.value("notifier_dead_letters_total") == 1 }

        try harness.writeRoster(for: "notifier", students: moved)
        XCTAssertTrue(notifier.roster.reload(because: "test: the notifier catches up"))
        let replay = DeadLetterReplay(kafka: KafkaConfig(bootstrapServers: harness.cluster.bootstrapServers), topics: harness.topics, logger: quietLogger("replay"))
        let replayed = try await replay.run(DeadLetterReplay.Selection(reasonContains: "grade"), dryRun: false)
        XCTAssertEqual(replayed.count, 1, "\(replayed)")
        try await until("the replayed record in grade 3's 봉사 명단") {
            let list = try await fetch("GET", "\(harness.notifierBase)/v1/schools/sa/service?grade=3", headers: harness.headers(nil))
            return list.text.contains(serviceID)
        }
        XCTAssertEqual(notifier.metrics.value("notifier_dead_letters_total"), 1, "the replay was dead-lettered again")
        await harness.shutdown()
    }

    /// Registers through ingest; the guidance id and the partition it went to.
    private func register(_ harness: NotifierHarness, grade: Int, classNumber: Int, number: Int) async throws -> (String, Int) {
        let body = #"{"student":{"grade":\#(grade),"classNumber":\#(classNumber),"number":\#(number)},"reason":{"code":"noShoes"},"#
            + #""recordedBy":"t-gate","occurredAt":"2026-11-20T23:30:00Z"}"#
        let reply = try await fetch("POST", "\(harness.ingestBase)/v1/schools/sa/guidances", body: body, headers: harness.headers(nil))
        XCTAssertEqual(reply.status, 202, reply.text)
        return (reply.object["guidanceId"]?.string ?? "", reply.object["partition"]?.int ?? -1)
    }
}
