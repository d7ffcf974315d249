import Foundation
import Guidance
import XCTest

/// `guidance-admin token issue|revoke` as an operator runs it, on a copy of
/// the sample roster: the printed token authenticates its teacher, the file
/// keeps only its SHA-256, and a revoked token no longer does.
final class TokenCommandTests: XCTestCase {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private func admin(_ arguments: [String], roster: URL) throws -> (status: Int32, output: String, errors: String) {
        let binary = root.appendingPathComponent(".build/debug/guidance-admin")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw XCTSkip("build guidance-admin first (swift build)") }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ["ROSTER_DIR": roster.path]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        return (
            process.terminationStatus,
            String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
            String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        )
    }

    func testIssuedTokensAuthenticateAndRevokedOnesDoNot() throws {
        let roster = FileManager.default.temporaryDirectory.appendingPathComponent("roster-\(UUID())")
        try FileManager.default.copyItem(at: root.appendingPathComponent("examples/roster"), to: roster)
        defer { try? FileManager.default.removeItem(at: roster) }
        try FileManager.default.removeItem(at: roster.appendingPathComponent("tokens.csv"))

        let issued = try admin(["token", "issue", "t-gate-01"], roster: roster)
        XCTAssertEqual(issued.status, 0, issued.errors)
        XCTAssertTrue(issued.errors.contains("authentication is now ON"), issued.errors)
        let token = issued.output.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(token.count, 43, "32 random bytes, base64url")
        let second = try admin(["token", "issue", "t-admin"], roster: roster).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let file = try String(contentsOf: roster.appendingPathComponent("tokens.csv"), encoding: .utf8)
        XCTAssertFalse(file.contains(token), "the token itself was written down")

        var loaded = try Roster.load(from: roster.path)
        XCTAssertEqual(loaded.teacher(forToken: token)?.id, "t-gate-01")
        XCTAssertEqual(loaded.teacher(forToken: second)?.id, "t-admin")

        let revoked = try admin(["token", "revoke", "t-gate-01"], roster: roster)
        XCTAssertEqual(revoked.status, 0, revoked.errors)
        XCTAssertTrue(revoked.output.hasPrefix("revoked 1 token(s)"), revoked.output)
        loaded = try Roster.load(from: roster.path)
        XCTAssertNil(loaded.teacher(forToken: token))
        XCTAssertEqual(loaded.teacher(forToken: second)?.id, "t-admin")

        let unknown = try admin(["token", "issue", "t-nobody"], roster: roster)
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.errors.contains("no teacher 't-nobody'"), unknown.errors)
    }

    /// tokens.csv says who may sign in: a new one is the operator's alone
    /// under any umask, and a rewrite keeps the mode the operator chose.
    func testTheTokensFileIsTheOperatorsAloneAndKeepsItsMode() throws {
        let roster = FileManager.default.temporaryDirectory.appendingPathComponent("roster-\(UUID())")
        try FileManager.default.copyItem(at: root.appendingPathComponent("examples/roster"), to: roster)
        defer { try? FileManager.default.removeItem(at: roster) }
        let tokens = roster.appendingPathComponent("tokens.csv")
        try FileManager.default.removeItem(at: tokens)
        func mode() throws -> Int { try XCTUnwrap(FileManager.default.attributesOfItem(atPath: tokens.path)[.posixPermissions] as? Int) }
        let saved = umask(0)
        defer { umask(saved) }
        XCTAssertEqual(try admin(["token", "issue", "t-gate-01"], roster: roster).status, 0)
        XCTAssertEqual(try mode(), 0o600, "made under umask 000")
        XCTAssertEqual(chmod(tokens.path, 0o640), 0)
        XCTAssertEqual(try admin(["token", "issue", "t-admin"], roster: roster).status, 0)
        XCTAssertEqual(try mode(), 0o640, "the operator's mode, kept by a rewrite")
        XCTAssertEqual(try admin(["token", "revoke", "t-admin"], roster: roster).status, 0)
        XCTAssertEqual(try mode(), 0o640)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tokens.path + ".tmp"))
    }
}
