import Common
import Guidance

/// The outbox: deliveries written with their digests, claimed by the
/// dispatchers of every replica under a lease, and their outcomes.
extension SQLStore {
    private static let deliveryColumns = """
        d.delivery_id, d.digest_id, d.school_id, d.teacher_id, d.channel, d.target, d.status, d.attempts,
        d.last_error, d.created_ms, d.next_attempt_ms, d.sent_ms
        """

    /// The statements writing the digests' pending deliveries, to run with
    /// them. A delivery held for the teacher (`DeliveryTarget.heldUntil`)
    /// is due then, and replaces the teacher's held deliveries of the same
    /// kind and channel (a list's day, a day's notices): it goes in their
    /// place and counts them, so that one message arrives, not a queue.
    static func enqueue(_ digests: [(digest: Digest, targets: [DeliveryTarget])], in database: any SQLDatabase) -> [SQLStatement] {
        struct Row {
            let id: String
            let digest: Digest
            let target: DeliveryTarget
            let created: Int64
            let due: Int64
            /// Teacher, channel and kind of a held one.
            var group: String? { due > created ? "\(digest.teacherId)/\(target.channel.rawValue)/\(kind)" : nil }
            var kind: String { "\(digest.scope.rawValue)/\(digest.date)" }
        }
        let rows = digests.flatMap { digest, targets in
            // Made by the service with its clock's time: one that did not read back is due at once.
            let created = milliseconds(Timestamp.parse(digest.createdAt) ?? 0)
            return targets.map { target in
                Row(
                    id: Delivery.id(digest: digest.digestId, channel: target.channel), digest: digest, target: target, created: created,
                    due: target.heldUntil.map(milliseconds).map { max($0, created) } ?? created)
            }
        }
        // Held ones of one group in this batch (two notices at once): the
        // last goes, counting the others, which are written as merged.
        var newest: [String: (id: String, earlier: Int)] = [:]
        for row in rows {
            guard let group = row.group else { continue }
            newest[group] = (row.id, (newest[group].map { $0.earlier + 1 }) ?? 0)
        }
        var held: [SQLStatement] = []
        let values = rows.map { row -> [SQLValue] in
            var (status, replacedBy, merged, kind) = ("pending", SQLValue.null, 0, SQLValue.null)
            if let group = row.group, let last = newest[group] {
                kind = .text(row.kind)
                if last.id == row.id {
                    merged = last.earlier
                    held += SQLStore.merging(
                        into: row.id, teacher: row.digest.teacherId, channel: row.target.channel, kind: kind, now: row.created)
                } else {
                    (status, replacedBy) = ("merged", .text("replaced by " + last.id))
                }
            }
            return [
                .text(row.id), .text(row.digest.digestId), .text(row.digest.schoolId), .text(row.digest.teacherId),
                .text(row.target.channel.rawValue), .text(row.target.target), .text(status), .integer(row.created), .integer(row.due),
                .integer(row.due), kind, .integer(row.target.urgent ? 1 : 0), .integer(Int64(merged)), replacedBy
            ]
        }
        return database.inserts(
            "INSERT INTO deliveries (delivery_id, digest_id, school_id, teacher_id, channel, target, status, created_ms, queued_ms, next_attempt_ms, kind, urgent, merged, last_error) VALUES ",
            rows: values, perStatement: database.rowsPerStatement) + held
    }

    /// After the held delivery `id` is written: it counts the teacher's other
    /// held deliveries of its kind and channel (and those they stood for),
    /// which end as `merged`. Only ones not yet due, so never one a
    /// dispatcher may hold.
    private static func merging(into id: String, teacher: String, channel: Channel, kind: SQLValue, now: Int64) -> [SQLStatement] {
        let others = """
            teacher_id = $1 AND channel = $2 AND kind = $3 AND status = 'pending' AND delivery_id <> $4 AND next_attempt_ms > $5
            """
        let parameters: [SQLValue] = [.text(teacher), .text(channel.rawValue), kind, .text(id), .integer(now)]
        return [
            SQLStatement(
                """
                UPDATE deliveries SET merged = merged + (SELECT COALESCE(SUM(merged + 1), 0) FROM deliveries WHERE \(others))
                WHERE delivery_id = $4
                """, parameters),
            SQLStatement(
                "UPDATE deliveries SET status = 'merged', last_error = 'replaced by ' || $4 WHERE \(others)", parameters)
        ]
    }

    /// Claims up to `limit` due deliveries of `channel` for `owner` until
    /// `leaseUntil`: pending, due by `now`, not leased by a live claim, and
    /// none of the schools `excluding` names (those whose sends already
    /// fill their share of the connections). Two dispatchers never hold the
    /// same delivery at once.
    package func claimDeliveries(
        channel: Channel, limit: Int, owner: String, now: Double, leaseUntil: Double, excluding schools: [String] = []
    ) throws(StoreError) -> [ClaimedDelivery] {
        try outbox.withLock { (database: inout any SQLDatabase) throws(StoreError) -> [ClaimedDelivery] in
            try database.transaction { () throws(StoreError) -> [ClaimedDelivery] in
                // PostgreSQL skips rows another replica is claiming right now;
                // SQLite has one writer, so its claim is alone anyway.
                let claimed = try database.query(
                    """
                    UPDATE deliveries SET lease_owner = $1, lease_until_ms = $2, claims = claims + 1
                    WHERE delivery_id IN (\(SQLStore.due(channel: "$3", now: "$4", limit: "$5", excluding: schools.indices.map { "$\($0 + 6)" }))\(database.skipLocked))
                    RETURNING delivery_id
                    """,
                    [
                        .text(owner), .integer(milliseconds(leaseUntil)), .text(channel.rawValue), .integer(milliseconds(now)),
                        .integer(Int64(limit))
                    ] + schools.map(SQLValue.text))
                guard !claimed.isEmpty else { return [] }
                let placeholders = (1...claimed.count).map { "$\($0)" }.joined(separator: ", ")
                let rows = try database.query(
                    """
                    SELECT \(SQLStore.deliveryColumns), d.queued_ms, d.claims, d.merged, d.urgent, \(SQLStore.digestColumns.split(separator: ",").map { "g." + $0.trimmingWhitespace() }.joined(separator: ", "))
                    FROM deliveries d JOIN digests g ON g.digest_id = d.digest_id
                    WHERE d.delivery_id IN (\(placeholders))
                    ORDER BY d.next_attempt_ms, d.delivery_id
                    """, claimed.map { $0[0] })
                return try rows.map { (row: [SQLValue]) throws(StoreError) -> ClaimedDelivery in
                    let delivery = SQLStore.delivery(row[0..<12])
                    // Each ended attempt was counted; a claim more than that
                    // is one whose sender never reported back.
                    let claims = row[13].int ?? 0
                    return ClaimedDelivery(
                        delivery: delivery, digest: try SQLStore.digest(row[16...]), queuedAt: seconds(row[12]),
                        takenOver: claims - 1 > delivery.attempts, merged: row[14].int ?? 0,
                        urgent: row[15].int == 1)
                }
            }
        }
    }

    /// The due deliveries a claim takes: the first due school's (leaving
    /// out `excluding`), both read in the due index's order. One school a
    /// claim, so that a batch sent over one connection never holds another
    /// school's message behind a slow endpoint. The school is compared as
    /// `school_id || ''`, which no index covers: with statistics older than
    /// the backlog, PostgreSQL would otherwise read the school's rows by
    /// `deliveries_by_school` and sort every pending one of them (a
    /// one-school district's whole backlog) to take the first few.
    static func due(channel: String, now: String, limit: String, excluding schools: [String] = []) -> String {
        let due = """
            channel = \(channel) AND status = 'pending' AND next_attempt_ms <= \(now)
              AND (lease_until_ms IS NULL OR lease_until_ms < \(now))
            """
        let others = schools.isEmpty ? "" : " AND school_id NOT IN (\(schools.joined(separator: ", ")))"
        return """
            SELECT delivery_id FROM deliveries
            WHERE \(due) AND school_id || '' = (
                SELECT school_id FROM deliveries WHERE \(due)\(others) ORDER BY next_attempt_ms, delivery_id LIMIT 1)
            ORDER BY next_attempt_ms, delivery_id LIMIT \(limit)
            """
    }

    /// Version 14. The due index ends with `delivery_id`, the claim's last
    /// sort key. Without it PostgreSQL sorted every pending delivery to
    /// claim 64, whenever its statistics were older than the backlog (a
    /// digest wave, with a year of sent ones in the table): 58–75 ms a
    /// claim at 49,000 pending, against 0.2–0.6 ms read in index order.
    static let claimOrder = """
        DROP INDEX IF EXISTS deliveries_due;
        CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(channel, status, next_attempt_ms, delivery_id);
        """

    /// Records attempts' outcomes in one transaction and ends `owner`'s
    /// leases on them. A `sent` is recorded even if the lease was lost
    /// meanwhile (the message went out); a retry or failure only while the
    /// delivery is still pending.
    package func record(_ outcomes: [(deliveryId: String, outcome: DeliveryOutcome)], owner: String, now: Double) throws(StoreError) {
        guard !outcomes.isEmpty else { return }
        try outbox.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            try database.transaction { () throws(StoreError) in
                for (deliveryId, outcome) in outcomes {
                    try SQLStore.record(outcome, deliveryId: deliveryId, owner: owner, now: now, in: database)
                }
            }
        }
    }

    private static func record(_ outcome: DeliveryOutcome, deliveryId: String, owner: String, now: Double, in database: any SQLDatabase)
        throws(StoreError)
    {
        switch outcome {
        case .sent:
            try database.run(
                """
                UPDATE deliveries SET status = 'sent', attempts = attempts + 1, sent_ms = $2, lease_owner = NULL, lease_until_ms = NULL
                WHERE delivery_id = $1 AND status <> 'sent'
                """, [.text(deliveryId), .integer(milliseconds(now))])
        case .retry(let error, let at):
            try database.run(
                """
                UPDATE deliveries SET attempts = attempts + 1, last_error = $3, next_attempt_ms = $4, lease_owner = NULL, lease_until_ms = NULL
                WHERE delivery_id = $1 AND lease_owner = $2 AND status = 'pending'
                """, [.text(deliveryId), .text(owner), .text(error), .integer(milliseconds(at))])
        case .failed(let error):
            try database.run(
                """
                UPDATE deliveries SET status = 'failed', attempts = attempts + 1, last_error = $3, lease_owner = NULL, lease_until_ms = NULL
                WHERE delivery_id = $1 AND lease_owner = $2 AND status = 'pending'
                """, [.text(deliveryId), .text(owner), .text(error)])
        }
    }

    /// Moves the lease of `owner`'s pending claims among `deliveryIds` to
    /// `until`: a send waiting for its answer keeps its claim.
    package func extendLeases(deliveryIds: [String], owner: String, until: Double) throws(StoreError) {
        guard !deliveryIds.isEmpty else { return }
        try outbox.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            let placeholders = (3...deliveryIds.count + 2).map { "$\($0)" }.joined(separator: ", ")
            try database.run(
                """
                UPDATE deliveries SET lease_until_ms = $2
                WHERE lease_owner = $1 AND status = 'pending' AND delivery_id IN (\(placeholders))
                """, [.text(owner), .integer(milliseconds(until))] + deliveryIds.map(SQLValue.text))
        }
    }

    /// Gives back claims that were never attempted (a stopping dispatcher).
    package func release(deliveryIds: [String], owner: String) throws(StoreError) {
        guard !deliveryIds.isEmpty else { return }
        try outbox.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            let placeholders = (2...deliveryIds.count + 1).map { "$\($0)" }.joined(separator: ", ")
            try database.run(
                """
                UPDATE deliveries SET lease_owner = NULL, lease_until_ms = NULL, claims = claims - 1
                WHERE lease_owner = $1 AND status = 'pending' AND delivery_id IN (\(placeholders))
                """, [.text(owner)] + deliveryIds.map(SQLValue.text))
        }
    }

    /// A school's deliveries, newest first, at most `limit`.
    package func deliveries(school: String, status: Delivery.Status?, limit: Int) throws(StoreError) -> [Delivery] {
        try readers.withConnection { (database: inout any SQLDatabase) throws(StoreError) in
            try database.query(
                """
                SELECT \(SQLStore.deliveryColumns) FROM deliveries d
                WHERE d.school_id = $1 AND (CAST($2 AS TEXT) IS NULL OR d.status = CAST($2 AS TEXT))
                ORDER BY d.created_ms DESC, d.delivery_id LIMIT $3
                """, [.text(school), status.map { .text($0.rawValue) } ?? .null, .integer(Int64(limit))]
            ).map { SQLStore.delivery($0[...]) }
        }
    }

    /// Puts a failed delivery of `school` back in the queue, due at `now`.
    package func requeue(school: String, deliveryId: String, now: Double) throws(StoreError) -> RequeueResult {
        try outbox.withLock { (database: inout any SQLDatabase) throws(StoreError) -> RequeueResult in
            let changed = try database.run(
                """
                UPDATE deliveries SET status = 'pending', next_attempt_ms = $3, queued_ms = $3, lease_owner = NULL, lease_until_ms = NULL
                WHERE school_id = $1 AND delivery_id = $2 AND status = 'failed'
                """, [.text(school), .text(deliveryId), .integer(milliseconds(now))])
            if changed > 0 { return .requeued }
            let rows = try database.query(
                "SELECT status FROM deliveries WHERE school_id = $1 AND delivery_id = $2", [.text(school), .text(deliveryId)])
            guard let status = rows.first?.first?.string.flatMap(Delivery.Status.init(rawValue:)) else { return .notFound }
            return .notFailed(status)
        }
    }

    /// Those of `channels` with pending deliveries: how many, and since when.
    package func deliveryBacklog(of channels: [Channel]) throws(StoreError) -> [DeliveryBacklog] {
        try outbox.withLock { (database: inout any SQLDatabase) throws(StoreError) in
            var backlog: [DeliveryBacklog] = []
            for channel in channels {
                guard let row = try database.query(SQLStore.pendingOfChannel, [.text(channel.rawValue)]).first,
                    let pending = row[0].int, pending > 0
                else { continue }
                backlog.append(
                    DeliveryBacklog(channel: channel, pending: pending, oldestCreatedAt: row[1] == .null ? nil : seconds(row[1])))
            }
            return backlog
        }
    }

    /// A channel's pending deliveries, found through `deliveries_due` by
    /// channel and status. A `GROUP BY channel` over every status read the
    /// whole index, every delivery ever sent, every 5 s: 109 ms with a school
    /// year's 1,064,000 deliveries, against 0.06 ms for both channels so.
    static let pendingOfChannel = "SELECT COUNT(*), MIN(created_ms) FROM deliveries WHERE channel = $1 AND status = 'pending'"

    /// A delivery from the columns `deliveryColumns` names.
    private static func delivery(_ row: ArraySlice<SQLValue>) -> Delivery {
        let row = Array(row)
        let status = row[6].string.flatMap(Delivery.Status.init(rawValue:)) ?? .pending
        return Delivery(
            deliveryId: row[0].string ?? "", digestId: row[1].string ?? "", schoolId: row[2].string ?? "", teacherId: row[3].string ?? "",
            channel: Channel(rawValue: row[4].string ?? ""), target: row[5].string ?? "", status: status,
            attempts: row[7].int ?? 0, lastError: row[8].string, createdAt: seconds(row[9]),
            nextAttemptAt: status == .pending ? seconds(row[10]) : nil, sentAt: row[11] == .null ? nil : seconds(row[11]))
    }

}

func milliseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1000).rounded()) }
fileprivate func seconds(_ value: SQLValue) -> Double { Double(value.int ?? 0) / 1000 }
