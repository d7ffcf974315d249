import CSQLite
import Glibc

/// One SQLite connection: the only code that calls `sqlite3_*`. Not
/// thread-safe; its owner serialises use. Statements are prepared once and
/// cached by their SQL text.
final class SQLiteConnection: SQLDatabase {
    private let database: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    /// The store holds students' names: its file is the service's alone
    /// (0600), whatever the umask. Made so before SQLite opens it, since
    /// SQLite gives its journal and WAL files the database file's mode;
    /// those left by an earlier run are narrowed too.
    ///
    /// An existing file is never opened here, only `chmod`ed by its path:
    /// SQLite's locks on it are POSIX locks, which belong to the process,
    /// and a `close()` of any descriptor of the file drops them all (the
    /// store's other connections' included). The next outside process to
    /// open and close the database (a backup, `sqlite3`, `guidance-admin
    /// purge`) would then take itself for the last one, checkpoint and
    /// unlink the WAL, and every later commit would go to a file nobody
    /// reads again (docs/pitfalls.md). A new file is made with `O_EXCL`: no
    /// lock can be held on an inode this call created.
    static func keepPrivate(_ path: String) {
        guard path != ":memory:", !path.isEmpty else { return }
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            _ = fchmod(descriptor, 0o600)
            close(descriptor)
        }
        for suffix in ["", "-wal", "-shm", "-journal"] { _ = chmod(path + suffix, 0o600) }
    }

    init(path: String) throws(StoreError) {
        SQLiteConnection.keepPrivate(path)
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &handle, flags, nil)
        guard result == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw StoreError(.failed, "cannot open SQLite database \(path): \(message)")
        }
        database = handle
        sqlite3_busy_timeout(database, 5000)
        // FULL: a commit is on disk before the notifier commits the Kafka
        // offsets behind it. NORMAL can roll back the last commits on a power
        // loss, and those events would never be read again. A transaction per
        // consumed batch keeps the fsyncs few (apply rate unchanged, measured).
        try execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close(database)
    }

    /// Runs SQL without parameters or results; several statements allowed.
    func execute(_ sql: String) throws(StoreError) {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(database, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error \(result)"
            sqlite3_free(message)
            throw error(result, text)
        }
    }

    /// Runs one statement and returns the rows changed.
    @discardableResult
    func run(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> Int {
        let statement = try prepared(sql, parameters)
        defer { sqlite3_reset(statement) }
        let result = sqlite3_step(statement)
        guard result == SQLITE_DONE || result == SQLITE_ROW else {
            throw error(result, String(cString: sqlite3_errmsg(database)))
        }
        return Int(sqlite3_changes(database))
    }

    /// A local file answers or fails at once.
    func probe() throws(StoreError) {
        _ = try query("SELECT 1", [])
    }

    func forEachRow(_ sql: String, _ parameters: [SQLValue], _ body: ([SQLValue]) throws(StoreError) -> Void) throws(StoreError) {
        let statement = try prepared(sql, parameters)
        defer { sqlite3_reset(statement) }
        while true {
            let result = sqlite3_step(statement)
            if result == SQLITE_DONE { break }
            guard result == SQLITE_ROW else { throw error(result, String(cString: sqlite3_errmsg(database))) }
            try body(
                (0..<sqlite3_column_count(statement)).map { column in
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_INTEGER: .integer(sqlite3_column_int64(statement, column))
                    case SQLITE_FLOAT: .real(sqlite3_column_double(statement, column))
                    case SQLITE_NULL: .null
                    default: .text(String(cString: sqlite3_column_text(statement, column)))
                    }
                })
        }
    }

    /// In process, there is no round trip to save: one after the other.
    func pipeline(_ statements: [SQLStatement], row: (Int, [SQLValue]) throws(StoreError) -> Void) throws(StoreError) {
        for (index, statement) in statements.enumerated() {
            try forEachRow(statement.sql, statement.parameters) { (values: [SQLValue]) throws(StoreError) in try row(index, values) }
        }
    }

    /// SQLite has one writer at a time: `BEGIN IMMEDIATE` takes it.
    func begin() throws(StoreError) { try execute("BEGIN IMMEDIATE") }
    /// A deferred transaction: its first read takes a snapshot (WAL mode)
    /// that lasts until it ends, and writers go on meanwhile.
    func beginSnapshot() throws(StoreError) { try execute("BEGIN DEFERRED") }

    /// The single writer already excludes every other transaction.
    func lockStatement(_ keys: [String], exclusive: Bool) -> SQLStatement? { nil }

    var rowsPerStatement: Int { 1 }

    /// One writer at a time: a claim is alone anyway.
    var skipLocked: String { "" }

    var keyedTable: String { " WITHOUT ROWID" }

    private func prepared(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> OpaquePointer {
        let statement: OpaquePointer
        if let cached = statements[sql] {
            statement = cached
        } else {
            var handle: OpaquePointer?
            // `$1` is a named parameter to SQLite; `?1` is the numbered one.
            let numbered = sql.replacing(/\$(\d+)/) { "?" + $0.output.1 }
            let result = sqlite3_prepare_v2(database, numbered, -1, &handle, nil)
            guard result == SQLITE_OK, let handle else {
                throw error(result, "\(String(cString: sqlite3_errmsg(database))) in: \(sql)")
            }
            statements[sql] = handle
            statement = handle
        }
        sqlite3_clear_bindings(statement)
        for (offset, parameter) in parameters.enumerated() {
            let index = Int32(offset + 1)
            switch parameter {
            case .null: sqlite3_bind_null(statement, index)
            case .integer(let value): sqlite3_bind_int64(statement, index, value)
            case .real(let value): sqlite3_bind_double(statement, index, value)
            case .text(let value): sqlite3_bind_text(statement, index, value, -1, guidance_sqlite_transient())
            }
        }
        return statement
    }

    /// Classified by the primary result code: what the database file or
    /// its disk cannot do now is `unavailable` (retried; it heals once space
    /// is freed or the lock released), what the values break is the data's.
    private func error(_ result: Int32, _ message: String) -> StoreError {
        switch result & 0xff {
        case SQLITE_BUSY, SQLITE_LOCKED: StoreError(.unavailable, "SQLite busy: \(message)")
        case SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY, SQLITE_NOMEM, SQLITE_CANTOPEN, SQLITE_PROTOCOL, SQLITE_NOLFS, SQLITE_PERM:
            StoreError(.unavailable, "SQLite: \(message)")
        case SQLITE_CONSTRAINT: StoreError(.conflict, "SQLite constraint: \(message)")
        case SQLITE_TOOBIG, SQLITE_MISMATCH, SQLITE_RANGE: StoreError(.invalidValue, "SQLite: \(message)")
        default: StoreError(.failed, "SQLite: \(message)")
        }
    }
}
