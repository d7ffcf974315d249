import Common
import Curl
import Foundation
import Guidance
import HTTP
import Ingest
import Kafka
import KafkaMock
import Notifier
import Sessions
import Store
import Synchronization

/// What the bench measures on, made here once: the system's continuous clock
/// for how long things take, its wall clock for the events' dates.
let timer = ContinuousClock()
let wallClock: @Sendable () -> Double = Timestamp.now

/// Benchmarks that print their numbers. Each starts its own mock cluster on
/// loopback, runs a bounded amount of work and stops by itself.
///
///   guidance-bench kafka  [--messages N] [--inflight C] [--bootstrap B]  producer round trips, awaited
///   guidance-bench apply  [--events N] [--store URL]      notifier: backlog → committed store rows
///   guidance-bench e2e    [--samples N]                   POST 202 → visible in the list API, one at a time
///   guidance-bench load   --url U [--rate R] [--seconds S] [--connections C] [--latencies FILE]   paced POSTs; 202 latency
///   guidance-bench morning --url U [--seconds S] [--per-school N] [--latencies FILE]   a district's gate morning, compressed
///   guidance-bench roster [--versions N]                  a school's roster version applied on ROSTER_DIR's roster
///   guidance-bench march  [--seconds S] [--rate R] [--store URL]   every school of ROSTER_DIR rolls over (진급) while gates record
/// `scripts/bench` runs them with wrk and the services as processes and prints the table.
struct Options {
    var command = "all"
    var values: [String: String] = [:]

    init(_ arguments: [String]) {
        var rest = arguments[...]
        if let first = rest.first, !first.hasPrefix("--") {
            command = first
            rest = rest.dropFirst()
        }
        while let flag = rest.popFirst() {
            guard flag.hasPrefix("--"), let text = rest.popFirst() else {
                FileHandle.standardError.write(
                    Data("usage: guidance-bench [kafka|apply|e2e|load|morning|all] [--name value]… (see the source's header)\n".utf8))
                exit(2)
            }
            values[String(flag.dropFirst(2))] = text
        }
    }

    func int(_ name: String, _ fallback: Int) -> Int { values[name].flatMap { Int($0) } ?? fallback }
    func string(_ name: String) -> String? { values[name] }
}

func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
let quiet = Logger(component: "bench", level: .error)
let roster = try Roster.load(from: ProcessInfo.processInfo.environment["ROSTER_DIR"] ?? "examples/roster")

/// A registration event of the sample roster, as ingest would write it: the
/// notifier holds events to the roster, so each is signed by a gate teacher
/// of the student's own school.
func sampleEvent(_ index: Int, date: Double) -> (key: String, value: [UInt8]) {
    let students = BenchData.students
    let student = students[index % students.count]
    let reasons = ["wrongClothes", "noShoes", "trespassing", "others"]
    let code = reasons[index % reasons.count]
    let event = GuidanceRegistered(
        eventId: RandomID.uuid(), guidanceId: RandomID.uuid(), schoolId: student.schoolID,
        student: StudentRef(student), reason: ReasonRef(code: code, label: code, detail: code == "others" ? "bench" : nil),
        recordedBy: BenchData.gate[student.schoolID] ?? "t-gate-01", occurredAt: Timestamp.format(date), recordedAt: Timestamp.format(date))
    return (eventKey(school: student.schoolID, grade: student.grade), Array(try! JSONEncoder().encode(event)))
}

enum BenchData {
    /// A gate teacher per school, to sign registrations.
    static let gate: [String: String] = {
        var gates: [String: String] = [:]
        for teacher in roster.teachers.values where teacher.has(.gate) {
            if gates[teacher.schoolID].map({ teacher.id < $0 }) ?? true { gates[teacher.schoolID] = teacher.id }
        }
        return gates
    }()

    static let students: [Student] = {
        var list: [Student] = []
        for school in roster.schools.keys.sorted() {
            for grade in 1...3 {
                for classNumber in 1...12 {
                    for number in 1...32 {
                        if let student = roster.student(school: school, grade: grade, classNumber: classNumber, number: number) {
                            list.append(student)
                        }
                    }
                }
            }
        }
        return list
    }()
}

func newCluster(partitions: Int = 12) throws -> (MockCluster, Topics) {
    let cluster = try MockCluster(brokers: 3, logger: quiet)
    let topics = Topics()
    for topic in topics.all { try cluster.createTopic(topic, partitions: partitions) }
    // The session log's topic: the mock cluster does not create topics on request.
    try cluster.createTopic("guidance.sessions", partitions: 1)
    try cluster.createTopic(topics.roster, partitions: 1)
    try cluster.createTopic(topics.photos, partitions: 1)
    return (cluster, topics)
}

/// Producer alone: `inflight` sends awaited at a time, like concurrent requests.
func benchKafka() async throws {
    let messages = options.int("messages", 50_000)
    let inflight = options.int("inflight", 64)
    let external = options.string("bootstrap")
    let (cluster, topics) = external == nil ? try newCluster() : (nil, Topics(prefix: "bench."))
    if external != nil {
        // A topic of its own on the shared broker, created by the first send.
        try await ensureTopic(topics.registered, bootstrap: external!)
    }
    let producer = try Producer(
        config: ProducerConfig(kafka: KafkaConfig(bootstrapServers: external ?? cluster!.bootstrapServers)), logger: quiet)
    let payloads = (0..<1000).map { sampleEvent($0, date: wallClock()) }
    let started = timer.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<inflight {
            group.addTask {
                var index = worker
                while index < messages {
                    let payload = payloads[index % payloads.count]
                    _ = try await producer.send(OutgoingMessage(topic: topics.registered, key: payload.key, value: payload.value))
                    index += inflight
                }
            }
        }
        try await group.waitForAll()
    }
    let seconds = (timer.now - started).seconds
    report(
        String(
            format: "kafka: %d messages of ~%d bytes, %d in flight, acks=all, idempotent: %.0f messages/s (%.2f s)",
            messages, payloads[0].value.count, inflight, Double(messages) / seconds, seconds))
    producer.close()
    withExtendedLifetime(cluster) {}
}

/// The mock cluster has no CreateTopics; an auto-created topic comes from a
/// metadata request, so a first send creates it when the broker allows.
func ensureTopic(_ topic: String, bootstrap: String) async throws {
    let producer = try Producer(config: ProducerConfig(kafka: KafkaConfig(bootstrapServers: bootstrap)), logger: quiet)
    defer { producer.close() }
    _ = try await producer.send(OutgoingMessage(topic: topic, key: "warm-up", value: Array("{}".utf8)))
}

/// Notifier: a backlog of registrations, then a fresh notifier applies it.
func benchApply() async throws {
    let events = options.int("events", 100_000)
    let (cluster, topics) = try newCluster()
    let producer = try Producer(config: ProducerConfig(kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers)), logger: quiet)
    let now = wallClock()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<256 {
            group.addTask {
                var index = worker
                while index < events {
                    let payload = sampleEvent(index, date: now)
                    _ = try await producer.send(
                        OutgoingMessage(
                            topic: topics.registered, key: payload.key, value: payload.value,
                            headers: [("event-type", "guidance.registered")]))
                    index += 256
                }
            }
        }
        try await group.waitForAll()
    }
    producer.close()
    FileHandle.standardError.write(Data("apply: \(events) events produced\n".utf8))
    try drain(events, topic: topics.registered, bootstrap: cluster.bootstrapServers)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try options.string("store").map(StoreLocation.parse) ?? .sqlite(path: directory.appendingPathComponent("bench.db").path)
    let config = NotifierConfig(
        http: HTTPServerConfig(host: "127.0.0.1", port: 0), rosterDirectory: "", store: store,
        kafka: KafkaConfig(bootstrapServers: cluster.bootstrapServers), groupID: "bench", topics: topics, scheduleInterval: nil)
    let started = timer.now
    let notifier = try await MockCluster.joining(logger: quiet) { try NotifierService(config: config, roster: roster, logger: quiet) }
    let deadline = timer.now + .seconds(300)
    var lastReport = timer.now
    var firstApplied: ContinuousClock.Instant?
    while notifier.metrics.value("notifier_events_applied_total") < Double(events) && timer.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
        if firstApplied == nil && notifier.metrics.value("notifier_events_applied_total") > 0 { firstApplied = .now }
        if timer.now - lastReport > .seconds(5) {
            lastReport = .now
            FileHandle.standardError.write(
                Data("apply: \(Int(notifier.metrics.value("notifier_events_applied_total"))) applied so far\n".utf8))
        }
    }
    let finished = timer.now
    let applied = Int(notifier.metrics.value("notifier_events_applied_total"))
    let joining = ((firstApplied ?? finished) - started).seconds
    let applying = (finished - (firstApplied ?? started)).seconds
    let storeName = if case .postgres = store { "PostgreSQL" } else { "SQLite" }
    report(
        String(
            format: "apply: %d of %d events from topic to committed %@ rows: %.0f events/s (%.2f s after %.2f s joining the group)",
            applied, events, storeName, Double(applied) / applying, applying, joining))
    await notifier.shutdown()
    withExtendedLifetime(cluster) {}
}

/// The floor under apply: a bare consumer reading the same backlog and
/// nothing else (no decoding, no store, no commits), timed like apply from
/// its first message.
func drain(_ events: Int, topic: String, bootstrap: String) throws {
    let consumer = try Consumer(
        config: ConsumerConfig(kafka: KafkaConfig(bootstrapServers: bootstrap), groupID: "bench-drain-\(UUID())", topics: [topic]),
        logger: quiet)
    defer { consumer.close() }
    var read = 0
    var first: ContinuousClock.Instant?
    let deadline = timer.now + .seconds(120)
    while read < events && timer.now < deadline {
        let batch = consumer.poll(maxMessages: 1000, timeout: .milliseconds(100))
        if first == nil && !batch.isEmpty { first = .now }
        read += batch.count
    }
    let seconds = (timer.now - (first ?? .now)).seconds
    report(
        String(
            format: "drain: %d of %d events read by a bare consumer: %.0f events/s (%.2f s)", read, events, Double(read) / seconds, seconds)
    )
}

/// An ingest and a notifier in this process on `cluster`, with the roster
/// of `ROSTER_DIR` and no digest schedule.
func startServices(_ cluster: MockCluster, _ topics: Topics, store: StoreLocation, group: String) async throws -> (
    IngestService, NotifierService
) {
    let kafka = KafkaConfig(bootstrapServers: cluster.bootstrapServers)
    let ingest = try IngestService(
        config: IngestConfig(
            http: HTTPServerConfig(host: "127.0.0.1", port: 0), rosterDirectory: "", producer: ProducerConfig(kafka: kafka), topics: topics),
        roster: roster, logger: quiet)
    try await ingest.start()
    let notifier = try await MockCluster.joining(logger: quiet) {
        try NotifierService(
            config: NotifierConfig(
                http: HTTPServerConfig(host: "127.0.0.1", port: 0), rosterDirectory: "", store: store, kafka: kafka, groupID: group,
                topics: topics, scheduleInterval: nil),
            roster: roster, logger: quiet)
    }
    return (ingest, notifier)
}

/// One POST at a time, then the list API polled until the guidance shows.
func benchEndToEnd() async throws {
    let samples = options.int("samples", 300)
    let (cluster, topics) = try newCluster()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let (ingest, notifier) = try await startServices(
        cluster, topics, store: .sqlite(path: directory.appendingPathComponent("e2e.db").path), group: "bench-e2e")
    let client = BenchClient()
    let school = BenchData.students[0].schoolID
    let token = roster.authenticationEnabled ? "demo-t-gate-01" : nil
    let reader = roster.authenticationEnabled ? "demo-t-admin" : nil
    var latencies: [Double] = []
    for index in 0..<samples {
        let student = BenchData.students[index % BenchData.students.count]
        let body =
            #"{"student":{"grade":\#(student.grade),"classNumber":\#(student.classNumber),"number":\#(student.number)},"reason":{"code":"noShoes"},"recordedBy":"t-gate-01"}"#
        let (status, reply) = try await client.send(
            "POST", "http://127.0.0.1:\(ingest.port)/v1/schools/\(school)/guidances", body: body, token: token)
        guard status == 202,
            let id = (try? JSONSerialization.jsonObject(with: reply)).flatMap({ ($0 as? [String: Any])?["guidanceId"] as? String })
        else {
            report("e2e: POST answered \(status)")
            continue
        }
        let accepted = timer.now
        let listURL =
            "http://127.0.0.1:\(notifier.port)/v1/schools/\(school)/guidances?grade=\(student.grade)&classNumber=\(student.classNumber)"
        while timer.now - accepted < .seconds(10) {
            let (_, list) = try await client.send("GET", listURL, body: nil, token: reader)
            if String(decoding: list, as: UTF8.self).contains(id) { break }
        }
        latencies.append((timer.now - accepted).seconds * 1000)
    }
    latencies.sort()
    func percentile(_ p: Double) -> Double {
        latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
    }
    report(
        String(
            format: "e2e: %d guidances, 202 → visible in the list API: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
            latencies.count, percentile(0.5), percentile(0.99), latencies.last ?? .nan))
    await ingest.shutdown()
    await notifier.shutdown()
    withExtendedLifetime(cluster) {}
}

/// The shared progress of `sendPaced`'s threads.
final class PacedState: Sendable {
    let next = Atomic(0)
    let results = Mutex<[(sent: Double, milliseconds: Double, kind: String, status: Int)]>([])
}

/// Sends requests `0..<total`, request `i` not before `due(i)` after the
/// start, from `connections` threads (32 by default), each with its own
/// keep-alive libcurl session, taking the next due request in turn (a
/// URLSession client queued requests for hundreds of milliseconds on these
/// two shared cores). `send` makes the request and says its kind and status
/// (0: no answer). Returns each request's send time (Unix seconds), latency,
/// kind and status.
func sendPaced(
    total: Int, connections: Int, due: @escaping @Sendable (Int) -> Duration,
    send: @escaping @Sendable (HTTPSession, Int) -> (kind: String, status: Int)
) async -> [(sent: Double, milliseconds: Double, kind: String, status: Int)] {
    let state = PacedState()
    let started = timer.now
    let group = DispatchGroup()
    for _ in 0..<connections {
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            guard let session = try? HTTPSession(timeout: .seconds(10)) else { return }
            while true {
                let index = state.next.add(1, ordering: .relaxed).oldValue
                guard index < total else { return }
                let at = started + due(index)
                if at > .now { Thread.sleep(forTimeInterval: (at - .now).seconds) }
                let (sentAt, sent) = (wallClock(), timer.now)
                let (kind, status) = send(session, index)
                let took = (timer.now - sent).seconds * 1000
                state.results.withLock { $0.append((sentAt, took, kind, status)) }
            }
        }
    }
    await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
    return state.results.withLock { $0 }
}

/// `--latencies FILE`: one line per request: Unix send time, latency in ms, kind, status.
func writeLatencies(_ results: [(sent: Double, milliseconds: Double, kind: String, status: Int)]) {
    guard let path = options.string("latencies") else { return }
    let lines = results.map { String(format: "%.3f %.3f %@ %d\n", $0.sent, $0.milliseconds, $0.kind, $0.status) }
    _ = FileManager.default.createFile(atPath: path, contents: Data(lines.joined().utf8))
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func gateHeaders(_ school: String) -> [(String, String)] {
    var headers = [("Content-Type", "application/json")]
    if roster.authenticationEnabled, let gate = BenchData.gate[school] { headers.append(("Authorization", "Bearer demo-\(gate)")) }
    return headers
}

/// Paced POSTs at `rate` a second for `seconds`, spread over the roster's
/// schools; prints the count, the errors and the 202 latency.
func benchLoad() async throws {
    guard let url = options.string("url") else {
        report("load needs --url")
        exit(2)
    }
    let rate = options.int("rate", 1000)
    let seconds = options.int("seconds", 20)
    let students = BenchData.students
    let reasons = [#"{"code":"noShoes"}"#, #"{"code":"wrongClothes"}"#, #"{"code":"trespassing"}"#, #"{"code":"others","detail":"bench"}"#]
    let started = timer.now
    let interval = Duration.seconds(1) / rate
    let results = await sendPaced(total: rate * seconds, connections: options.int("connections", 32), due: { interval * $0 }) {
        session, index in
        let student = students[(index &* 7919) % students.count]
        let body =
            #"{"student":{"grade":\#(student.grade),"classNumber":\#(student.classNumber),"number":\#(student.number)},"reason":\#(reasons[index % 4]),"recordedBy":"\#(BenchData.gate[student.schoolID] ?? "")"}"#
        return (
            "registration",
            status(
                of: session.post(
                    "\(url)/v1/schools/\(student.schoolID)/guidances", headers: gateHeaders(student.schoolID), body: Array(body.utf8)))
        )
    }
    writeLatencies(results)
    let latencies = results.filter { $0.status == 202 }.map(\.milliseconds).sorted()
    let errors = results.count - latencies.count
    let took = (timer.now - started).seconds
    report(
        String(
            format: "load: %d POSTs in %.1f s (%.0f/s), %d errors, 202 latency p50 %.1f ms, p99 %.1f ms",
            results.count, took, Double(results.count) / took, errors, percentile(latencies, 0.5), percentile(latencies, 0.99)))
}

func status(of result: HTTPResult) -> Int {
    if case .answered(let status, _, _) = result { return status }
    return 0
}

/// One request of a morning: a registration (deleted again right after when
/// `deletes`), or a 봉사 record.
struct MorningStep: Sendable {
    let at: Duration
    let student: Student
    let service: Bool
    let deletes: Bool
}

/// A school morning compressed into `--seconds` (60): each school's gate
/// opens at its own time within the first third and stays open for the
/// other two thirds, its registrations (20-40 a school, `--per-school` on
/// average) thickest in the middle of its window, as the hour 07:30-08:30
/// is; one in `--delete-every` (33) is deleted again at once (recorded by
/// mistake), and each school's volunteer-duty teacher records one 봉사.
func benchMorning() async throws {
    guard let url = options.string("url") else {
        report("morning needs --url")
        exit(2)
    }
    let seconds = Double(options.int("seconds", 60))
    let perSchool = options.int("per-school", 30)
    let deleteEvery = options.int("delete-every", 33)
    var random = SeededGenerator(seed: 20_261_204)
    let bySchool = Dictionary(grouping: BenchData.students, by: \.schoolID)
    var steps: [MorningStep] = []
    for school in bySchool.keys.sorted() {
        let students = bySchool[school]!
        let opens = Double.random(in: 0..<seconds / 3, using: &random)
        let length = seconds * 2 / 3
        func anytime(_ random: inout SeededGenerator) -> Duration {
            .seconds(opens + length * (Double.random(in: 0..<1, using: &random) + Double.random(in: 0..<1, using: &random)) / 2)
        }
        for _ in 0..<Int.random(in: perSchool - 10...perSchool + 10, using: &random) {
            steps.append(
                MorningStep(
                    at: anytime(&random), student: students.randomElement(using: &random)!, service: false,
                    deletes: Int.random(in: 0..<deleteEvery, using: &random) == 0))
        }
        steps.append(MorningStep(at: anytime(&random), student: students.randomElement(using: &random)!, service: true, deletes: false))
    }
    steps.sort { $0.at < $1.at }
    let plan = steps
    let volunteer = Dictionary(
        roster.teachers.values.filter { $0.has(.volunteerDuty) }.map { ("\($0.schoolID)/\($0.grade ?? 0)", $0.id) }, uniquingKeysWith: min)
    let reasons = [#"{"code":"noShoes"}"#, #"{"code":"wrongClothes"}"#, #"{"code":"trespassing"}"#, #"{"code":"others","detail":"bench"}"#]
    let results = await sendPaced(total: plan.count, connections: options.int("connections", 32), due: { plan[$0].at }) {
        session, index in
        let step = plan[index]
        let (student, school) = (step.student, step.student.schoolID)
        if step.service {
            let teacher = volunteer["\(school)/\(student.grade)"] ?? ""
            let today = Timestamp.localDate(wallClock(), in: roster.school(school)!.timeZone)
            let body = #"{"serviceId":"\#(RandomID.uuid())","date":"\#(today)","sessions":1}"#
            let headers = [("Content-Type", "application/json"), ("Authorization", "Bearer demo-\(teacher)")]
            let answer = session.post(
                "\(url)/v1/schools/\(school)/grades/\(student.grade)/students/\(student.id)/service", headers: headers,
                body: Array(body.utf8))
            return ("service", status(of: answer))
        }
        let body =
            #"{"student":{"grade":\#(student.grade),"classNumber":\#(student.classNumber),"number":\#(student.number)},"reason":\#(reasons[index % 4])}"#
        let answer = session.post("\(url)/v1/schools/\(school)/guidances", headers: gateHeaders(school), body: Array(body.utf8))
        guard step.deletes, case .answered(202, _, let reply) = answer,
            let id = reply.firstMatch(of: /"guidanceId":"([0-9a-f-]+)"/)?.1
        else { return ("registration", status(of: answer)) }
        let deleted = session.send(
            "DELETE", "\(url)/v1/schools/\(school)/grades/\(student.grade)/guidances/\(id)", headers: gateHeaders(school), body: [],
            maxBody: nil)
        return ("registration+deletion", status(of: deleted))
    }
    writeLatencies(results)
    let failed = results.filter { !(200..<300).contains($0.status) }
    let registrations = results.filter { $0.kind.hasPrefix("registration") }.map(\.milliseconds).sorted()
    var perSecond: [Int: Int] = [:]
    for result in results { perSecond[Int(result.sent), default: 0] += 1 }
    report(
        String(
            format:
                "morning: %d schools, %d registrations (%d deleted again), %d service records in %.0f s, peak %d requests/s, %d failed (%@); latency p50 %.1f ms, p99 %.1f ms",
            bySchool.count, registrations.count, results.filter { $0.kind == "registration+deletion" }.count,
            results.filter { $0.kind == "service" }.count, seconds, perSecond.values.max() ?? 0, failed.count,
            Set(failed.map { "\($0.kind) \($0.status)" }).sorted().joined(separator: ", "), percentile(registrations, 0.5),
            percentile(registrations, 0.99)))
}

/// A school's roster version applied on the roster of `ROSTER_DIR` (a
/// district's, from scripts/make-roster.py): how long each takes (the whole
/// directory is rebuilt), one school at a time and all of them in one batch
/// (a poll of the roster log), and the resident memory before and after.
func benchRoster() {
    let count = min(options.int("versions", 50), roster.schools.count)
    let live = LiveRoster(roster)
    let schools = roster.schools.keys.sorted().prefix(count)
    // Each school's students one class along (a March: every seat changes), ids kept.
    func version(_ school: String, _ number: Int) -> RosterVersion {
        let students = roster.students(school: school)
        var json = JSONWriter(capacity: students.count * 100)
        json.field("schemaVersion", 1)
        json.field("schoolId", school)
        json.field("version", number)
        json.field("madeBy", "bench")
        json.field("madeAt", "2027-03-02T07:00:00Z")
        json.array("students", students) { writer, student in
            writer.field("studentId", student.id)
            writer.field("grade", student.grade)
            writer.field("class", student.classNumber + 100)
            writer.field("number", student.number)
            writer.field("name", student.name)
        }
        return try! RosterVersion(json: json.finish())
    }
    let before = residentMegabytes()
    var took: [Double] = []
    for school in schools {
        let made = version(school, 1)
        let started = timer.now
        precondition(live.apply([made]).isEmpty)
        took.append((timer.now - started).seconds * 1000)
    }
    // Then every school again, 200 at a time as the roster log's polls hand them over.
    let started = timer.now
    for chunk in Array(schools).chunks(of: 200) {
        precondition(live.apply(chunk.map { version($0, 2) }).isEmpty)
    }
    let batchSeconds = (timer.now - started).seconds
    Memory.releaseFreePages()
    took.sort()
    report(
        String(
            format:
                "roster: %d schools, %d students; a version applied alone: median %.0f ms, max %.0f ms; %d more in polls of 200: %.2f s; RSS %d → %d MiB",
            roster.schools.count, roster.studentCount, took[took.count / 2], took.last ?? 0, schools.count, batchSeconds, before,
            residentMegabytes()))
}

/// The district's March morning (issue 69), compressed into `--seconds`:
/// every school of `ROSTER_DIR` applies its new school year (every student
/// a grade up, 3학년 gone, a new 1학년), each at its own moment, through the
/// roster log as 관리 → 명부 does, while the gates record at `--rate` a
/// second into an ingest beside a notifier (both in this process, on a mock
/// cluster). Prints how long each version took to be served by each service
/// after its publisher's broker acknowledged it, and what became of every
/// registration answered 202: listed by the notifier, under the seat it was
/// posted for, naming a student who sat there in one of the two years.
func benchMarch() async throws {
    let seconds = Double(options.int("seconds", 60))
    let rate = options.int("rate", 200)
    let (cluster, topics) = try newCluster()
    let kafka = KafkaConfig(bootstrapServers: cluster.bootstrapServers)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try options.string("store").map(StoreLocation.parse) ?? .sqlite(path: directory.appendingPathComponent("march.db").path)
    let (ingest, notifier) = try await startServices(cluster, topics, store: store, group: "bench-march")
    // The admins' side: a roster log of its own, as guidance-admin has.
    let producer = try Producer(config: ProducerConfig(kafka: kafka, clientID: "bench-admins"), logger: quiet)
    let admins = RosterLog(
        topic: topics.roster, kafka: kafka, producer: producer, roster: LiveRoster(roster, logger: quiet), clock: wallClock, logger: quiet)
    let parts = Parts([[admins.part]], logger: quiet)
    try await parts.start()
    _ = await admins.readToEnd(atMost: .seconds(30))

    // Each school's new year: its students a grade up, ids kept; 3학년 graduate; a new 1학년 in last year's 1학년 seats.
    let schools = roster.schools.keys.sorted()
    func newYear(_ school: String) -> [Student] {
        let now = roster.students(school: school)
        return now.filter { $0.grade < 3 }.map {
            Student(
                schoolID: school, id: $0.id, grade: $0.grade + 1, classNumber: $0.classNumber, number: $0.number, name: $0.name,
                photoURL: "")
        }
            + now.filter { $0.grade == 1 }.map {
                Student(
                    schoolID: school, id: "n\($0.classNumber)-\($0.number)", grade: 1, classNumber: $0.classNumber, number: $0.number,
                    name: "신입\($0.classNumber)-\($0.number)", photoURL: "")
            }
    }
    // Who may sit at a seat in either year, by school and seat.
    var sitters: [String: [String: Set<String>]] = [:]
    for school in schools {
        for student in roster.students(school: school) + newYear(school) {
            sitters[school, default: [:]]["\(student.grade)-\(student.classNumber)-\(student.number)", default: []].insert(student.id)
        }
    }
    let state = MarchState()
    let watching = Task {
        while !Task.isCancelled {
            let now = timer.now
            state.seen.withLock { seen in
                for (school, times) in seen where times.ingest == nil || times.notifier == nil {
                    var times = times
                    if times.ingest == nil && ingest.roster.version(of: school) >= 1 { times.ingest = (now - times.published).seconds }
                    if times.notifier == nil && notifier.roster.version(of: school) >= 1 {
                        times.notifier = (now - times.published).seconds
                    }
                    seen[school] = times
                }
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
    // The gates: paced registrations to any seat of any school, each with its id, while the admins apply.
    var random = SeededGenerator(seed: 20_270_302)
    let seats = BenchData.students.map { ($0.schoolID, $0.grade, $0.classNumber, $0.number) }
    let plan = (0..<Int(seconds) * rate).map { _ in (seats.randomElement(using: &random)!, RandomID.uuid()) }
    let url = "http://127.0.0.1:\(ingest.port)"
    async let gates = sendPaced(
        total: plan.count, connections: options.int("connections", 32), due: { .seconds(Double($0) / Double(rate)) }
    ) {
        session, index in
        let ((school, grade, classNumber, number), id) = plan[index]
        let body =
            #"{"guidanceId":"\#(id)","student":{"grade":\#(grade),"classNumber":\#(classNumber),"number":\#(number)},"reason":{"code":"noShoes"}}"#
        let answer = session.post("\(url)/v1/schools/\(school)/guidances", headers: gateHeaders(school), body: Array(body.utf8))
        let code = status(of: answer)
        if code == 202 { state.accepted.withLock { $0[id] = (school, "\(grade)-\(classNumber)-\(number)") } }
        return ("registration", code)
    }
    // The admins: each school's version at its own moment of the compressed hour, 16 at a time.
    let started = timer.now
    let order = schools.shuffled(using: &random)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<16 {
            group.addTask {
                for index in stride(from: worker, to: order.count, by: 16) {
                    let at = started + .seconds(seconds * 0.9 * Double(index) / Double(order.count))
                    if at > .now { try await Task.sleep(until: at) }
                    let school = order[index]
                    let version = RosterVersion(
                        schoolId: school, version: 1, students: newYear(school), madeBy: "bench", madeAt: Timestamp.format(wallClock()))
                    let sent = timer.now
                    state.seen.withLock { $0[school] = (sent, nil, nil) }
                    _ = try await admins.publish(version, timeout: .seconds(60))
                }
            }
        }
        try await group.waitForAll()
    }
    let results = await gates
    let deadline = timer.now + .seconds(120)
    while timer.now < deadline, state.seen.withLock({ $0.values.contains { $0.ingest == nil || $0.notifier == nil } }) {
        try await Task.sleep(for: .milliseconds(50))
    }
    watching.cancel()
    // What the notifier stored: every school's list of today, as its admin reads it.
    let kept = state.accepted.withLock { $0 }
    var listed: [String: (seat: String, student: String)] = [:]
    let client = BenchClient()
    let notifierURL = "http://127.0.0.1:\(notifier.port)"
    let waitUntil = timer.now + .seconds(120)
    for school in Set(kept.values.map(\.school)).sorted() {
        let today = Timestamp.localDate(wallClock(), in: roster.school(school)!.timeZone)
        let expected = kept.values.count { $0.school == school }
        while true {
            let (code, data) = try await client.send(
                "GET", "\(notifierURL)/v1/schools/\(school)/guidances?date=\(today)&scope=school&limit=1000", body: nil,
                token: roster.authenticationEnabled ? "demo-\(school)-t-admin" : nil)
            let items = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["items"] as? [[String: Any]] ?? []
            if code == 200 && items.count >= expected || timer.now > waitUntil {
                for item in items {
                    guard let id = item["guidanceId"] as? String, let student = item["student"] as? [String: Any] else { continue }
                    listed[id] = (
                        "\(student["grade"] ?? 0)-\(student["classNumber"] ?? 0)-\(student["number"] ?? 0)", "\(student["studentId"] ?? "")"
                    )
                }
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
    let lost = kept.keys.filter { listed[$0] == nil }.count
    let wrongSeat = kept.filter { id, posted in listed[id].map { $0.seat != posted.seat } ?? false }.count
    let stranger = kept.filter { id, posted in
        listed[id].map { !(sitters[posted.school]?[posted.seat]?.contains($0.student) ?? false) } ?? false
    }.count
    let times = state.seen.withLock { $0.values }
    let ingestTimes = times.compactMap(\.ingest).sorted()
    let notifierTimes = times.compactMap(\.notifier).sorted()
    let failed = results.filter { $0.status != 202 && $0.status != 422 }.count
    report(
        String(
            format:
                "march: %d schools (%d students) rolled over in %.0f s while %d registrations were answered 202 (%d refused 422 for a seat of one year only, %d failed); version served, from its publishing: ingest p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d of %d); notifier p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d of %d); registrations lost %d, under a wrong seat %d, naming a student of neither year %d; RSS %d MiB",
            schools.count, roster.studentCount, (timer.now - started).seconds, kept.count,
            results.filter { $0.status == 422 }.count, failed, percentile(ingestTimes, 0.5) * 1000, percentile(ingestTimes, 0.99) * 1000,
            (ingestTimes.last ?? .nan) * 1000, ingestTimes.count, schools.count, percentile(notifierTimes, 0.5) * 1000,
            percentile(notifierTimes, 0.99) * 1000, (notifierTimes.last ?? .nan) * 1000, notifierTimes.count, schools.count, lost,
            wrongSeat, stranger, residentMegabytes()))
    await parts.stop()
    producer.close()
    await notifier.shutdown()
    await ingest.shutdown()
    withExtendedLifetime(cluster) {}
}

/// What the march's tasks share: when each school's version was published
/// and first served by each service (seconds after), and the registrations
/// answered 202 with the seat they were posted for.
final class MarchState: Sendable {
    let seen = Mutex<[String: (published: ContinuousClock.Instant, ingest: Double?, notifier: Double?)]>([:])
    let accepted = Mutex<[String: (school: String, seat: String)]>([:])
}

/// This process's resident memory, from /proc.
func residentMegabytes() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
}

switch options.command {
case "roster": benchRoster()
case "march": try await benchMarch()
case "load": try await benchLoad()
case "morning": try await benchMorning()
case "kafka": try await benchKafka()
case "apply": try await benchApply()
case "e2e": try await benchEndToEnd()
case "all":
    try await benchKafka()
    try await benchApply()
    try await benchEndToEnd()
default:
    report("unknown benchmark '\(options.command)'; one of kafka, apply, e2e, all")
    exit(2)
}
