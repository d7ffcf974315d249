import Common
import Crypto
import Foundation
import Guidance
import Kafka
import KafkaMock
import TestSupport
import XCTest

@testable import Sessions

/// A revocation wins over every grant and renewal that did not see it, on
/// replicas that read the session log each at its own pace: two replicas
/// over a mock cluster, one minting device codes and renewing a cookie for
/// as long as its view still signs the session in, the other revoking.
final class RevocationRaceTests: XCTestCase {
    private let secret = String(repeating: "r", count: 32)

    private func roster() throws -> Roster {
        try Roster.parse(
            schools: "school_id,name,timezone,digest_time\nsa,School A,Asia/Seoul,08:50\n",
            students: "school_id,student_id,grade,class,number,name,photo_url\n",
            teachers: "school_id,teacher_id,name,email,role,grade,class\n"
                + (1...20).map { "sa,g\($0),Kim,g\($0)@a.example,gate+admin,,\n" }.joined())
    }

    /// A replica: its own producer and its own reader of the session log.
    private struct Replica {
        let producer: Producer
        let sessions: Sessions
        let reading: Parts
    }

    private func replica(_ cluster: MockCluster, topic: String) async throws -> Replica {
        let kafka = KafkaConfig(bootstrapServers: cluster.bootstrapServers)
        let producer = try Producer(config: ProducerConfig(kafka: kafka, deliveryTimeout: .seconds(5)), logger: quietLogger("producer"))
        let log = SessionLog(
            topic: topic, kafka: kafka, producer: producer, lifetime: .seconds(86_400), clock: Timestamp.now,
            logger: quietLogger("sessions"))
        let reading = Parts([[log.part]], logger: quietLogger("parts"))
        try await reading.start()
        let read = await log.until(atMost: .seconds(20)) { log.caughtUp && log.isCurrent }
        XCTAssertTrue(read, "the session log was not read")
        return Replica(producer: producer, sessions: Sessions(secret: secret, days: 30, log: log), reading: reading)
    }

    private static func valid(_ sessions: Sessions, _ cookie: String, _ roster: Roster) -> Bool {
        if case .valid = sessions.check(cookie, name: "app_session", roster: roster) { return true }
        return false
    }

    /// 20 runs: replica A mints device codes (and a renewed cookie) for a
    /// session while its view says the session is signed in; replica B signs
    /// the teacher out everywhere meanwhile. Afterwards no code signs a
    /// device in and neither cookie is accepted, on either replica.
    func testARevocationEndsTheCodesAndRenewalsMintedByAReplicaThatHadNotReadIt() async throws {
        let cluster = try MockCluster(brokers: 1, logger: quietLogger("mock"))
        let topic = "sessions-\(UUID().uuidString.prefix(8))"
        try cluster.createTopic(topic, partitions: 1)
        let (a, b) = (try await replica(cluster, topic: topic), try await replica(cluster, topic: topic))
        let roster = try roster()
        var minted = 0
        var raced = 0
        for run in 1...20 {
            // Signed in on A an hour and a half ago: its next use renews it.
            let teacher = "g\(run)"
            let fresh = a.sessions.new(teacher: teacher, credential: "link")
            let session = Session(
                id: fresh.id, teacherID: teacher, renewedAt: fresh.renewedAt - 5_400_000, credential: "link", seen: fresh.seen)
            let cookie = a.sessions.cookieValue(session, name: "app_session")
            XCTAssertTrue(Self.valid(a.sessions, cookie, roster))

            // A: codes and a renewal for as long as A's view admits the cookie.
            let sessionsA = a.sessions
            let minting = Task { () -> (codes: [String], renewed: [String], last: ContinuousClock.Instant) in
                var codes: [String] = []
                var renewed: [String] = []
                var last = ContinuousClock.now
                while RevocationRaceTests.valid(sessionsA, cookie, roster), codes.count < 400 {
                    codes.append(try await sessionsA.issueCode(for: session))
                    if let renewal = sessionsA.renewal(of: session) { renewed.append(sessionsA.cookieValue(renewal, name: "app_session")) }
                    last = ContinuousClock.now
                }
                return (codes, renewed, last)
            }
            // A random moment of A's minting against the real (mock) broker: the race under test.
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...40)))
            _ = try await b.sessions.signOutEverywhere(teacher: teacher)
            let revoked = ContinuousClock.now
            let (codes, renewed, last) = try await minting.value
            if last > revoked { raced += 1 }
            minted += codes.count

            for code in codes {
                for replica in [a, b] {
                    let used = try await replica.sessions.useCode(code, roster: roster, waiting: true)
                    XCTAssertEqual(try? used.get(), nil, "run \(run): a code minted by the revoked session signed a device in")
                    if case .success = used { break }
                }
            }
            for value in renewed + [cookie] {
                XCTAssertFalse(
                    Self.valid(a.sessions, value, roster), "run \(run): a cookie of the revoked session (renewed or not) is accepted on A")
                XCTAssertFalse(Self.valid(b.sessions, value, roster), "run \(run): ... on B")
            }
        }
        // The race was run, not missed: A minted after B's revocation returned.
        XCTAssertGreaterThan(raced, 0, "no run minted a code after the revocation was published (\(minted) codes)")
        await a.reading.stop()
        await b.reading.stop()
        a.producer.close()
        b.producer.close()
    }

    /// A device code dies with the session that made it (signed out by its
    /// 로그아웃), and a session kept by 다른 기기 모두 로그아웃 goes on.
    func testADeviceCodeEndsWithTheSessionThatMadeIt() async throws {
        let sessions = Sessions(secret: secret, days: 30, log: .local(clock: Timestamp.now))
        let roster = try roster()
        let phone = sessions.new(teacher: "g1", credential: "link")
        let code = try await sessions.issueCode(for: phone)
        try await sessions.end(phone)
        let used = try await sessions.useCode(code, roster: roster)
        XCTAssertEqual(used.map(\.teacherID), .failure(.revoked), "a code shown by a session that signed out")

        let desk = sessions.new(teacher: "g1", credential: "link")
        let keeping = try await sessions.signOutEverywhere(teacher: "g1", keeping: desk)
        let kept = try XCTUnwrap(keeping)
        XCTAssertTrue(Self.valid(sessions, sessions.cookieValue(kept, name: "app_session"), roster), "the session kept")
        XCTAssertFalse(Self.valid(sessions, sessions.cookieValue(desk, name: "app_session"), roster), "its cookie from before the cut")
        let later = try await sessions.issueCode(for: kept)
        let pairedLater = try await sessions.useCode(later, roster: roster)
        XCTAssertEqual(pairedLater.map(\.teacherID), .success("g1"), "a code made by the kept session")
    }

    /// A device code used at the same moment as the 로그아웃 of the session
    /// that showed it: the log's order decides. The use is checked, then
    /// published; a 로그아웃 published in between comes first in the log,
    /// and the use then signs nobody in. A use first in the log stands.
    func testACodeVoidedBeforeItsUseInTheLogSignsNobodyIn() {
        func state(_ records: [SessionLog.Record]) -> SessionLog.State {
            var state = SessionLog.State()
            for (offset, record) in records.enumerated() { state.apply(record, offset: Int64(offset)) }
            return state
        }
        let code = SessionLog.Record.code(code: "h", teacher: "g1", credential: "link", until: .max, at: 1, session: "phone", seen: nil)
        let use = SessionLog.Record.used(grant: "code/h", session: "tablet", at: 3)
        let logoutFirst = state([code, .ended(session: "phone", at: 2), use])
        XCTAssertNotEqual(logoutFirst.used["code/h"]?.session, "tablet", "the 로그아웃 came first: the use signs nobody in")
        let everywhereFirst = state([code, .signedOut(teacher: "g1", at: 2), use])
        XCTAssertNotEqual(everywhereFirst.used["code/h"]?.session, "tablet", "signed out everywhere first")
        let useFirst = state([code, use, .ended(session: "phone", at: 4)])
        XCTAssertEqual(useFirst.used["code/h"]?.session, "tablet", "the use came first: it stands")
    }
}
