import Access
import Common
import Crypto
import DeadLetters
import Foundation
import Guidance
import Ingest
import Kafka
import Sessions
import Store
import Uploads

/// Operator commands:
///
///     guidance-admin token issue TEACHER_ID    prints a new token once; tokens.csv keeps its SHA-256
///     guidance-admin token revoke TEACHER_ID   removes every token of that teacher (and ends the sessions it signed in)
///     guidance-admin session revoke TEACHER_ID signs the teacher out on every device, on both services
///     guidance-admin dlq replay [--dry-run] [--reason TEXT] [--partition N] [--from OFFSET] [--to OFFSET]
///                                              re-publishes dead letters to the topic they came from
///     guidance-admin purge [--dry-run]         removes now what is past RETENTION_DAYS / ACCESS_LOG_DAYS
///                                              (what the notifier does daily), and says what went
///     guidance-admin vapid                     prints a new VAPID key pair for Web Push (VAPID_PRIVATE_KEY)
///     guidance-admin roster students SCHOOL_ID FILE [--apply]
///                                              what a school's students file (CSV or XLSX, as 관리 → 명부 takes
///                                              it) changes; with --apply, the school's next roster version
///     guidance-admin roster teachers SCHOOL_ID FILE [--apply]
///     guidance-admin roster photos SCHOOL_ID ZIP [--apply]
///                                              the same for its teachers, and for a ZIP of photos named by 학번 or id
///     guidance-admin roster table SCHOOL_ID reasons|calendar|service-slots|rules FILE [--apply]
///                                              the same for one of the school's tables (관리 → 명부 → 학교 설정):
///                                              the file as the roster file's rows, school_id optional
///
/// Token commands change the roster folder (`ROSTER_DIR`); running services
/// pick the change up within seconds (or at once on SIGHUP). The replay reads `KAFKA_BOOTSTRAP_SERVERS` and `KAFKA_*` as the services do.
let usage = """
    usage: guidance-admin token issue TEACHER_ID
           guidance-admin token revoke TEACHER_ID
           guidance-admin session revoke TEACHER_ID
           guidance-admin dlq replay [--dry-run] [--reason TEXT] [--partition N] [--from OFFSET] [--to OFFSET]
           guidance-admin purge [--dry-run]
           guidance-admin vapid
           guidance-admin roster students SCHOOL_ID FILE [--apply]
           guidance-admin roster teachers SCHOOL_ID FILE [--apply]
           guidance-admin roster photos SCHOOL_ID ZIP [--apply]
           guidance-admin roster table SCHOOL_ID reasons|calendar|service-slots|rules FILE [--apply]
    (ROSTER_DIR names the roster folder, default examples/roster; KAFKA_BOOTSTRAP_SERVERS the brokers)
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("guidance-admin: \(message)\n".utf8))
    exit(1)
}

/// The admin's clock, made here once: the system's, for what it records.
let wallClock: @Sendable () -> Double = Timestamp.now
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "dlq" {
    await replayDeadLetters(Array(arguments.dropFirst()))
    exit(0)
}
if arguments.first == "purge" {
    purge(Array(arguments.dropFirst()))
    exit(0)
}
if arguments == ["vapid"] {
    // One key pair for every notifier replica: browsers subscribe with the
    // public key, and the notifier signs each push with the private one.
    let key = P256Key.generate()
    print("VAPID_PRIVATE_KEY=\(RandomID.base64url(key.privateKey ?? []))")
    print("# the public key browsers subscribe with (the notifier gives it to the app itself):")
    print("# \(RandomID.base64url(key.publicKey))")
    exit(0)
}
if arguments.first == "roster" {
    await roster(Array(arguments.dropFirst()))
    exit(0)
}
if arguments.first == "session" {
    await revokeSessions(Array(arguments.dropFirst()))
    exit(0)
}
guard arguments.count == 3, arguments[0] == "token", ["issue", "revoke"].contains(arguments[1]) else { fail(usage) }
let teacherID = arguments[2]
let directory = Environment()["ROSTER_DIR"] ?? "examples/roster"
let roster: Roster
do {
    roster = try Roster.load(from: directory)
} catch {
    fail("ROSTER_DIR=\(directory): \(error)")
}
guard let teacher = roster.teachers[teacherID] else { fail("no teacher '\(teacherID)' in \(directory)/teachers.csv") }
let file = URL(fileURLWithPath: directory).appendingPathComponent("tokens.csv")
let existing = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
var lines = existing.split(whereSeparator: \.isNewline).map(String.init)
let header = lines.first ?? "token_sha256,teacher_id"
let columns = header.split(separator: ",").map { $0.trimmingWhitespace() }
guard let teacherColumn = columns.firstIndex(of: "teacher_id"), columns.contains("token_sha256") else {
    fail("\(file.path) has no token_sha256,teacher_id header")
}
let rows = lines.dropFirst().filter { !$0.trimmingWhitespace().isEmpty }

/// Writes the file whole and renames it into place, so that a service
/// starting meanwhile reads the old file or the new one, never half. The
/// file holds who may sign in: a new one is the operator's alone (0600),
/// whatever the umask, and a rewrite keeps the mode the operator gave it.
func write(_ rows: [String]) {
    let temporary = file.path + ".tmp"
    var info = stat()
    let mode = stat(file.path, &info) == 0 ? info.st_mode & 0o777 : 0o600
    unlink(temporary)
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
    guard descriptor >= 0 else { fail("cannot write \(temporary): \(String(cString: strerror(errno)))") }
    let bytes = Array(([header] + rows).joined(separator: "\n").appending("\n").utf8)
    // The umask narrowed the mode given to open; fchmod sets it as it was.
    let written =
        fchmod(descriptor, mode) == 0 && bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) } == bytes.count
    let synced = written && fsync(descriptor) == 0
    close(descriptor)
    guard synced, rename(temporary, file.path) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        fail("cannot replace \(file.path): \(reason)")
    }
}

switch arguments[1] {
case "issue":
    let token = RandomID.base64url(RandomID.bytes(32))
    write(rows + ["\(SHA256.hex(SHA256.hash(utf8: token))),\(teacherID)"])
    if existing.isEmpty {
        FileHandle.standardError.write(Data("guidance-admin: created \(file.path): authentication is now ON for this roster\n".utf8))
    }
    FileHandle.standardError.write(
        Data(
            "guidance-admin: token for \(teacher.name) (\(teacherID), \(teacher.roleText), \(teacher.schoolID)); shown once, only its SHA-256 is kept. Running services take it within 10 s (kill -HUP: at once).\n"
                .utf8))
    print(token)
case "revoke":
    let kept = rows.filter { row in
        let fields = row.split(separator: ",", omittingEmptySubsequences: false)
        return fields.count <= teacherColumn || fields[teacherColumn].trimmingWhitespace() != teacherID
    }
    write(kept)
    print("revoked \(rows.count - kept.count) token(s) of \(teacherID); running services drop it within 5 s (kill -HUP: at once)")
default:
    fail(usage)
}

/// `dlq replay …`: shows (with --dry-run) or re-publishes the chosen letters.
func replayDeadLetters(_ arguments: [String]) async {
    guard arguments.first == "replay" else { fail(usage) }
    var selection = DeadLetterReplay.Selection()
    var dryRun = false
    var rest = arguments.dropFirst()[...]
    while let option = rest.popFirst() {
        func value() -> String {
            guard let value = rest.popFirst() else { fail("\(option) needs a value\n\(usage)") }
            return value
        }
        func number(_ text: String) -> Int64 {
            guard let number = Int64(text), number >= 0 else { fail("\(option) takes a whole number, not '\(text)'") }
            return number
        }
        switch option {
        case "--dry-run": dryRun = true
        case "--reason": selection.reasonContains = value()
        case "--partition": selection.partition = Int32(clamping: number(value()))
        case "--from": selection.fromOffset = number(value())
        case "--to": selection.toOffset = number(value())
        default: fail("unknown option \(option)\n\(usage)")
        }
    }
    guard selection.fromOffset <= selection.toOffset else { fail("--from is after --to") }
    do {
        let kafka = try KafkaConfig.fromEnvironment(Environment())
        let replay = DeadLetterReplay(kafka: kafka, logger: Logger(component: "dlq-replay", level: .warning))
        let letters = try await replay.run(selection, dryRun: dryRun)
        for letter in letters { print(letter) }
        print(
            dryRun
                ? "\(letters.count) dead letter(s) would be replayed (dry run: nothing sent)" : "\(letters.count) dead letter(s) replayed")
    } catch {
        fail("\(error)")
    }
}

/// `session revoke TEACHER_ID`: every session of the teacher signed in
/// until now ends on every replica of both services (within a second).
func revokeSessions(_ arguments: [String]) async {
    guard arguments.count == 2, arguments[0] == "revoke" else { fail(usage) }
    let environment = Environment()
    let directory = environment["ROSTER_DIR"] ?? "examples/roster"
    guard let roster = try? Roster.load(from: directory) else { fail("cannot read the roster in ROSTER_DIR=\(directory)") }
    guard roster.teachers[arguments[1]] != nil else { fail("no teacher '\(arguments[1])' in \(directory)/teachers.csv") }
    do {
        let kafka = try KafkaConfig.fromEnvironment(environment)
        let topic = try WebSettings.fromEnvironment(environment).topic
        let producer = try Producer(
            config: ProducerConfig(kafka: kafka, clientID: "guidance-admin"), logger: Logger(component: "guidance-admin", level: .warning))
        let record = SessionLog.Record.signedOut(teacher: arguments[1], at: Int64(wallClock() * 1000))
        var failure: KafkaError?
        do {
            _ = try await producer.send(SessionLog.message(record, topic: topic))
        } catch {
            failure = error
        }
        // Closing waits for the polling thread: on the broker's threads.
        _ = try? await BlockingExecutor.broker.run { producer.close() }
        if let failure { throw failure }
        print("signed \(arguments[1]) out on every device; both services refuse the old sessions within a second")
    } catch {
        fail("\(error)")
    }
}

/// `purge [--dry-run]`: the notifier's daily purge, now, with the same
/// settings (`STORE_URL`, `ROSTER_DIR`, `RETENTION_DAYS`, `ACCESS_LOG_DAYS`).
func purge(_ arguments: [String]) {
    guard arguments.isEmpty || arguments == ["--dry-run"] else { fail(usage) }
    let dryRun = arguments == ["--dry-run"]
    let environment = Environment()
    let directory = environment["ROSTER_DIR"] ?? "examples/roster"
    do {
        let roster = try Roster.load(from: directory)
        let location = try StoreLocation.fromEnvironment(environment)
        let store = try location.open(clock: wallClock)
        let purger = Purger(
            store: store, retention: try Retention.fromEnvironment(environment), clock: wallClock,
            logger: Logger(component: "guidance-admin", level: .warning))
        let (report, oldest) = try purger.purge(roster: roster, dryRun: dryRun)
        let tables = ["guidances", "digests", "deliveries", "digest_runs", "pending_amendments", "access_log"]
        print(dryRun ? "would remove (dry run):" : "removed:")
        for table in tables { print("  \(table): \(report.removed[table] ?? 0)") }
        print("oldest day kept: \(oldest ?? "-")")
        if !dryRun {
            print(
                "in \(report.batches) batches, the longest holding the store's writer \(Int(report.longestBatchMilliseconds.rounded(.up))) ms"
            )
        }
    } catch {
        fail("\(error)")
    }
}

/// `roster students|teachers|photos SCHOOL_ID FILE [--apply]` and `roster
/// table SCHOOL_ID TABLE FILE [--apply]`: what 관리 → 명부 does, for an
/// operator and any school: the file read against the school's roster as
/// the services serve it (the folder with the roster log's versions), the
/// change printed by student or teacher id and seat (no names) or by row,
/// and with `--apply` published as the school's next version (photos: to
/// the photo log).
func roster(_ arguments: [String]) async {
    let table = arguments.first == "table" && arguments.count >= 4 ? SchoolTable(slug: arguments[2]) : nil
    let operands = ["students", "teachers", "photos"].contains(arguments.first ?? "") ? 3 : table != nil ? 4 : 0
    guard operands > 0, arguments.count == operands || (arguments.count == operands + 1 && arguments.last == "--apply") else {
        fail(usage)
    }
    let (school, path, apply) = (arguments[1], arguments[operands - 1], arguments.count > operands)
    let environment = Environment()
    let directory = environment["ROSTER_DIR"] ?? "examples/roster"
    let logger = Logger(component: "guidance-admin", level: .warning)
    do {
        let roster = LiveRoster(
            directory: directory, roster: try Roster.load(from: directory), clock: wallClock, logger: logger, metrics: Metrics())
        guard roster.current.school(school) != nil else { fail("no school '\(school)' in \(directory)/schools.csv") }
        guard let bytes = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
        let kafka = try KafkaConfig.fromEnvironment(environment)
        let producer = try Producer(config: ProducerConfig(kafka: kafka, clientID: "guidance-admin"), logger: logger)
        let log = RosterLog(topic: Topics().roster, kafka: kafka, producer: producer, roster: roster, clock: wallClock, logger: logger)
        let photoLog =
            arguments[0] == "photos" ? try PhotoLog(topic: Topics().photos, kafka: kafka, producer: producer, logger: logger) : nil
        let parts = Parts([[log.part] + (photoLog.map { [$0.part] } ?? [])], logger: logger)
        try await parts.start()
        guard await log.readToEnd(atMost: .seconds(30)) else { fail("the roster log was not read within 30 s: is Kafka reachable?") }
        let basedOn = log.latest(of: school)
        let current = roster.current
        // A 진급 version may wait for its day: the next is based on the newest.
        let state = "version \(roster.version(of: school)) in service, \(basedOn) the newest"
        var made: RosterVersion?
        if let photoLog {
            let upload = try RosterHandlers.photos(in: Array(bytes), school: school, roster: current)
            print("\(school): \(upload.matched.count) photos of its students in the ZIP")
            for item in upload.matched { print("  photo    \(item.file) -> \(item.student.id)") }
            for item in upload.refused { print("  refused  \(item.file): \(item.reason)") }
            if apply {
                guard !upload.matched.isEmpty else { fail("no photo matches a student; nothing applied") }
                try await photoLog.publish(upload.matched.map { PhotoLog.Photo(schoolId: school, studentId: $0.student.id, jpeg: $0.jpeg) })
                print("applied: every replica of both services serves the \(upload.matched.count) photos within a second")
            }
        } else if arguments[0] == "teachers" {
            let upload = try TeachersUpload.read(
                UploadedTable.rows(of: Array(bytes), file: path), school: school, current: current, uploader: nil)
            let duty = { (teacher: Teacher) in
                "\(teacher.id) \(teacher.roleText) \(teacher.grade.map(String.init) ?? "-")-\(teacher.classNumber.map(String.init) ?? "-")"
            }
            print("\(school): \(state); the file lists \(upload.teachers.count) teachers")
            for teacher in upload.added { print("  new      \(duty(teacher))") }
            for teacher in upload.left { print("  left     \(duty(teacher))") }
            for change in upload.changed { print("  changed  \(duty(change.before)) -> \(change.after.roleText)") }
            for refused in upload.refused { print("  refused  line \(refused.line): \(refused.reason)") }
            if let problem = upload.problem { print("  problem  \(problem)") }
            if apply && (!upload.refused.isEmpty || upload.problem != nil) { fail("the file cannot apply; nothing applied") }
            made = RosterVersion(
                schoolId: school, version: basedOn + 1, students: nil, teachers: upload.teachers,
                madeBy: "guidance-admin", madeAt: Timestamp.format(wallClock()))
        } else if let table {
            let text = try UploadedTable.csvText(Array(bytes))
            let change = try current.tableChange(table, of: school, text: text)
            print("\(school): \(state); the file's \(table.rawValue) has \(change.rows.count) rows")
            for row in change.added { print("  added    \(row.joined(separator: ","))") }
            for row in change.removed { print("  removed  \(row.joined(separator: ","))") }
            made = RosterVersion(
                schoolId: school, version: basedOn + 1, students: nil, tables: [table: text], madeBy: "guidance-admin",
                madeAt: Timestamp.format(wallClock()))
        } else {
            let upload = try StudentsUpload.read(UploadedTable.rows(of: Array(bytes), file: path), school: school, current: current)
            let seat = { (student: Student) in "\(student.id) \(student.grade)-\(student.classNumber)-\(student.number)" }
            print("\(school): \(state); the file seats \(upload.students.count) students")
            for student in upload.added { print("  new      \(seat(student))") }
            for student in upload.left { print("  left     \(seat(student))") }
            for change in upload.moved {
                print("  moved    \(seat(change.before)) -> \(change.after.grade)-\(change.after.classNumber)-\(change.after.number)")
            }
            for change in upload.renamed { print("  renamed  \(seat(change.after))") }
            for refused in upload.refused { print("  refused  line \(refused.line): \(refused.reason)") }
            if apply && !upload.refused.isEmpty { fail("\(upload.refused.count) rows are refused; nothing applied") }
            made = RosterVersion(
                schoolId: school, version: basedOn + 1, students: upload.students, madeBy: "guidance-admin",
                madeAt: Timestamp.format(wallClock()))
        }
        if let made, apply {
            let entry = try await log.publish(made)
            print("applied as version \(entry.version): every replica of both services serves it within a second")
        } else if !apply {
            print("nothing applied (add --apply" + (made == nil ? ")" : " to make it version \(basedOn + 1))"))
        }
        await parts.stop()
        // Closing waits for the polling thread: on the broker's threads.
        _ = try? await BlockingExecutor.broker.run { producer.close() }
    } catch {
        fail("\(error)")
    }
}
