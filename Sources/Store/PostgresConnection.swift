import Common
import CPostgres
import Foundation

/// One PostgreSQL connection: the only code that calls `PQ*`. Blocking and
/// not thread-safe; the store serialises its use. A broken connection is
/// reset once before a statement fails.
final class PostgresConnection: SQLDatabase {
    private let connection: OpaquePointer
    private var inTransaction = false

    init(url: String) throws(StoreError) {
        guard let connection = PQconnectdb(url) else { throw StoreError(.failed, "libpq: out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingWhitespace()
            PQfinish(connection)
            throw StoreError(.busy, "cannot connect to PostgreSQL: \(message)")
        }
        self.connection = connection
        // NOTICEs ("relation already exists, skipping") are not for operators.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit { PQfinish(connection) }

    func execute(_ sql: String) throws(StoreError) {
        let result = try submit { PQexec(connection, sql) }
        PQclear(result)
        if sql == "COMMIT" || sql == "ROLLBACK" { inTransaction = false }
    }

    func begin() throws(StoreError) {
        try execute("BEGIN")
        inTransaction = true
    }

    func lock(_ key: String, exclusive: Bool) throws(StoreError) {
        _ = try query(exclusive ? "SELECT pg_advisory_xact_lock(hashtext($1))" : "SELECT pg_advisory_xact_lock_shared(hashtext($1))", [.text(key)])
    }

    @discardableResult
    func run(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> Int {
        let result = try execute(sql, parameters)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> [[SQLValue]] {
        let result = try execute(sql, parameters)
        defer { PQclear(result) }
        return (0..<PQntuples(result)).map { row in
            (0..<PQnfields(result)).map { column in
                PQgetisnull(result, row, column) == 1 ? .null : .text(String(cString: PQgetvalue(result, row, column)))
            }
        }
    }

    private func execute(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> OpaquePointer {
        let texts = parameters.map(\.text)
        // strdup'd copies live until the call returns.
        let values: [UnsafeMutablePointer<CChar>?] = texts.map { text in text.flatMap { strdup($0) } }
        defer { for value in values { free(value) } }
        let pointers: [UnsafePointer<CChar>?] = values.map { $0.map { UnsafePointer($0) } }
        return try submit {
            pointers.withUnsafeBufferPointer { buffer in
                PQexecParams(connection, sql, Int32(buffer.count), nil, buffer.baseAddress, nil, nil, 0)
            }
        }
    }

    /// Runs a libpq call, resetting a broken connection once when no
    /// transaction is open (inside one, the caller retries the whole batch).
    private func submit(_ call: () -> OpaquePointer?) throws(StoreError) -> OpaquePointer {
        var result = call()
        if PQstatus(connection) == CONNECTION_BAD && !inTransaction {
            PQclear(result)
            PQreset(connection)
            result = call()
        }
        guard let result else {
            throw StoreError(.busy, "PostgreSQL: \(String(cString: PQerrorMessage(connection)))")
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = String(cString: PQresultErrorMessage(result)).trimmingWhitespace()
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            PQclear(result)
            if PQstatus(connection) == CONNECTION_BAD { inTransaction = false }
            switch state {
            case "23505": throw StoreError(.conflict, "PostgreSQL: \(message)")
            case "40001", "40P01", "55P03", "57P01", "08000", "08003", "08006": throw StoreError(.busy, "PostgreSQL: \(message)")
            default: throw StoreError(.failed, "PostgreSQL [\(state)]: \(message)")
            }
        }
        return result
    }
}
