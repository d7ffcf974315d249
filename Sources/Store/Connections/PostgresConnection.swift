import CPostgres
import Common
import Foundation

/// One PostgreSQL connection: the only code that calls `PQ*`. Blocking and
/// not thread-safe; the store serialises its use. A broken connection is
/// reset once before a statement fails.
///
/// Every wait is bounded, so a frozen server (stopped, or a network that
/// drops packets) costs at most `timeout` per statement rather than hanging
/// the caller: connecting has libpq's `connect_timeout`, and each statement
/// is sent asynchronously and waited for with poll(2) on the connection's
/// socket. A statement past its deadline breaks the connection (the server
/// may still run it; its transaction never commits), and the next one
/// reconnects.
final class PostgresConnection: SQLDatabase {
    private let connection: OpaquePointer
    private var timeout: Duration
    private var inTransaction = false
    /// After a statement timed out or a reconnect failed, calls fail at once
    /// until then, instead of each paying a connect timeout of its own.
    private var reconnectAfter: Duration?
    /// What deadlines are read on: the system's time, which poll(2) waits on.
    private let uptime = Uptime()
    /// Statements prepared on this session, by their text: each is parsed
    /// and planned once, not at every execution (apply went from about 15k
    /// to 20k events/s). A new session starts with none.
    private var prepared: [String: String] = [:]
    private var statementsPrepared = 0

    init(url: String, timeout: Duration = .seconds(5)) throws(StoreError) {
        self.timeout = timeout
        let seconds = max(1, timeout.components.seconds)
        let url = url.contains("connect_timeout=") ? url : url + (url.contains("?") ? "&" : "?") + "connect_timeout=\(seconds)"
        guard let connection = PQconnectdb(url) else { throw StoreError(.failed, "libpq: out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingWhitespace()
            PQfinish(connection)
            throw StoreError(.unavailable, "cannot connect to PostgreSQL: \(message)")
        }
        self.connection = connection
        // NOTICEs ("relation already exists, skipping") are not for operators.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit { PQfinish(connection) }

    /// The options libpq reads from `url` (user, password, host, port,
    /// dbname…), or libpq's reason it cannot.
    static func options(of url: String) -> Result<[String: String], StoreError> {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let reason = error.map { String(cString: $0).trimmingWhitespace() } ?? "out of memory"
            if let error { PQfreemem(error) }
            return .failure(StoreError(.failed, reason))
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return .success(values)
    }

    func execute(_ sql: String) throws(StoreError) {
        // A broken connection's transaction is over already: the server
        // rolls it back. Reconnecting just to say so would cost a connect.
        if sql == "ROLLBACK" && PQstatus(connection) == CONNECTION_BAD {
            inTransaction = false
            return
        }
        let result = try submit { PQsendQuery(connection, sql) }
        PQclear(result)
        if sql == "COMMIT" || sql == "ROLLBACK" { inTransaction = false }
    }

    func begin() throws(StoreError) {
        try execute("BEGIN")
        inTransaction = true
    }

    /// Repeatable read: every statement sees the snapshot the first took.
    func beginSnapshot() throws(StoreError) {
        try execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        inTransaction = true
    }

    var skipLocked: String { " FOR UPDATE SKIP LOCKED" }

    var keyedTable: String { "" }

    /// 13 parameters a registration: far under libpq's 65,535, and few
    /// statement texts.
    var rowsPerStatement: Int { 64 }

    func lockStatement(_ keys: [String], exclusive: Bool) -> SQLStatement? {
        let function = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"
        let values = keys.indices.map { "($\($0 + 1))" }.joined(separator: ", ")
        return SQLStatement("SELECT \(function)(hashtext(k)) FROM (VALUES \(values)) AS v(k)", keys.map { .text($0) })
    }

    @discardableResult
    func run(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> Int {
        let result = try execute(sql, parameters)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    func forEachRow(_ sql: String, _ parameters: [SQLValue], _ body: ([SQLValue]) throws(StoreError) -> Void) throws(StoreError) {
        let result = try execute(sql, parameters)
        defer { PQclear(result) }
        for row in 0..<PQntuples(result) {
            try body(PostgresConnection.row(row, of: result))
        }
    }

    private static func row(_ row: Int32, of result: OpaquePointer) -> [SQLValue] {
        (0..<PQnfields(result)).map { column in
            PQgetisnull(result, row, column) == 1 ? .null : .text(String(cString: PQgetvalue(result, row, column)))
        }
    }

    /// Parameters travel as C strings, and PostgreSQL's text cannot hold a
    /// NUL anyway: such a value is refused rather than stored cut short.
    private static func refuseNUL(_ parameters: [SQLValue]) throws(StoreError) {
        if parameters.contains(where: { $0.text?.utf8.contains(0) == true }) {
            throw StoreError(.invalidValue, "PostgreSQL cannot store text containing a NUL character")
        }
    }

    /// Sends the prepared statement `name` with `parameters` as C strings
    /// (strdup'd copies that live until the call returns); libpq's answer.
    private func sendPrepared(_ name: String, _ parameters: [SQLValue]) -> Int32 {
        let values: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.text.flatMap { strdup($0) } }
        defer { for value in values { free(value) } }
        let pointers: [UnsafePointer<CChar>?] = values.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { buffer in
            PQsendQueryPrepared(connection, name, Int32(buffer.count), buffer.baseAddress, nil, nil, 0)
        }
    }

    private func execute(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> OpaquePointer {
        try PostgresConnection.refuseNUL(parameters)
        func send(_ name: String) throws(StoreError) -> OpaquePointer {
            try submit { sendPrepared(name, parameters) }
        }
        do {
            return try send(statement(sql, parameters: parameters.count))
        } catch  where prepared[sql] == nil && !inTransaction {
            // The session was replaced while sending, and its statements
            // with it: prepared on the new one, sent once more.
            return try send(statement(sql, parameters: parameters.count))
        }
    }

    /// Sends every statement before reading any answer (libpq's pipeline
    /// mode): one round trip for all of them. Statements with parameters are
    /// prepared on this session first (once per text); the rest go as they
    /// are. When one fails, the server skips those after it; its error is
    /// thrown once the pipeline is read to its end.
    func pipeline(_ statements: [SQLStatement], row: (Int, [SQLValue]) throws(StoreError) -> Void) throws(StoreError) {
        // Nothing to send is no round trip (a run that records no run, a list written one at a time).
        guard !statements.isEmpty else { return }
        if PQstatus(connection) == CONNECTION_BAD && !inTransaction {
            try reconnect()
        }
        var names: [String?] = []
        for statement in statements {
            names.append(statement.parameters.isEmpty ? nil : try self.statement(statement.sql, parameters: statement.parameters.count))
        }
        for statement in statements { try PostgresConnection.refuseNUL(statement.parameters) }
        guard PQenterPipelineMode(connection) == 1 else {
            throw StoreError(
                .unavailable, "PostgreSQL: cannot enter pipeline mode: \(String(cString: PQerrorMessage(connection)).trimmingWhitespace())")
        }
        defer { endPipeline() }
        for (statement, name) in zip(statements, names) {
            let queued =
                name.map { sendPrepared($0, statement.parameters) }
                ?? PQsendQueryParams(connection, statement.sql, 0, nil, nil, nil, nil, 0)
            guard queued == 1 else { throw lost("PostgreSQL: \(String(cString: PQerrorMessage(connection)).trimmingWhitespace())") }
        }
        guard PQpipelineSync(connection) == 1 else {
            throw lost("PostgreSQL: \(String(cString: PQerrorMessage(connection)).trimmingWhitespace())")
        }
        let deadline = uptime.now + timeout
        var failure: StoreError?
        for index in statements.indices {
            guard let result = try nextResult(before: deadline) else { throw lost("PostgreSQL connection lost in a pipeline") }
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_PIPELINE_ABORTED:
                break
            case PGRES_TUPLES_OK where failure == nil:
                for number in 0..<PQntuples(result) { try row(index, PostgresConnection.row(number, of: result)) }
            default:
                failure = failure ?? error(of: result)
            }
            // The end of this statement's results.
            while let extra = try nextResult(before: deadline) { PQclear(extra) }
        }
        guard let sync = try nextResult(before: deadline) else { throw lost("PostgreSQL connection lost in a pipeline") }
        PQclear(sync)
        if let failure { throw failure }
    }

    /// Leaves pipeline mode. A pipeline read to its end leaves at once; one
    /// that failed midway (sending, or its deadline) closes the session,
    /// which the next statement replaces.
    private func endPipeline() {
        guard PQexitPipelineMode(connection) != 1 else { return }
        let socket = PQsocket(connection)
        if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        _ = PQconsumeInput(connection)
        inTransaction = false
    }

    /// The next result of a pipeline, or nil at the end of a statement's
    /// results; waits until `deadline`, after which the connection is shut.
    private func nextResult(before deadline: Duration) throws(StoreError) -> OpaquePointer? {
        while PQisBusy(connection) == 1 {
            let left = deadline - uptime.now
            guard left > .zero else { throw timedOut() }
            var poller = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.milliseconds + 1, 60_000))
            if poll(&poller, 1, milliseconds) < 0 && errno != EINTR { throw lost("PostgreSQL: poll failed") }
            guard PQconsumeInput(connection) == 1 else {
                throw lost("PostgreSQL: \(String(cString: PQerrorMessage(connection)).trimmingWhitespace())")
            }
        }
        return PQgetResult(connection)
    }

    /// A failure that ended the session: its transaction is over too.
    private func lost(_ message: String) -> StoreError {
        inTransaction = false
        return StoreError(.unavailable, message)
    }

    /// The name of `sql` prepared on this session, preparing it first if
    /// needed.
    private func statement(_ sql: String, parameters: Int) throws(StoreError) -> String {
        if PQstatus(connection) == CONNECTION_BAD && !inTransaction {
            try reconnect()
        }
        if let name = prepared[sql] { return name }
        // Never a name used before: when the session is replaced while this
        // statement is prepared, `prepared` starts again, and a name made
        // from its count was given twice on the new session (42P05).
        statementsPrepared += 1
        let name = "s\(statementsPrepared)"
        PQclear(try submit { PQsendPrepare(connection, name, sql, Int32(parameters), nil) })
        prepared[sql] = name
        return name
    }

    /// Sends a statement with `send` and waits for its result, resetting a
    /// broken connection once when no transaction is open (inside one, the
    /// caller retries the whole batch).
    private func submit(_ send: () -> Int32) throws(StoreError) -> OpaquePointer {
        if PQstatus(connection) == CONNECTION_BAD && !inTransaction {
            try reconnect()
        }
        var result = send() == 1 ? try awaitResult() : nil
        // Lost before or while answering (a restarted server, an ended
        // session: libpq may hand back an error result, not none).
        if PQstatus(connection) == CONNECTION_BAD && !inTransaction {
            if let lost = result { PQclear(lost) }
            try reconnect()
            result = send() == 1 ? try awaitResult() : nil
        }
        guard let result else {
            if PQstatus(connection) == CONNECTION_BAD { inTransaction = false }
            throw StoreError(.unavailable, "PostgreSQL: \(String(cString: PQerrorMessage(connection)).trimmingWhitespace())")
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let failure = error(of: result)
            PQclear(result)
            throw failure
        }
        return result
    }

    /// The error a failed result reports, classified by its SQLSTATE.
    private func error(of result: OpaquePointer) -> StoreError {
        let message = String(cString: PQresultErrorMessage(result)).trimmingWhitespace()
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
        if PQstatus(connection) == CONNECTION_BAD {
            // The transaction, if any, ended with the connection: the
            // caller retries it.
            return lost("PostgreSQL connection lost: \(message)")
        }
        if state == "26000" {
            // A statement prepared on a session that has since been
            // reset; prepared again on the retry.
            prepared = [:]
        }
        return StoreError(PostgresConnection.code(ofState: state), "PostgreSQL [\(state)]: \(message)")
    }

    /// What an SQLSTATE means for the caller: the server's condition
    /// (connection, transaction rollback, insufficient resources such as
    /// `53100 disk_full`, operator intervention, system and I/O errors, a
    /// read-only transaction, a lock not available) is `unavailable`;
    /// integrity constraints (class 23) and data exceptions (class 22) are
    /// the data's.
    static func code(ofState state: String) -> StoreError.Code {
        switch state.prefix(2) {
        case "23": return .conflict
        case "22": return .invalidValue
        case "08", "40", "53", "57", "58": return .unavailable
        default: return ["25006", "26000", "55P03", "55006"].contains(state) ? .unavailable : .failed
        }
    }

    private func reconnect() throws(StoreError) {
        if let reconnectAfter, uptime.now < reconnectAfter {
            throw StoreError(.unavailable, "PostgreSQL is unreachable; the next attempt to reconnect is at most \(timeout) away")
        }
        PQreset(connection)
        prepared = [:]
        guard PQstatus(connection) == CONNECTION_OK else {
            reconnectAfter = uptime.now + timeout
            throw StoreError(
                .unavailable, "cannot reconnect to PostgreSQL: \(String(cString: PQerrorMessage(connection)).trimmingWhitespace())")
        }
        reconnectAfter = nil
    }

    /// Past a statement's deadline: the connection is shut down so that
    /// libpq sees it broken, and reconnecting waits a while.
    private func timedOut() -> StoreError {
        let socket = PQsocket(connection)
        if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        _ = PQconsumeInput(connection)
        while let stale = PQgetResult(connection) { PQclear(stale) }
        reconnectAfter = uptime.now + timeout
        return lost("PostgreSQL did not answer within \(timeout)")
    }

    /// Whether the server answers a trivial query within a second: for
    /// readiness, which must not hang with the server.
    func probe() throws(StoreError) {
        let usual = timeout
        timeout = .seconds(1)
        defer { timeout = usual }
        _ = try query("SELECT 1", [])
    }

    /// The last result of the statement sent, waiting at most `timeout`;
    /// nil when the connection failed. Past the deadline the connection is
    /// shut down so that libpq sees it broken.
    private func awaitResult() throws(StoreError) -> OpaquePointer? {
        let deadline = uptime.now + timeout
        while PQisBusy(connection) == 1 {
            let left = deadline - uptime.now
            guard left > .zero else { throw timedOut() }
            var poller = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.milliseconds + 1, 60_000))
            if poll(&poller, 1, milliseconds) < 0 && errno != EINTR { return nil }
            guard PQconsumeInput(connection) == 1 else { return nil }
        }
        var last: OpaquePointer?
        while let next = PQgetResult(connection) {
            if let previous = last { PQclear(previous) }
            last = next
        }
        return last
    }
}
