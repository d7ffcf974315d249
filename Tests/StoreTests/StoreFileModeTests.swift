import Foundation
import Guidance
import Store
import XCTest

/// The store's files hold students' names: readable by the service's user
/// alone, whatever the umask it was started with.
final class StoreFileModeTests: XCTestCase {
    func testTheSQLiteFilesAreTheServicesAloneWhateverTheUmask() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mode-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("notifier.db").path
        let saved = umask(0)
        defer { umask(saved) }
        let store = try SQLStore.sqlite(path: path, clock: Timestamp.now)
        func mode(_ file: String) -> Int? {
            var info = stat()
            return stat(file, &info) == 0 ? Int(info.st_mode & 0o777) : nil
        }
        XCTAssertEqual(mode(path), 0o600, "the database")
        // WAL mode: SQLite made its side files with the database's mode.
        for side in [path + "-wal", path + "-shm"] where mode(side) != nil {
            XCTAssertEqual(mode(side), 0o600, side)
        }
        _ = store

        // A file left 0644 by an earlier version is narrowed at the next start.
        let old = folder.appendingPathComponent("old.db").path
        _ = FileManager.default.createFile(atPath: old, contents: nil, attributes: [.posixPermissions: 0o644])
        _ = try SQLStore.sqlite(path: old, clock: Timestamp.now)
        XCTAssertEqual(mode(old), 0o600)
    }
}
