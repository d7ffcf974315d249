/// A value bound to or read from SQL.
enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    /// PostgreSQL answers in text, so numbers are read from text too.
    var int: Int? {
        switch self {
        case .integer(let value): Int(value)
        case .text(let value): Int(value)
        default: nil
        }
    }

    var string: String? {
        switch self {
        case .text(let value): value
        case .integer(let value): String(value)
        default: nil
        }
    }

    /// The parameter as PostgreSQL's text format takes it; nil for NULL.
    var text: String? {
        switch self {
        case .null: nil
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): value
        }
    }
}

extension Optional where Wrapped == String {
    var sql: SQLValue { map(SQLValue.text) ?? .null }
}

extension Optional where Wrapped == Int {
    var sql: SQLValue { map { .integer(Int64($0)) } ?? .null }
}

/// A statement and its parameters, for a pipeline.
struct SQLStatement: Sendable {
    let sql: String
    let parameters: [SQLValue]

    init(_ sql: String, _ parameters: [SQLValue] = []) {
        self.sql = sql
        self.parameters = parameters
    }
}

/// One connection to a SQL database, as `SQLStore` uses it. Parameters are
/// written `$1`, `$2`…; SQL is kept to what SQLite and PostgreSQL share.
/// Not thread-safe: the store serialises each connection's use.
protocol SQLDatabase: AnyObject {
    /// Runs one statement and returns the rows changed.
    @discardableResult
    func run(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> Int
    /// Runs `statements` in order, as one round trip where the database has
    /// them (PostgreSQL's pipeline mode), handing each row to `row` with the
    /// index of its statement. The first failure is thrown; the statements
    /// after it did not run. No statements: nothing is sent.
    func pipeline(_ statements: [SQLStatement], row: (Int, [SQLValue]) throws(StoreError) -> Void) throws(StoreError)
    /// The statement that takes locks named `keys` until the transaction
    /// ends (see `lock`); nil where the database needs none.
    func lockStatement(_ keys: [String], exclusive: Bool) -> SQLStatement?
    /// Runs one query and hands each row to `body` as it is read, so that a
    /// large result is never held twice (as rows and as what they become).
    func forEachRow(_ sql: String, _ parameters: [SQLValue], _ body: ([SQLValue]) throws(StoreError) -> Void) throws(StoreError)
    func execute(_ sql: String) throws(StoreError)
    /// Starts a write transaction.
    func begin() throws(StoreError)
    /// Starts a read-only transaction whose statements all read one
    /// snapshot of the database.
    func beginSnapshot() throws(StoreError)
    /// Whether the database answers a trivial query, within about a second.
    func probe() throws(StoreError)
    /// How many rows one statement writes when many are due: a server
    /// database saves a round trip per row; SQLite, in process, has none to
    /// save and runs a small prepared statement fastest.
    var rowsPerStatement: Int { get }
    /// Appended to a claiming sub-select: rows another transaction has
    /// locked are skipped rather than waited for. Empty where a database has
    /// one writer at a time.
    var skipLocked: String { get }
    /// Appended to a table only ever found by its primary key or the key's
    /// leading columns:
    /// SQLite then keeps the rows in the key's B-tree (`WITHOUT ROWID`), one
    /// B-tree to write per row instead of two. Empty where tables are heaps.
    var keyedTable: String { get }
}

extension SQLDatabase {
    @discardableResult
    func run(_ sql: String) throws(StoreError) -> Int { try run(sql, []) }

    /// Runs one query and returns every row.
    func query(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> [[SQLValue]] {
        var rows: [[SQLValue]] = []
        try forEachRow(sql, parameters) { rows.append($0) }
        return rows
    }

    /// Runs one query and returns each row as `transform` makes it.
    func query<T>(_ sql: String, _ parameters: [SQLValue], as transform: ([SQLValue]) throws(StoreError) -> T) throws(StoreError) -> [T] {
        var values: [T] = []
        try forEachRow(sql, parameters) { (row: [SQLValue]) throws(StoreError) in values.append(try transform(row)) }
        return values
    }

    /// The statements inserting `rows` (each of the same width),
    /// `perStatement` rows to one: `head` is the statement up to `VALUES `,
    /// `tail` what follows the rows (an `ON CONFLICT` clause).
    func inserts(_ head: String, rows: [[SQLValue]], perStatement: Int, then tail: String = "") -> [SQLStatement] {
        guard let width = rows.first?.count else { return [] }
        return rows.chunks(of: perStatement).map { chunk in
            SQLStatement(
                head + SQLStore.placeholders(rows: chunk.count, width: width) + (tail.isEmpty ? "" : " " + tail), chunk.flatMap { $0 })
        }
    }

    /// Takes locks named `keys` until the transaction ends, in one round
    /// trip: shared locks coexist, an exclusive one waits for and excludes
    /// them. (An exclusive taker takes one key, so a shared taker of many
    /// cannot deadlock with it.)
    func lock(_ keys: [String], exclusive: Bool) throws(StoreError) {
        guard !keys.isEmpty, let statement = lockStatement(keys, exclusive: exclusive) else { return }
        _ = try query(statement.sql, statement.parameters)
    }

    /// Runs `statements` as one pipeline inside a savepoint (`row` as in
    /// `pipeline`, indexes counting from the first of `statements`): when
    /// one fails, only they are undone, and the failure is thrown.
    func savepoint(_ statements: [SQLStatement], row: (Int, [SQLValue]) throws(StoreError) -> Void = { _, _ in }) throws(StoreError) {
        do {
            try pipeline([SQLStatement("SAVEPOINT part")] + statements + [SQLStatement("RELEASE SAVEPOINT part")]) {
                (index: Int, values: [SQLValue]) throws(StoreError) in
                try row(index - 1, values)
            }
        } catch {
            try execute("ROLLBACK TO SAVEPOINT part")
            try execute("RELEASE SAVEPOINT part")
            throw error
        }
    }

    /// Runs `body` inside a savepoint: when it throws, what it did is
    /// undone and the error thrown.
    func savepoint<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("SAVEPOINT part")
        do {
            let value = try body()
            try execute("RELEASE SAVEPOINT part")
            return value
        } catch {
            try execute("ROLLBACK TO SAVEPOINT part")
            try execute("RELEASE SAVEPOINT part")
            throw error
        }
    }

    /// Runs `body` in one transaction, rolled back when it throws.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try begin()
        return try ending(body)
    }

    /// Runs `body`'s reads on one snapshot. Outside a transaction each
    /// statement reads the newest rows, so two statements of one answer can
    /// straddle a write: a list's totals from before a withdrawal, its
    /// records from after.
    func snapshot<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try beginSnapshot()
        return try ending(body)
    }

    /// Commits after `body`, or rolls back when it throws.
    private func ending<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
