import Access
import Common
import Crypto
import DeadLetters
import Foundation
import Guidance
import Kafka
import Sessions
import Store

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
    (ROSTER_DIR names the roster folder, default examples/roster; KAFKA_BOOTSTRAP_SERVERS the brokers)
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("guidance-admin: \(message)\n".utf8))
    exit(1)
}

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
        let record = SessionLog.Record.signedOut(teacher: arguments[1], at: Int64(Timestamp.now() * 1000))
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
        let store = try location.open(clock: Timestamp.now)
        let purger = Purger(
            store: store, retention: try Retention.fromEnvironment(environment), clock: Timestamp.now,
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
