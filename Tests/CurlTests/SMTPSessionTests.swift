import Curl
import Foundation
import TestSupport
import XCTest

/// libcurl's SMTP against a real server (aiosmtpd): what each reply becomes.
final class SMTPSessionTests: XCTestCase {
    let message = Array("From: <a@school.example>\r\nTo: <b@school.example>\r\nSubject: hi\r\n\r\n.leading dot\r\nbody\r\n".utf8)

    func testAcceptedRefusedWithTheServersTextAndUnreachable() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { throw XCTSkip("needs python3-aiosmtpd") }
        let sink = try Counterpart(interpreter: "/usr/bin/python3", script: "smtp-sink.py")
        let session = try SMTPSession(server: SMTPServer(url: "smtp://127.0.0.1:\(sink.port)", timeout: .seconds(5)))
        guard case .unreachable = session.send(from: "a@school.example", to: "b@school.example", message: message) else {
            return XCTFail("nobody listens yet")
        }
        try sink.start(["--reject", "nobody@school.example"])
        XCTAssertEqual(session.send(from: "a@school.example", to: "b@school.example", message: message), .accepted)
        XCTAssertEqual(
            session.send(from: "a@school.example", to: "nobody@school.example", message: message),
            .refused(code: 550, reply: "550 5.1.1 <nobody@school.example>: Recipient address rejected: no such user here"))
        // The session goes on after a refusal.
        XCTAssertEqual(session.send(from: "a@school.example", to: "c@school.example", message: message), .accepted)
        let received = sink.records
        XCTAssertEqual(received.compactMap { $0["to"] as? [String] }, [["b@school.example"], ["c@school.example"]])
        XCTAssertEqual(
            (received.first?["plain"] as? String)?.replacingOccurrences(of: "\r\n", with: "\n"), ".leading dot\nbody\n",
            "dot-stuffed and unstuffed")
    }
}
