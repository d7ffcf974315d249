import Common
import Foundation
import Guidance
import Kafka
import Store
import Synchronization

/// Runs the cutoff procedure of docs/design.md for a batch of schools: capture the
/// high watermarks of the events topics, wait until the group's committed offsets
/// reach them, then let the store write each school's digests in one
/// transaction. The store's uniqueness of `(teacher, school, date, scope,
/// revision)` decides between replicas; a rerun finds nothing new to say.
final class DigestRunner: Sendable {
    struct Run: Codable, Sendable {
        let schoolId: String
        let date: String
        let digests: Int
    }

    struct CutoffTimeout: Error, CustomStringConvertible {
        let behind: [TopicPartition: Int64]
        var description: String {
            "the consumer group did not catch up with the cutoff: "
                + behind.map { "\($0.key) \($0.value) behind" }.sorted().joined(separator: ", ")
        }
    }

    private let rosters: LiveRoster
    private let store: SQLStore
    private let dispatcher: Dispatcher
    /// The topics' ends and the group's committed offsets.
    private let offsets: OffsetsReader
    private let topics: Topics
    private let cutoffTimeout: Duration
    /// This replica's materializer rings it after each commit.
    private let commits: Doorbell
    /// Seconds since the epoch now; tests move it across days and DST.
    private let clock: @Sendable () -> Double
    /// What the cutoff's wait is measured on.
    private let timer: any Clock<Duration>
    private let metrics: Metrics
    private let logger: Logger
    /// Each school's latest date whose run this replica made or saw in the
    /// store: the schedule asks the store about a school once a day, not on
    /// every turn for the rest of the day (2,000 queries a turn in a
    /// province).
    private let ranThrough = Mutex<[String: String]>([:])
    /// Each teacher's (`school/teacher`) latest date whose own earlier list
    /// this replica wrote or found nothing to write for.
    private let earlyThrough = Mutex<[String: String]>([:])

    init(
        config: NotifierConfig, roster: LiveRoster, store: SQLStore, dispatcher: Dispatcher, commits: Doorbell, metrics: Metrics,
        logger: Logger
    ) throws(KafkaError) {
        rosters = roster
        self.commits = commits
        self.store = store
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.logger = logger
        topics = config.topics
        cutoffTimeout = config.cutoffTimeout
        clock = config.clock
        timer = config.timer
        offsets = try OffsetsReader(
            kafka: config.kafka, groupID: config.groupID, clientID: "guidance-notifier-cutoff", logger: logger.with(["part": "cutoff"]))
    }

    /// Warns when a topic has fewer partitions than replicas may need: a
    /// replica beyond the partition count would sit idle.
    func checkPartitions(expected: Int) async {
        let offsets = self.offsets
        let topics = self.topics.events
        do {
            let counts = try await BlockingExecutor.broker.run { try offsets.partitionCounts(of: topics) }
            for topic in topics {
                guard let count = counts[topic] else {
                    logger.warning("topic does not exist yet; ingest creates it", ["topic": topic])
                    continue
                }
                if count < expected {
                    logger.warning(
                        "topic has fewer partitions than TOPIC_PARTITIONS; replicas beyond \(count) stay idle",
                        ["topic": topic, "partitions": String(count), "wanted": String(expected)])
                }
            }
        } catch {
            logger.warning("could not read the topics' partition counts", ["error": "\(error)"])
        }
    }

    /// Why a digest run may not be asked for `date` (`YYYY-MM-DD`), given the
    /// school's `today`: it must be a date, at most a day ahead and at most
    /// `Registration.pastWindowDays` back. Nil when it may.
    static func dateProblem(_ date: String, today: String, pastDays: Int = Registration.pastWindowDays) -> String? {
        guard let asked = Timestamp.civilDay(date), let now = Timestamp.civilDay(today) else { return "must be YYYY-MM-DD" }
        let days = asked - now
        if days > 1 { return "must be at most one day after the school's today (\(today))" }
        if days < -pastDays {
            return
                "must be at most \(pastDays) days before the school's today (\(today)); older days are past RETENTION_DAYS or the 400-day window"
        }
        return nil
    }

    /// On a school day of a school with due dates, the school day before:
    /// its run lists the sessions that fell due since and were not served.
    static func overdueSince(_ date: String, of school: School) -> String? {
        guard school.service.dueDays != nil, school.calendar.isSchoolDay(date) else { return nil }
        return school.calendar.schoolDay(before: date)
    }

    /// The school-local date now.
    func today(for school: School) -> String {
        Timestamp.localDate(clock(), in: school.timeZone)
    }

    /// Waits once for the cutoff, then writes each school's digests for its
    /// date. One cutoff serves the whole batch: every event acknowledged
    /// before it is in the digests, and a later one is either in them too or
    /// makes an amendment (the store's day locks decide).
    func run(_ batch: [(school: School, date: String)]) async throws -> [Run] {
        guard !batch.isEmpty else { return [] }
        try await waitForCutoff()
        return try await writeDigests(batch).compactMap { try $0.get() }
    }

    /// How many schools share one store commit: one disk flush for them all,
    /// while the store's writer is held for a few tens of milliseconds.
    static let schoolsPerCommit = 20

    /// Writes the digests (or amendments) of each school and date, without
    /// waiting for a cutoff, `schoolsPerCommit` schools to a commit. Each
    /// school's outcome, in order; a failed commit fails its schools.
    /// `leavingOutRun`: a school whose run is in the store by the time its
    /// commit comes (another replica's) is left out, its outcome nil.
    /// `early`: the schools whose run is only these teachers' day lists, at
    /// their own time before the school's (the run itself stays due).
    private func writeDigests(
        _ batch: [(school: School, date: String)], leavingOutRun: Bool = false, early: [String: Set<String>] = [:]
    ) async -> [Result<Run?, any Error>] {
        // A busy day's run reads and renders tens of megabytes, freed at its
        // end: given back, so that resident memory is flat between runs. And
        // before it, what the morning's consuming freed: the run's pages then
        // come on top of what is held, not of what is held and was freed.
        Memory.releaseFreePages()
        defer { Memory.releaseFreePages() }
        var outcomes: [Result<Run?, any Error>] = []
        for chunk in batch.chunks(of: DigestRunner.schoolsPerCommit) {
            let store = self.store
            var ranElsewhere: Set<String> = []
            if leavingOutRun {
                ranElsewhere =
                    (try? await store.blocking {
                        try Set(chunk.filter { try store.runCompleted(school: $0.school.id, date: $0.date) }.map(\.school.id))
                    }) ?? []
            }
            let part = chunk.filter { !ranElsewhere.contains($0.school.id) }
            // The recipients of the roster in service now.
            let roster = rosters.current
            let planner = DigestPlanner(roster: roster)
            let dispatcher = self.dispatcher
            // The one clock of the service: a digest is due for delivery when it was written.
            let clock = self.clock
            var results: [Result<[Digest], StoreError>] = []
            do {
                // The dispatcher claims nothing while the commit writes (they
                // would contend for SQLite's one writer and the cores), and
                // sends this commit's deliveries while the next one writes.
                if !part.isEmpty {
                    results = try await dispatcher.holdingClaims {
                        try await store.blocking {
                            // Each teacher's 설정: e-mail or not, push, their own time and quiet hours, from the next list on.
                            let preferences = try store.deliveryPreferences(schools: part.map(\.school.id))
                            let runs = part.map { school, date in
                                let teachers = early[school.id]
                                return DeliveryRun(
                                    school: school.id, date: date, completedAt: Timestamp.format(clock()),
                                    weekly: teachers == nil && school.calendar.isWeekStart(date),
                                    overdueSince: teachers == nil ? DigestRunner.overdueSince(date, of: school) : nil,
                                    recordsRun: teachers == nil
                                ) { state in
                                    if let teachers {
                                        return planner.earlyPlan(
                                            school: school, date: date, state: state, teachers: teachers,
                                            createdAt: Timestamp.format(clock())
                                        ).map { digest in { digest } }
                                    }
                                    return planner.drafts(school: school, date: date, state: state, createdAt: Timestamp.format(clock()))
                                } targets: { digest in
                                    dispatcher.targets(for: digest, roster: roster, preferences: preferences, now: clock())
                                }
                            }
                            return try store.writeDigests(runs)
                        }
                    }
                }
            } catch {
                outcomes += chunk.map { ranElsewhere.contains($0.school.id) ? .success(nil) : .failure(error) }
                continue
            }
            var written = results.makeIterator()
            for (school, date) in chunk {
                guard !ranElsewhere.contains(school.id), let result = written.next() else {
                    outcomes.append(.success(nil))
                    continue
                }
                outcomes.append(
                    result.mapError { $0 as any Error }.map { digests in
                        dispatcher.written(digests, roster: roster)
                        metrics.increment("notifier_digests_written_total", help: "Digests written to inboxes.", by: Double(digests.count))
                        logger.info(
                            early[school.id] == nil ? "digest run" : "teachers' own earlier lists",
                            [
                                "school": school.id, "date": date, "digests": String(digests.count),
                                "amendments": String(digests.filter { $0.revision > 1 }.count)
                            ])
                        return Run(schoolId: school.id, date: date, digests: digests.count)
                    })
            }
        }
        return outcomes
    }

    /// Every school whose digest time has passed today (in its own time
    /// zone) and that has no run yet, behind one cutoff. Returns the school
    /// and date of each run it made.
    @discardableResult
    func runDueSchools() async -> [(school: String, date: String)] {
        var due: [(school: School, date: String)] = []
        let ran = ranThrough.withLock { $0 }
        for school in rosters.current.schools.values {
            let now = clock()
            guard Timestamp.local(now, in: school.timeZone).minuteOfDay >= school.digestMinute else { continue }
            let date = Timestamp.localDate(now, in: school.timeZone)
            guard ran[school.id] != date else { continue }
            do {
                let store = self.store
                if try await store.blocking({ try store.runCompleted(school: school.id, date: date) }) {
                    noteRan(school.id, date)
                } else {
                    due.append((school, date))
                }
            } catch {
                logger.error(
                    "could not check for a digest run; retrying at the next check", ["school": school.id, "date": date, "error": "\(error)"]
                )
            }
        }
        guard !due.isEmpty else { return [] }
        do {
            try await waitForCutoff()
        } catch {
            logger.error(
                "scheduled digest runs did not reach the cutoff; retrying at the next check",
                ["schools": String(due.count), "error": "\(error)"])
            return []
        }
        // Replicas share the work: each takes the schools in an order of its
        // own and leaves out those another replica ran meanwhile.
        let order = due.shuffled()
        var made: [(school: String, date: String)] = []
        for ((school, date), outcome) in zip(order, await writeDigests(order, leavingOutRun: true)) {
            switch outcome {
            case .success(nil): noteRan(school.id, date)
            case .success:
                noteRan(school.id, date)
                made.append((school.id, date))
            case .failure(let error):
                logger.error(
                    "scheduled digest run failed; retrying at the next check", ["school": school.id, "date": date, "error": "\(error)"])
            }
        }
        return made
    }

    /// Each teacher whose own time (설정) is before the school's and has
    /// come today: their day's list as it stands, behind one cutoff, once.
    /// The school's run later tells them what changed since, as an 정정.
    /// Returns how many lists it wrote.
    @discardableResult
    func runEarlyLists() async -> Int {
        let store = self.store
        let times: [(school: String, teacher: String, minute: Int)]
        do {
            times = try await store.blocking { try store.listTimes() }
        } catch {
            logger.error("could not read the teachers' own times; retrying at the next check", ["error": "\(error)"])
            return 0
        }
        let roster = rosters.current
        let done = earlyThrough.withLock { $0 }
        var due: [String: (school: School, date: String, teachers: Set<String>)] = [:]
        for (schoolID, teacher, minute) in times {
            guard let school = roster.school(schoolID) else { continue }
            let now = clock()
            let minuteNow = Timestamp.local(now, in: school.timeZone).minuteOfDay
            let date = Timestamp.localDate(now, in: school.timeZone)
            // Their time has come, the school's has not (a later own time is a delivery's hold).
            guard minute <= minuteNow, minuteNow < school.digestMinute, done[schoolID + "/" + teacher] != date else { continue }
            due[schoolID, default: (school, date, [])].teachers.insert(teacher)
        }
        guard !due.isEmpty else { return 0 }
        do {
            try await waitForCutoff()
        } catch {
            logger.error("teachers' own lists did not reach the cutoff; retrying at the next check", ["error": "\(error)"])
            return 0
        }
        let batch = due.values.map { (school: $0.school, date: $0.date) }
        var written = 0
        for ((school, date), outcome) in zip(batch, await writeDigests(batch, early: due.mapValues(\.teachers))) {
            switch outcome {
            case .success(let run):
                written += run?.digests ?? 0
                earlyThrough.withLock { ran in
                    for teacher in due[school.id]?.teachers ?? [] { ran[school.id + "/" + teacher] = date }
                }
            case .failure(let error):
                logger.error(
                    "teachers' own lists failed; retrying at the next check", ["school": school.id, "date": date, "error": "\(error)"])
            }
        }
        return written
    }

    private func noteRan(_ school: String, _ date: String) {
        ranThrough.withLock { ran in
            if ran[school].map({ $0 < date }) ?? true { ran[school] = date }
        }
    }

    /// Amendments for every date changed after its digests went out.
    func runAmendments() async {
        do {
            let store = self.store
            let pending = try await store.blocking { try store.pendingAmendments() }
            guard !pending.isEmpty else { return }
            let roster = rosters.current
            let due = pending.compactMap { school, date in roster.school(school).map { (school: $0, date: date) } }
            for outcome in await writeDigests(due) { _ = try outcome.get() }
        } catch {
            logger.error("amendment run failed; retrying at the next tick", ["error": "\(error)"])
        }
    }

    private func waitForCutoff() async throws {
        let offsets = self.offsets
        let topics = self.topics.events
        let cutoff = try await BlockingExecutor.broker.run { try offsets.endOffsets(of: topics) }
        let elapsed = Elapsed(timer)
        while true {
            let seen = commits.rings
            let committed = try await BlockingExecutor.broker.run { try offsets.committedOffsets(Array(cutoff.keys)) }
            var behind: [TopicPartition: Int64] = [:]
            for (partition, mark) in cutoff where mark > 0 {
                let done = (committed[partition] ?? nil) ?? 0
                if done < mark { behind[partition] = mark - done }
            }
            if behind.isEmpty { return }
            guard elapsed() < cutoffTimeout else { throw CutoffTimeout(behind: behind) }
            // Again after this replica's next commit; other replicas'
            // commits ring nothing here (the group's offsets are read from
            // the broker), so at least every 100 ms.
            await commits.wait(after: seen, atMost: .milliseconds(100), clock: timer)
            try Task.checkCancellation()
        }
    }
}
