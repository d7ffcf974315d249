import Common
import Foundation
import Ingest
import Notifier
import TestSupport
import XCTest

/// `docs/design.md`'s table "How each part waits" is the services' parts as
/// they are built with production defaults: a part added, or a period or a
/// wait changed, without the table fails here.
final class DesignTableTests: XCTestCase {
    func testTheDesignTableIsThePartsAsBuilt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("design-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Production defaults: nothing set but where the roster, the broker
        // (never reached: the services are built, not started) and the store are.
        let environment = Environment([
            "ROSTER_DIR": repositoryRoot.appendingPathComponent("examples/roster").path, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",
            "STORE_URL": "sqlite:" + folder.appendingPathComponent("notifier.db").path
        ])
        let ingest = try IngestService(config: IngestConfig.fromEnvironment(environment), logger: quietLogger("ingest"))
        let notifier = try NotifierService(config: NotifierConfig.fromEnvironment(environment), logger: quietLogger("notifier"))
        var rows: [Part.Waits] = []
        for row in ingest.waits + notifier.waits where !rows.contains(where: { $0.name == row.name }) { rows.append(row) }
        let built = rows.map { "| \($0.name) | \($0.waitsIn) | \($0.wokenBy) |" }

        let design = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/design.md"), encoding: .utf8)
        let lines = design.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let header = try XCTUnwrap(lines.firstIndex(of: "| part | waits in | woken by |"), "design.md has no table of how each part waits")
        let documented = Array(lines[(header + 2)...].prefix { $0.hasPrefix("|") })
        XCTAssertEqual(documented, built, "docs/design.md's table, as the parts are built:\n" + built.joined(separator: "\n"))
    }
}
