import Crypto
import Foundation
import Guidance
import HTTP
import Ingest
import Kafka
import KafkaMock
import TestSupport
import XCTest

/// guidance-ingest over real HTTP on a random port, with a fresh mock cluster
/// and topics of its own behind it.
final class IngestServiceTests: XCTestCase {
    var cluster: MockCluster!
    var service: IngestService!
    var topics = Topics()
    var base = ""

    static let schools = "school_id,name,timezone,digest_time\nsa,School A,Asia/Seoul,08:50\nsb,School B,America/Los_Angeles,07:30\n"
    static let students = """
        school_id,student_id,grade,class,number,name,photo_url
        sa,s10312,1,3,12,김민지,https://photos.example/sa/s10312.jpg
        sa,s20101,2,1,1,이서준,
        sb,b10101,1,1,1,Ana,

        """
    static let teachers = """
        school_id,teacher_id,name,email,role,grade,class
        sa,t-gate-01,Gate A,,gate,,
        sa,t-hr-1-03,Homeroom A,,homeroom,1,3
        sb,t-gate-b,Gate B,,gate,,
        sa,t-admin-a,Admin A,,admin,,

        """
    static let tokens = """
        token_sha256,teacher_id
        \(SHA256.hex(SHA256.hash(Array("gate-a".utf8)))),t-gate-01
        \(SHA256.hex(SHA256.hash(Array("homeroom-a".utf8)))),t-hr-1-03
        \(SHA256.hex(SHA256.hash(Array("gate-b".utf8)))),t-gate-b
        \(SHA256.hex(SHA256.hash(Array("admin-a".utf8)))),t-admin-a

        """

    /// With `folder`, the roster is read from that folder (photos and all), as in production.
    func startService(
        authentication: Bool = false, deliveryTimeout: Duration = .seconds(2), folder: URL? = nil, clock: (@Sendable () -> Double)? = nil
    ) async throws {
        cluster = try MockCluster(brokers: 3, logger: quietLogger("mock"))
        topics = Topics(prefix: "t\(UUID().uuidString.prefix(6)).")
        for topic in topics.all { try cluster.createTopic(topic, partitions: 4) }
        // The session log's topic: the mock cluster does not create topics on request.
        try cluster.createTopic("guidance.sessions", partitions: 1)
        try cluster.createTopic(topics.roster, partitions: 1)
        try cluster.createTopic(topics.photos, partitions: 1)
        let roster = try Roster.parse(
            schools: Self.schools, students: Self.students, teachers: Self.teachers,
            tokens: authentication ? Self.tokens : nil)
        var config = IngestConfig(
            http: HTTPServerConfig(host: "127.0.0.1", port: 0),
            rosterDirectory: folder?.path ?? "(in memory)",
            producer: ProducerConfig(kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers), deliveryTimeout: deliveryTimeout),
            topics: topics, partitions: 4)
        config.drainPeriod = .seconds(3)
        config.web.authentication = .optional
        if let clock { config.clock = clock }
        service = try IngestService(config: config, roster: folder == nil ? roster : nil, logger: quietLogger("ingest"))
        try await service.start()
        base = "http://127.0.0.1:\(service.port)"
        // Ready once it has read the session log (about 150 ms), as a load balancer would wait.
        let base = self.base
        _ = try await eventually { try await fetch("GET", "\(base)/readyz").status == 200 }
    }

    override func tearDown() async throws {
        await service?.shutdown()
        service = nil
        cluster = nil
    }

    func register(_ body: String, school: String = "sa", token: String? = nil) async throws -> Reply {
        var headers = ["Content-Type": "application/json"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return try await fetch("POST", "\(base)/v1/schools/\(school)/guidances", body: body, headers: headers)
    }

    /// An hour ago, written as a Seoul wall-clock time, and the same instant in UTC.
    static let occurredAt: (seoul: String, utc: String) = {
        let instant = (Timestamp.now() - 3600).rounded(.down)
        return (Timestamp.format(instant + 9 * 3600).replacingOccurrences(of: "Z", with: "+09:00"), Timestamp.format(instant))
    }()

    static let validBody =
        #"{"student":{"grade":1,"classNumber":3,"number":12},"reason":{"code":"others","detail":"spat gum on the road"},"recordedBy":"t-gate-01","occurredAt":"\#(occurredAt.seoul)"}"#

    /// Every message on `topic`, read by a fresh consumer group.
    func messages(on topic: String, expecting count: Int) throws -> [ConsumedMessage] {
        let consumer = try Consumer(
            config: consumerConfig(cluster, group: "check-\(UUID())", topics: [topic]), logger: quietLogger("check"))
        defer { consumer.close() }
        return consumeAll(consumer, count: count)
    }

    /// Messages ever written to `topics`, from the high watermarks.
    func messageCount(_ names: [String]) throws -> Int64 {
        let offsets = try OffsetsReader(
            kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers), groupID: "count", logger: quietLogger("count"))
        return try offsets.endOffsets(of: names).values.reduce(0, +)
    }

    func expectStatus(
        _ expected: Int, _ reply: @autoclosure () async throws -> Reply, _ message: String = "", file: StaticString = #filePath,
        line: UInt = #line
    ) async throws {
        let received = try await reply()
        XCTAssertEqual(received.status, expected, "\(message) \(received.text)", file: file, line: line)
    }

    func testRegistrationIsAcceptedOnlyOnceStoredWithTheDocumentedEvent() async throws {
        try await startService()
        let guidanceID = "6f1c2a3e-8b7d-4c1e-9f00-1234567890ab"
        let body = Self.validBody.replacingOccurrences(of: #"{"student""#, with: #"{"guidanceId":"\#(guidanceID)","student""#)
        let reply = try await register(body, token: nil)
        XCTAssertEqual(reply.status, 202, reply.text)
        XCTAssertEqual(reply.object["guidanceId"]?.string, guidanceID)
        XCTAssertEqual(reply.object["topic"]?.string, topics.registered)
        XCTAssertNotNil(reply.object["partition"]?.int)
        XCTAssertNotNil(reply.object["offset"]?.int)
        XCTAssertFalse((reply.header("X-Request-Id") ?? "").isEmpty)

        let stored = try messages(on: topics.registered, expecting: 1)
        XCTAssertEqual(stored.count, 1)
        let message = try XCTUnwrap(stored.first)
        XCTAssertEqual(message.keyString, "sa/1")
        XCTAssertEqual(message.partition, Int32(reply.object["partition"]?.int ?? -1))
        XCTAssertEqual(message.offset, Int64(reply.object["offset"]?.int ?? -1))
        XCTAssertEqual(message.header("event-type"), "guidance.registered")
        XCTAssertEqual(message.header("schema-version"), "1")
        XCTAssertEqual(message.header("content-type"), "application/json")
        let event = try JSONDecoder().decode(GuidanceRegistered.self, from: Data(message.value ?? []))
        XCTAssertEqual(event.schemaVersion, 1)
        XCTAssertEqual(event.type, .registered)
        XCTAssertEqual(event.guidanceId, guidanceID)
        XCTAssertEqual(event.eventId, reply.object["eventId"]?.string)
        XCTAssertEqual(event.schoolId, "sa")
        XCTAssertEqual(event.student, StudentRef(studentId: "s10312", grade: 1, classNumber: 3, number: 12, name: "김민지"))
        XCTAssertEqual(event.reason, ReasonRef(code: "others", label: "기타", detail: "spat gum on the road"))
        XCTAssertEqual(event.recordedBy, "t-gate-01")
        XCTAssertEqual(event.occurredAt, Self.occurredAt.utc)
        XCTAssertNotNil(Timestamp.parse(event.recordedAt))

        // A retry with the same guidanceId is accepted with the same id.
        let retry = try await register(body)
        XCTAssertEqual(retry.status, 202)
        XCTAssertEqual(retry.object["guidanceId"]?.string, guidanceID)
    }

    /// The ingest's "now" is its configuration's clock: a registration
    /// without `occurredAt` is stamped by it, and one an hour before it is
    /// accepted though that hour is months ahead of the machine's own time
    /// (a school's March morning, run in December).
    func testEventsTimesAndTheWindowFollowTheServicesClock() async throws {
        let march = try XCTUnwrap(Timestamp.parse("2027-03-02T07:50:00+09:00"))
        try await startService(clock: { march })
        let stamped = try await register(
            #"{"student":{"grade":1,"classNumber":3,"number":12},"reason":{"code":"others","detail":"gum"},"recordedBy":"t-gate-01"}"#)
        XCTAssertEqual(stamped.status, 202, stamped.text)
        let hourBefore = Timestamp.format(march - 3600)
        let earlier = try await register(Self.validBody.replacingOccurrences(of: Self.occurredAt.seoul, with: hourBefore))
        XCTAssertEqual(earlier.status, 202, earlier.text)
        let events = try messages(on: topics.registered, expecting: 2).map {
            try JSONDecoder().decode(GuidanceRegistered.self, from: Data($0.value ?? []))
        }
        XCTAssertEqual(Set(events.map(\.occurredAt)), [Timestamp.format(march), hourBefore])
        XCTAssertEqual(Set(events.map(\.recordedAt)), [Timestamp.format(march)])
    }

    func testDeletionIsAcceptedAndReadableFromTheDeletedTopic() async throws {
        try await startService()
        let guidanceID = "0d5e8a52-3f51-4c0b-a7a1-1f2e3d4c5b6a"
        let reply = try await fetch("DELETE", "\(base)/v1/schools/sa/grades/2/guidances/\(guidanceID)?deletedBy=t-gate-01")
        XCTAssertEqual(reply.status, 202, reply.text)
        XCTAssertEqual(reply.object["topic"]?.string, topics.deleted)
        let message = try XCTUnwrap(try messages(on: topics.deleted, expecting: 1).first)
        XCTAssertEqual(message.keyString, "sa/2")
        XCTAssertEqual(message.header("event-type"), "guidance.deleted")
        let event = try JSONDecoder().decode(GuidanceDeleted.self, from: Data(message.value ?? []))
        XCTAssertEqual(event.type, .deleted)
        XCTAssertEqual(event.guidanceId, guidanceID)
        XCTAssertEqual(event.grade, 2)
        XCTAssertEqual(event.schoolId, "sa")
        XCTAssertEqual(event.deletedBy, "t-gate-01")
        XCTAssertEqual(event.eventId, reply.object["eventId"]?.string)
    }

    func testStudentLookup() async throws {
        try await startService()
        let found = try await fetch("GET", "\(base)/v1/schools/sa/students/1/3/12")
        XCTAssertEqual(found.status, 200)
        XCTAssertEqual(found.object["name"]?.string, "김민지")
        XCTAssertEqual(found.object["studentId"]?.string, "s10312")
        XCTAssertEqual(found.object["photoUrl"]?.string, "https://photos.example/sa/s10312.jpg")
        XCTAssertEqual(found.object["classNumber"]?.int, 3)
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/sa/students/1/3/13"))
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/nowhere/students/1/3/12"))
        try await expectStatus(400, await fetch("GET", "\(base)/v1/schools/sa/students/one/3/12"))
    }

    /// A roster folder of this test's schools, teachers and tokens, its
    /// students and `students` besides, and an empty `photos/sa`.
    static func rosterFolder(students: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roster-\(UUID())")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("photos/sa"), withIntermediateDirectories: true)
        for (name, text) in [
            ("schools.csv", Self.schools), ("students.csv", Self.students + students), ("teachers.csv", Self.teachers),
            ("tokens.csv", Self.tokens)
        ] {
            try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return folder
    }

    /// Photos come from ROSTER_DIR/photos behind sign-in, only to those who
    /// may see the student, never stored by a shared cache.
    func testStudentPhotosAreServedFromTheRosterFolderToSignedInTeachers() async throws {
        let folder = try Self.rosterFolder(students: "sa,s10313,1,3,13,박서연,\nsa,s10314,1,3,14,이하준,\nsa,s10315,1,3,15,최유나,\n")
        defer { try? FileManager.default.removeItem(at: folder) }
        let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]
        try Data(png).write(to: folder.appendingPathComponent("photos/sa/s10313.png"))
        // A school's photo as schools have them: large; the gate gets a small JPEG made from it.
        let large = PNG.noisy(width: 600, height: 800)  // 1.4 MB: its writer does not compress
        try Data(large).write(to: folder.appendingPathComponent("photos/sa/s10315.png"))
        // A link in the folder to another readable file is no photo.
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("photos/sa/s10314.png").path,
            withDestinationPath: folder.appendingPathComponent("tokens.csv").path)
        try await startService(authentication: true, folder: folder)
        let gate = ["Authorization": "Bearer gate-a"]

        // The look-ups point at this service's photo when the folder has one, else at photo_url, else nothing.
        let local = try await fetch("GET", "\(base)/v1/schools/sa/students/1/3/13", headers: gate)
        XCTAssertEqual(local.object["photoUrl"]?.string, "/v1/schools/sa/students/s10313/photo")
        let remote = try await fetch("GET", "\(base)/v1/schools/sa/students/1/3/12", headers: gate)
        XCTAssertEqual(remote.object["photoUrl"]?.string, "https://photos.example/sa/s10312.jpg")
        let none = try await fetch("GET", "\(base)/v1/schools/sa/students/2/1/1", headers: gate)
        XCTAssertEqual(none.object["photoUrl"], .null)
        let classList = try await fetch("GET", "\(base)/v1/schools/sa/grades/1/classes/3/students", headers: gate)
        XCTAssertEqual(classList.status, 200, classList.text)
        guard case .array(let entries)? = classList.object["students"] else { return XCTFail(classList.text) }
        XCTAssertEqual(entries.compactMap { $0["number"]?.int }, [12, 13, 14, 15], "in number order")
        XCTAssertEqual(entries[1]["photoUrl"]?.string, "/v1/schools/sa/students/s10313/photo")
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/sa/grades/1/classes/9/students", headers: gate))

        let url = "\(base)/v1/schools/sa/students/s10313/photo"
        let photo = try await fetch("GET", url, headers: gate)
        XCTAssertEqual(photo.status, 200)
        XCTAssertEqual(Array(photo.body), png, "what libvips cannot read is served as it is")
        XCTAssertEqual(photo.header("Content-Type"), "image/png")
        let small = try await fetch("GET", "\(base)/v1/schools/sa/students/s10315/photo", headers: gate)
        XCTAssertEqual(small.header("Content-Type"), "image/jpeg")
        XCTAssertEqual(jpegSize(Array(small.body)).map { [$0.width, $0.height] }, [300, 400], "the face check's size")
        XCTAssertLessThan(small.body.count, large.count / 20)
        let smallTag = try XCTUnwrap(small.header("ETag"))
        try await expectStatus(
            304,
            await fetch("GET", "\(base)/v1/schools/sa/students/s10315/photo", headers: gate.merging(["If-None-Match": smallTag]) { $1 }))
        // A new photo in the folder is a new image and a new ETag.
        try Data(PNG.noisy(width: 800, height: 600)).write(to: folder.appendingPathComponent("photos/sa/s10315.png"))
        let replaced = try await fetch(
            "GET", "\(base)/v1/schools/sa/students/s10315/photo", headers: gate.merging(["If-None-Match": smallTag]) { $1 })
        XCTAssertEqual(replaced.status, 200)
        XCTAssertNotEqual(replaced.header("ETag"), smallTag)
        XCTAssertEqual(jpegSize(Array(replaced.body)).map { [$0.width, $0.height] }, [300, 225])
        XCTAssertEqual(photo.header("Cache-Control"), "private, no-cache")
        let etag = try XCTUnwrap(photo.header("ETag"))
        try await expectStatus(304, await fetch("GET", url, headers: gate.merging(["If-None-Match": etag]) { $1 }))
        try await expectStatus(401, await fetch("GET", url))
        try await expectStatus(403, await fetch("GET", url, headers: ["Authorization": "Bearer gate-b"]), "another school")
        try await expectStatus(
            403, await fetch("GET", "\(base)/v1/schools/sb/students/b10101/photo", headers: gate), "another school's student")
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/sa/students/s20101/photo", headers: gate), "no photo")
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/sa/students/nobody/photo", headers: gate))
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/sa/students/s10314/photo", headers: gate), "a symbolic link")
        let linked = try await fetch("GET", "\(base)/v1/schools/sa/students/1/3/14", headers: gate)
        XCTAssertEqual(linked.object["photoUrl"], .null, "a link is not offered as a photo")
        // An escaped slash becomes a path of another shape: no file is ever named by it.
        try await expectStatus(400, await fetch("GET", "\(base)/v1/schools/sa/students/..%2Fschools.csv/photo", headers: gate))
    }

    /// A student id is unique within its school only: a district's second
    /// school has its own `s10313`, another child. Each school's teachers
    /// see their own school's photo of that id, or none; a file left
    /// directly in `photos/` (the flat layout) is nobody's.
    func testTwoSchoolsWithTheSameStudentIdSeeEachTheirOwnPhoto() async throws {
        let folder = try Self.rosterFolder(students: "sa,s10313,1,3,13,박서연,\nsb,s10313,1,3,13,Bea,\nsb,s10314,1,3,14,Cal,\n")
        defer { try? FileManager.default.removeItem(at: folder) }
        let schoolA: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xa]
        try Data(schoolA).write(to: folder.appendingPathComponent("photos/sa/s10313.png"))
        try Data([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xf]).write(to: folder.appendingPathComponent("photos/s10314.png"))
        try await startService(authentication: true, folder: folder)
        let (gateA, gateB) = (["Authorization": "Bearer gate-a"], ["Authorization": "Bearer gate-b"])

        let own = try await fetch("GET", "\(base)/v1/schools/sa/students/s10313/photo", headers: gateA)
        XCTAssertEqual(Array(own.body), schoolA)
        // School B's s10313 has no photo: not school A's child's.
        let other = try await fetch("GET", "\(base)/v1/schools/sb/students/1/3/13", headers: gateB)
        XCTAssertEqual(other.object["name"]?.string, "Bea")
        XCTAssertEqual(other.object["photoUrl"], .null)
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/sb/students/s10313/photo", headers: gateB))
        // A flat file names no school: served to neither.
        try await expectStatus(404, await fetch("GET", "\(base)/v1/schools/sb/students/s10314/photo", headers: gateB))

        // School B's own photo of its s10313 is what school B sees; school A's is unchanged.
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("photos/sb"), withIntermediateDirectories: true)
        let schoolB: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xb]
        try Data(schoolB).write(to: folder.appendingPathComponent("photos/sb/s10313.png"))
        try await assertEqualAsync(
            Array(await fetch("GET", "\(base)/v1/schools/sb/students/s10313/photo", headers: gateB).body), schoolB)
        try await assertEqualAsync(
            Array(await fetch("GET", "\(base)/v1/schools/sa/students/s10313/photo", headers: gateA).body), schoolA)
    }

    func testEveryClientErrorIsProblemJSONNamingTheFieldAndProducesNothing() async throws {
        try await startService()
        let json = ["Content-Type": "application/json"]
        let valid = Self.validBody
        func replacing(_ old: String, _ new: String) -> String { valid.replacingOccurrences(of: old, with: new) }
        let future = Timestamp.format(Timestamp.now() + 3600)
        let cases: [(name: String, method: String, path: String, body: String?, headers: [String: String], status: Int, field: String?)] = [
            ("malformed JSON", "POST", "/v1/schools/sa/guidances", #"{"student": {"grade": 1,"#, json, 400, nil),
            (
                "missing student", "POST", "/v1/schools/sa/guidances", #"{"reason":{"code":"noShoes"},"recordedBy":"t-gate-01"}"#, json,
                400, "student"
            ),
            ("wrong type", "POST", "/v1/schools/sa/guidances", replacing(#""grade":1"#, #""grade":"1""#), json, 400, "student.grade"),
            (
                "bad guidanceId", "POST", "/v1/schools/sa/guidances", replacing(#"{"student""#, #"{"guidanceId":"abc","student""#), json,
                400, "guidanceId"
            ),
            (
                "bad occurredAt", "POST", "/v1/schools/sa/guidances", replacing(Self.occurredAt.seoul, "this morning"), json, 400,
                "occurredAt"
            ),
            (
                "too large", "POST", "/v1/schools/sa/guidances", replacing("spat gum on the road", String(repeating: "x", count: 17_000)),
                json, 413, nil
            ),
            ("not JSON", "POST", "/v1/schools/sa/guidances", valid, ["Content-Type": "text/plain"], 415, nil),
            ("unknown school", "POST", "/v1/schools/nowhere/guidances", valid, json, 422, "schoolId"),
            ("unknown student", "POST", "/v1/schools/sa/guidances", replacing(#""number":12"#, #""number":99"#), json, 422, "student"),
            (
                "unknown reason", "POST", "/v1/schools/sa/guidances", replacing(#""code":"others""#, #""code":"rudeness""#), json, 422,
                "reason.code"
            ),
            (
                "others without detail", "POST", "/v1/schools/sa/guidances", replacing(#","detail":"spat gum on the road""#, ""), json, 422,
                "reason.detail"
            ),
            (
                "detail too long", "POST", "/v1/schools/sa/guidances",
                replacing("spat gum on the road", String(repeating: "긴", count: 201)), json, 422, "reason.detail"
            ),
            (
                "occurredAt in the future", "POST", "/v1/schools/sa/guidances", replacing(Self.occurredAt.seoul, future), json, 422,
                "occurredAt"
            ),
            ("unknown recorder", "POST", "/v1/schools/sa/guidances", replacing("t-gate-01", "t-nobody"), json, 422, "recordedBy"),
            ("unknown route", "POST", "/v1/schools/sa/guidance", valid, json, 404, nil),
            ("wrong method", "PUT", "/v1/schools/sa/guidances", valid, json, 405, nil),
            (
                "delete unknown grade", "DELETE", "/v1/schools/sa/grades/7/guidances/0d5e8a52-3f51-4c0b-a7a1-1f2e3d4c5b6a", nil, [:], 422,
                "grade"
            ),
            (
                "delete unknown school", "DELETE", "/v1/schools/nowhere/grades/1/guidances/0d5e8a52-3f51-4c0b-a7a1-1f2e3d4c5b6a", nil, [:],
                422, "schoolId"
            ),
            ("delete bad id", "DELETE", "/v1/schools/sa/grades/1/guidances/not-a-uuid", nil, [:], 400, "guidanceId"),
            // Issue 9: each of these once crashed the ingest or slipped through.
            (
                "negative number", "POST", "/v1/schools/sa/guidances", replacing(#""number":12"#, #""number":-1"#), json, 400,
                "student.number"
            ),
            (
                "negative class", "POST", "/v1/schools/sa/guidances", replacing(#""classNumber":3"#, #""classNumber":-3"#), json, 400,
                "student.classNumber"
            ),
            (
                "negative grade", "POST", "/v1/schools/sa/guidances", replacing(#""grade":1"#, #""grade":-9223372036854775808"#), json, 400,
                "student.grade"
            ),
            ("number zero", "POST", "/v1/schools/sa/guidances", replacing(#""number":12"#, #""number":0"#), json, 400, "student.number"),
            ("fractional grade", "POST", "/v1/schools/sa/guidances", replacing(#""grade":1"#, #""grade":1.5"#), json, 400, "student.grade"),
            (
                "huge number", "POST", "/v1/schools/sa/guidances", replacing(#""number":12"#, #""number":9223372036854775808"#), json, 400,
                "student.number"
            ),
            (
                "exponent number", "POST", "/v1/schools/sa/guidances", replacing(#""number":12"#, #""number":1e308"#), json, 400,
                "student.number"
            ),
            ("trailing comma", "POST", "/v1/schools/sa/guidances", replacing(#""number":12}"#, #""number":12,}"#), json, 400, "student"),
            (
                "duplicate key", "POST", "/v1/schools/sa/guidances", replacing(#""number":12"#, #""number":12,"number":13"#), json, 400,
                "student.number"
            ),
            ("NUL in detail", "POST", "/v1/schools/sa/guidances", replacing("spat gum", #"spat\u0000gum"#), json, 422, "reason.detail"),
            ("ESC in detail", "POST", "/v1/schools/sa/guidances", replacing("spat gum", #"spat\u001b[31mgum"#), json, 422, "reason.detail"),
            ("BEL in detail", "POST", "/v1/schools/sa/guidances", replacing("spat gum", #"spat\u0007gum"#), json, 422, "reason.detail"),
            ("C1 in detail", "POST", "/v1/schools/sa/guidances", replacing("spat gum", #"spat\u009bgum"#), json, 422, "reason.detail"),
            (
                "bidi override in detail", "POST", "/v1/schools/sa/guidances", replacing("spat gum", "spat \u{202E}mug"), json, 422,
                "reason.detail"
            ),
            (
                "5,000 combining marks", "POST", "/v1/schools/sa/guidances",
                replacing("spat gum on the road", "a" + String(repeating: "\u{0301}", count: 5_000)), json, 422, "reason.detail"
            ),
            ("blank detail", "POST", "/v1/schools/sa/guidances", replacing("spat gum on the road", "   "), json, 422, "reason.detail"),
            (
                "empty detail on another reason", "POST", "/v1/schools/sa/guidances",
                replacing(#"{"code":"others","detail":"spat gum on the road"}"#, #"{"code":"noShoes","detail":""}"#), json, 422,
                "reason.detail"
            ),
            (
                "occurredAt in year 1", "POST", "/v1/schools/sa/guidances", replacing(Self.occurredAt.seoul, "0001-01-01T00:00:00Z"), json,
                422, "occurredAt"
            ),
            (
                "occurredAt 401 days ago", "POST", "/v1/schools/sa/guidances",
                replacing(Self.occurredAt.seoul, Timestamp.format(Timestamp.now() - 401 * 86_400)), json, 422, "occurredAt"
            ),
            (
                "null reason", "POST", "/v1/schools/sa/guidances", replacing(#"{"code":"others","detail":"spat gum on the road"}"#, "null"),
                json, 400, "reason"
            ),
            ("array body", "POST", "/v1/schools/sa/guidances", "[" + valid + "]", json, 400, nil)
        ]
        for testCase in cases {
            let reply = try await fetch(testCase.method, base + testCase.path, body: testCase.body, headers: testCase.headers)
            XCTAssertEqual(reply.status, testCase.status, "\(testCase.name): \(reply.text)")
            XCTAssertEqual(reply.header("Content-Type"), "application/problem+json", testCase.name)
            XCTAssertEqual(reply.object["status"]?.int, testCase.status, testCase.name)
            XCTAssertNotNil(reply.object["detail"]?.string, testCase.name)
            XCTAssertFalse((reply.header("X-Request-Id") ?? "").isEmpty, testCase.name)
            if let field = testCase.field {
                guard case .array(let errors) = reply.object["errors"] else {
                    XCTFail("\(testCase.name): no errors array in \(reply.text)")
                    continue
                }
                XCTAssertTrue(errors.contains { $0["field"]?.string == field }, "\(testCase.name): \(reply.text)")
            }
        }
        XCTAssertEqual(try messageCount([topics.registered, topics.deleted]), 0, "a rejected request produced an event")
        // Still alive, still accepting.
        try await expectStatus(202, await register(valid))
        // 200 code points of detail are fine, counted as code points.
        try await expectStatus(202, await register(replacing("spat gum on the road", String(repeating: "e\u{0301}", count: 100))))
        try await expectStatus(422, await register(replacing("spat gum on the road", String(repeating: "e\u{0301}", count: 101))))
    }

    func testBrokerDownAnswers503WithRetryAfterWithinTheDeliveryTimeoutThenRecovers() async throws {
        try await startService(deliveryTimeout: .seconds(2))
        try await expectStatus(202, await register(Self.validBody))
        cluster.setAllBrokers(up: false)
        let down = try await register(Self.validBody)
        XCTAssertEqual(down.status, 503, down.text)
        XCTAssertNotNil(down.header("Retry-After"))
        XCTAssertEqual(down.header("Content-Type"), "application/problem+json")
        // The id the server made, for the client's retry.
        XCTAssertTrue(RandomID.isUUID(down.object["guidanceId"]?.string ?? ""), down.text)
        // Answered at the delivery timeout (the producer's own deadline; ProducerFaultTests times it).
        let metrics = try await fetch("GET", "\(base)/metrics")
        XCTAssertTrue(metrics.text.contains(#"ingest_produce_errors_total{code="deliveryTimedOut"} 1"#), metrics.text)
        try await expectStatus(503, await fetch("GET", "\(base)/readyz"))

        cluster.setAllBrokers(up: true)
        let deadline = ContinuousClock.now + .seconds(20)
        var status = 0
        while status != 202 && ContinuousClock.now < deadline {
            status = try await register(Self.validBody).status
            XCTAssertTrue(status == 202 || status == 503, "got \(status)")
        }
        XCTAssertEqual(status, 202, "no registration succeeded after the brokers came back")
        try await expectStatus(200, await fetch("GET", "\(base)/readyz"))
    }

    func testAuthenticationAndSchoolScope() async throws {
        try await startService(authentication: true)
        let body = Self.validBody
        try await expectStatus(401, await register(body))
        let unauthorized = try await register(body, token: "guess")
        XCTAssertEqual(unauthorized.status, 401)
        XCTAssertEqual(unauthorized.header("WWW-Authenticate"), "Bearer")
        try await expectStatus(403, await register(body, token: "homeroom-a"), "a homeroom teacher may not register")
        try await expectStatus(403, await register(body, token: "gate-b"), "a gate teacher of school B acted on school A")
        try await expectStatus(
            403, await fetch("GET", "\(base)/v1/schools/sa/students/1/3/12", headers: ["Authorization": "Bearer gate-b"]))
        try await expectStatus(
            403,
            await fetch(
                "DELETE", "\(base)/v1/schools/sa/grades/1/guidances/0d5e8a52-3f51-4c0b-a7a1-1f2e3d4c5b6a",
                headers: ["Authorization": "Bearer gate-b"]))
        XCTAssertEqual(try messageCount([topics.registered, topics.deleted]), 0)

        // recordedBy defaults to the token's teacher.
        let withoutRecorder = body.replacingOccurrences(of: #","recordedBy":"t-gate-01""#, with: "")
        let accepted = try await register(withoutRecorder, token: "gate-a")
        XCTAssertEqual(accepted.status, 202, accepted.text)
        let event = try JSONDecoder().decode(
            GuidanceRegistered.self, from: Data(try XCTUnwrap(messages(on: topics.registered, expecting: 1).first).value ?? []))
        XCTAssertEqual(event.recordedBy, "t-gate-01")
        try await expectStatus(
            200, await fetch("GET", "\(base)/v1/schools/sa/students/1/3/12", headers: ["Authorization": "Bearer gate-a"]))

        // The event names the caller: an admin may not record as a gate teacher.
        let asGate = try await register(body, token: "admin-a")
        XCTAssertEqual(asGate.status, 422, asGate.text)
        XCTAssertTrue(asGate.text.contains("recordedBy"), asGate.text)
        try await expectStatus(202, await register(withoutRecorder, token: "admin-a"))
        let events = try messages(on: topics.registered, expecting: 2).compactMap {
            try? JSONDecoder().decode(GuidanceRegistered.self, from: Data($0.value ?? []))
        }
        XCTAssertEqual(events.map(\.recordedBy).sorted(), ["t-admin-a", "t-gate-01"])

        // Another site's page is refused on every method, reads too.
        let foreign = try await fetch(
            "GET", "\(base)/v1/schools/sa/students/1/3/12", headers: ["Authorization": "Bearer gate-a", "Origin": "https://evil.example"])
        XCTAssertEqual(foreign.status, 403, foreign.text)
    }

    /// 학생 찾기 (issue 70): by part of a name or the start of a 학번, only
    /// the students whose record the teacher may open, never another school's.
    func testAStudentIsFoundByNameOrStudentNumberWithinWhatTheTeacherMayOpen() async throws {
        try await startService(authentication: true)
        let find = { (query: String, token: String, school: String) async throws -> Reply in
            try await fetch(
                "GET",
                "\(self.base)/v1/schools/\(school)/students?q=\(query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")",
                headers: ["Authorization": "Bearer \(token)"])
        }
        let ids = { (reply: Reply) -> [String] in
            guard case .array(let items)? = reply.object["items"] else { return [] }
            return items.map { $0["studentId"]?.string ?? "" }
        }
        let admin = try await find("10312", "admin-a", "sa")
        XCTAssertEqual(admin.status, 200, admin.text)
        XCTAssertEqual(ids(admin), ["s10312"], "1학년 3반 12번 by its 학번")
        XCTAssertEqual(admin.object["items"]?[0]?["name"]?.string, "김민지")
        XCTAssertEqual(admin.object["more"], .bool(false))
        try await assertEqualAsync(ids(await find("2", "admin-a", "sa")), ["s20101"], "the start of a 학번: the grade")
        try await assertEqualAsync(ids(await find("서준", "admin-a", "sa")), ["s20101"], "part of a name")
        try await assertEqualAsync(ids(await find("서준", "homeroom-a", "sa")), [], "a homeroom teacher finds only their class")
        try await assertEqualAsync(ids(await find("민지", "homeroom-a", "sa")), ["s10312"])
        try await expectStatus(403, await find("민지", "gate-a", "sa"), "a gate teacher opens no record")
        try await expectStatus(403, await find("Ana", "admin-a", "sb"), "another school's students")
        try await expectStatus(400, await find("", "admin-a", "sa"), "nothing to find")
        try await expectStatus(400, await find(String(repeating: "가", count: 21), "admin-a", "sa"))
        // Counted as the contract counts, Unicode scalars as sent: 21 of them with a leading tab is too long.
        try await expectStatus(400, await find("\t" + String(repeating: "가", count: 20), "admin-a", "sa"))
        try await expectStatus(400, await find(String(repeating: "e\u{301}", count: 11), "admin-a", "sa"), "11 characters, 22 scalars")
        try await expectStatus(400, await find("   ", "admin-a", "sa"), "only spaces")
    }

    /// Ready only once a send can go straight to its partition's leader: a
    /// partition without one keeps /readyz at 503, naming it.
    func testReadinessWaitsForEveryPartitionsLeader() async throws {
        try await startService()
        try await expectStatus(200, await fetch("GET", "\(base)/readyz"))
        cluster.setPartitionLeader(topic: topics.deleted, partition: 2, broker: -1)
        let base = self.base
        let ready = try await eventually(within: .seconds(10)) {
            try await fetch("GET", "\(base)/readyz")
        } until: {
            $0.status == 503
        }
        XCTAssertEqual(ready.status, 503, ready.text)
        XCTAssertTrue(ready.text.contains("\(topics.deleted)[2]"), ready.text)
        cluster.setPartitionLeader(topic: topics.deleted, partition: 2, broker: 1)
        try await expectStatus(200, await fetch("GET", "\(base)/readyz"))
    }

    /// API answers carry students' names: never stored by a cache, never
    /// sniffed; errors too. Other answers keep their own caching.
    func testAPIAnswersAreNotStoredOrSniffed() async throws {
        try await startService()
        for url in ["\(base)/v1/schools/sa/students/1/3/12", "\(base)/v1/schools/sa/students/1/3/99"] {
            let reply = try await fetch("GET", url)
            XCTAssertEqual(reply.header("Cache-Control"), "no-store", "\(url) \(reply.status)")
            XCTAssertEqual(reply.header("X-Content-Type-Options"), "nosniff", url)
        }
        let health = try await fetch("GET", "\(base)/healthz")
        XCTAssertEqual(health.header("X-Content-Type-Options"), "nosniff")
        XCTAssertNil(health.header("Cache-Control"))
    }

    func testOperationalEndpoints() async throws {
        try await startService()
        try await expectStatus(200, await fetch("GET", "\(base)/healthz"))
        try await expectStatus(200, await fetch("GET", "\(base)/readyz"))
        _ = try await register(Self.validBody)
        let metrics = try await fetch("GET", "\(base)/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(
            metrics.text.contains(#"http_requests_total{route="/v1/schools/{schoolId}/guidances",method="POST",status="202"} 1"#),
            metrics.text)
        XCTAssertTrue(metrics.text.contains("http_request_duration_seconds_bucket"))
        XCTAssertTrue(metrics.text.contains("ingest_events_in_flight"))
    }
}
