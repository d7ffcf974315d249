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

/// One connection to a SQL database, as `SQLStore` uses it. Parameters are
/// written `$1`, `$2`…; SQL is kept to what SQLite and PostgreSQL share.
/// Not thread-safe: the store serialises each connection's use.
protocol SQLDatabase: AnyObject {
    /// Runs one statement and returns the rows changed.
    @discardableResult
    func run(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> Int
    /// Runs one query and hands each row to `body` as it is read, so that a
    /// large result is never held twice (as rows and as what they become).
    func forEachRow(_ sql: String, _ parameters: [SQLValue], _ body: ([SQLValue]) throws(StoreError) -> Void) throws(StoreError)
    func execute(_ sql: String) throws(StoreError)
    /// Starts a write transaction.
    func begin() throws(StoreError)
    /// Takes locks named `keys` until the transaction ends, in one round
    /// trip: shared locks coexist, an exclusive one waits for and excludes
    /// them. (An exclusive taker takes one key, so a shared taker of many
    /// cannot deadlock with it.)
    func lock(_ keys: [String], exclusive: Bool) throws(StoreError)
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

    /// Inserts `rows` (each of the same width), `perStatement` rows to a
    /// statement: `head` is the statement up to `VALUES `, `then` what follows
    /// the rows (an `ON CONFLICT` clause).
    func insert(_ head: String, rows: [[SQLValue]], perStatement: Int, then tail: String = "") throws(StoreError) {
        guard let width = rows.first?.count else { return }
        for chunk in rows.chunks(of: perStatement) {
            try run(head + SQLStore.placeholders(rows: chunk.count, width: width) + (tail.isEmpty ? "" : " " + tail), chunk.flatMap { $0 })
        }
    }

    /// Runs `body` in one transaction, rolled back when it throws.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try begin()
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` inside the open transaction, undoing only its own writes
    /// when it throws (a savepoint).
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
}
