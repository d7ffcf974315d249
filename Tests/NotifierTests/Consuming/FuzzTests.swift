import Common
import Foundation
import Guidance
import Kafka
import TestSupport
import XCTest

/// Random and mutated input at both services over real HTTP, and random
/// message values at the notifier: no answer is a 5xx, every refusal is
/// problem+json of its own status with a request id, and both keep serving.
/// Seeded (`FUZZ_SEED` replays a run) and bounded in count and time.
final class FuzzTests: XCTestCase {
    var harness: NotifierHarness!
    var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["FUZZ_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max))

    override func setUp() async throws {
        print("FuzzTests: FUZZ_SEED=\(random.seed)")
        // Events naming ids the roster lacks are held for the grace first.
        // A fifth of the requests carry a token nobody holds, from one
        // address: past the default 10 the address would wait (429), which
        // AccessPolicyTests covers; here every request must reach a handler.
        harness = try await NotifierHarness(authentication: true, rosterGrace: .seconds(1), failedSignInLimit: 1_000_000)
    }

    override func tearDown() async throws {
        await harness?.shutdown()
        harness = nil
    }

    static let validRegistration =
        #"{"guidanceId":"0d5e8a52-3f51-4c0b-a7a1-1f2e3d4c5b6a","student":{"grade":1,"classNumber":1,"number":1},"reason":{"code":"others","detail":"체육복"},"recordedBy":"t-gate","occurredAt":"2026-11-20T23:30:00Z"}"#

    /// JSON texts a client might send where one value belongs.
    static let oddValues = [
        "-1", "0", "65536", "-9223372036854775808", "9223372036854775807", "9223372036854775808", "1e308", "-0", "1.5", "1E2",
        "99999999999999999999999999", "null", "true", "[]", "{}", "[1,]", #""""#, #""   ""#, #""\u0000""#, #""a\u0000b""#,
        #""\u202Eevil""#, #""\ud800""#, #""\udc00\ud800""#, #""🎒🎒""#, #""e\u0301""#, #""\u001b[2J""#, #""<script>alert(1)</script>""#,
        #""' OR 1=1 --""#, #""%00""#, #""../../etc/passwd""#, "\"" + String(repeating: "가", count: 300) + "\"",
        "\"a" + String(repeating: "\\u0301", count: 2_000) + "\"", #""2026-11-30T07:52:10+09:00""#, #""0001-01-01T00:00:00Z""#,
        #""9999-12-31T23:59:59Z""#, #""noShoes""#, #""others""#, #""t-gate""#, #""12121212-3434-4565-8787-909090909090""#
    ]

    static let fields = [
        #""grade":1"#, #""classNumber":1"#, #""number":1"#, #""code":"others""#, #""detail":"체육복""#,
        #""guidanceId":"0d5e8a52-3f51-4c0b-a7a1-1f2e3d4c5b6a""#, #""recordedBy":"t-gate""#, #""occurredAt":"2026-11-20T23:30:00Z""#
    ]

    /// The valid body with one thing broken.
    func mutatedRegistration() -> String {
        let body = Self.validRegistration
        let field = Self.fields.randomElement(using: &random)!
        let key = String(field.prefix { $0 != ":" })
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return body.replacingOccurrences(of: "," + field, with: "").replacingOccurrences(of: field + ",", with: "")
        case 1: return body.replacingOccurrences(of: field, with: field + "," + field)
        case 2: return body.replacingOccurrences(of: field, with: field + ",")
        case 3:
            let cut = Int.random(in: 0..<body.utf8.count, using: &random)
            return String(decoding: Array(body.utf8).prefix(cut), as: UTF8.self)
        default: return body.replacingOccurrences(of: field, with: key + ":" + Self.oddValues.randomElement(using: &random)!)
        }
    }

    func randomBytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    func randomSegment() -> String {
        let raw = [
            "1", "0", "-1", "65536", "9223372036854775808", "abc", "%00", "%2F", "..", "가", "%ZZ", "1.5", " ", "%20",
            "0d5e8a52-3f51-4c0b-a7a1-1f2e3d4c5b6a", "t-hr-1-1", "sa", "sb", String(repeating: "x", count: 300)
        ].randomElement(using: &random)!
        return raw
    }

    /// Checks one answer; returns a description when it breaks the rules.
    func problem(with reply: Reply, for request: String) -> String? {
        if reply.status >= 500 { return "\(reply.status) for \(request): \(reply.text.prefix(300))" }
        if (reply.header("X-Request-Id") ?? "").isEmpty { return "no X-Request-Id for \(request)" }
        guard reply.status >= 400 else { return nil }
        if reply.header("Content-Type") != "application/problem+json" { return "\(reply.status) without problem+json for \(request)" }
        if reply.object["status"]?.int != reply.status {
            return "problem status differs from \(reply.status) for \(request): \(reply.text.prefix(200))"
        }
        return nil
    }

    func testRandomAndMutatedRequestsNeverBreakEitherService() async throws {
        let deadline = ContinuousClock.now + .seconds(40)
        let token = ["t-gate", "t-admin", "t-hr-1-1", "t-gate-b", "nobody"]
        var failures: [String] = []
        var sent = 0
        var classes: [Int: Int] = [:]
        while sent < 1_500 && ContinuousClock.now < deadline && failures.count < 10 {
            sent += 1
            var headers = ["Content-Type": "application/json", "Authorization": "Bearer tok-\(token.randomElement(using: &random)!)"]
            let method: String
            let url: String
            var body: String?
            switch Int.random(in: 0..<12, using: &random) {
            case 0...4:
                method = "POST"
                url = harness.ingestBase + "/v1/schools/sa/guidances"
                body = mutatedRegistration()
            case 5:
                method = "POST"
                url = harness.ingestBase + "/v1/schools/sa/guidances"
                body = String(decoding: randomBytes(Int.random(in: 0..<200, using: &random)), as: UTF8.self)
                if Bool.random(using: &random) {
                    headers["Content-Type"] = ["text/plain", "application/json; charset=latin1", ""].randomElement(using: &random)!
                }
            case 6:
                method = ["GET", "DELETE", "PUT", "PATCH"].randomElement(using: &random)!
                url =
                    harness.ingestBase + "/v1/schools/\(randomSegment())/students/\(randomSegment())/\(randomSegment())/\(randomSegment())"
            case 7:
                method = "DELETE"
                url = harness.ingestBase + "/v1/schools/\(randomSegment())/grades/\(randomSegment())/guidances/\(randomSegment())"
            case 8:
                method = "GET"
                let query = ["grade", "classNumber", "date", "unread"].map { "\($0)=\(randomSegment())" }.filter { _ in
                    Bool.random(using: &random)
                }
                url =
                    harness.notifierBase + "/v1/schools/\(["sa", "sb", randomSegment()].randomElement(using: &random)!)/guidances?"
                    + query.joined(separator: "&")
            case 9:
                method = ["GET", "POST"].randomElement(using: &random)!
                url =
                    harness.notifierBase + "/v1/teachers/\(randomSegment())/inbox"
                    + (Bool.random(using: &random) ? "?unread=\(randomSegment())" : "")
            case 10:
                method = "POST"
                url = harness.notifierBase + "/v1/digests/run"
                body =
                    #"{"schoolId":\#(Self.oddValues.randomElement(using: &random)!),"date":\#(Self.oddValues.randomElement(using: &random)!)}"#
            default:
                method = "POST"
                url = harness.notifierBase + "/v1/teachers/\(randomSegment())/inbox/\(randomSegment())/read"
            }
            guard URL(string: url) != nil else { continue }
            let reply = try await fetch(method, url, body: body, headers: headers)
            classes[reply.status / 100, default: 0] += 1
            if let failure = problem(with: reply, for: "\(method) \(url) \(body ?? "")") { failures.append(failure) }
        }
        print(
            "FuzzTests: \(sent) requests, answers by class: \(classes.sorted { $0.key < $1.key }.map { "\($0.key)xx \($0.value)" }.joined(separator: ", "))"
        )
        XCTAssertEqual(failures, [], "seed \(random.seed)")
        XCTAssertGreaterThan(sent, 200, "the fuzz loop sent too little to mean anything")
        // Both still serve: a valid registration goes all the way to the list.
        let id = try await harness.register(grade: 1, classNumber: 2, number: 2, as: "t-gate")
        let applied = ContinuousClock.now + .seconds(20)
        var listed: [String] = []
        while !listed.contains(id) && ContinuousClock.now < applied {
            listed = try await harness.waitForList(count: listed.count + 1, as: "t-admin")
        }
        XCTAssertTrue(listed.contains(id), "the notifier stopped applying events after the fuzzing")
    }

    func testRandomMessageValuesAreDeadLetteredAndConsumptionGoesOn() async throws {
        let producer = try Producer(config: producerConfig(harness.cluster), logger: quietLogger("fuzz"))
        defer { producer.close() }
        let valid = GuidanceRegistered(
            eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: "sa",
            student: StudentRef(studentId: "a111", grade: 1, classNumber: 1, number: 1, name: "가가"),
            reason: ReasonRef(code: "noShoes", label: "실내화 없음", detail: nil), recordedBy: "t-gate",
            occurredAt: "2026-11-20T23:30:00Z", recordedAt: "2026-11-20T23:30:01Z")
        let text = String(decoding: valid.json, as: UTF8.self)
        // Each breaks the event for certain: not an object, or one field wrong.
        let breakages: [(String, String)] = [
            (#""schemaVersion":1"#, #""schemaVersion":2"#), (#""grade":1"#, #""grade":-1"#), (#""grade":1"#, #""grade":1.5"#),
            (#""number":1"#, #""number":0"#), (#""studentId":"a111""#, #""studentId":"a999""#), (#""code":"noShoes""#, #""code":"x""#),
            (#""schoolId":"sa""#, #""schoolId":"nowhere""#), (#""recordedBy":"t-gate""#, #""recordedBy":"t-gate-b""#),
            (#""occurredAt":"2026-11-20T23:30:00Z""#, #""occurredAt":"yesterday""#), (#""detail":null"#, #""detail":"\u202E""#),
            (#""detail":null"#, #""detail":"""#), (#""type":"guidance.registered""#, #""type":"guidance.deleted""#),
            (#""eventId":""#, #""eventId":"x","e":""#), (#""name":"가가""#, #""name":"가가","name":"x""#)
        ]
        var values: [[UInt8]] = []
        for _ in 0..<120 {
            switch Int.random(in: 0..<3, using: &random) {
            case 0: values.append([UInt8(ascii: "[")] + randomBytes(Int.random(in: 0..<300, using: &random)))
            case 1: values.append([])
            default:
                let (old, new) = breakages.randomElement(using: &random)!
                values.append(Array(text.replacingOccurrences(of: old, with: new).utf8))
            }
        }
        for value in values {
            _ = try await producer.send(
                OutgoingMessage(
                    topic: [harness.topics.registered, harness.topics.deleted].randomElement(using: &random)!, key: "sa/1", value: value))
        }
        let good = try await harness.register(grade: 1, classNumber: 2, number: 1, as: "t-gate")
        try await assertEqualAsync(await harness.waitForList(equalTo: [good], as: "t-admin"), [good])

        let consumer = try Consumer(
            config: consumerConfig(harness.cluster, group: "fuzz-\(UUID())", topics: [harness.topics.deadLetters]),
            logger: quietLogger("dlq"))
        defer { consumer.close() }
        let letters = consumeAll(consumer, count: values.count)
        XCTAssertEqual(letters.count, values.count, "seed \(random.seed): every broken message is dead-lettered once")
        XCTAssertTrue(letters.allSatisfy { !($0.header("dlq-reason") ?? "").isEmpty })
        XCTAssertEqual(harness.notifier?.metrics.value("notifier_dead_letters_total"), Double(values.count))
    }
}
