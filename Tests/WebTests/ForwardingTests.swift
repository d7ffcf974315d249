import Common
import Foundation
import Guidance
import HTTP
import Sessions
import Wiring
import XCTest

@testable import Access

/// A request passed on to the other service, when that service hangs: the
/// requests are answered 503 within the forwarder's bound, and the hung
/// service sees no more connections than the forwarder keeps (each one a
/// thread blocked on it), however many requests came.
final class ForwardingTests: XCTestCase {
    func testAHungServiceHoldsThePoolsConnectionsNotOnePerRequest() async throws {
        // A listening socket never accepted from: the kernel completes each
        // connection into its backlog, the request is sent, no answer comes.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(socket, 64), 0)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))

        let forwarding = Forwarding(
            base: "http://127.0.0.1:\(port)", cookieName: "notifier_session",
            sessions: Sessions(secret: String(repeating: "s", count: 32), days: 30, log: .local(clock: Timestamp.now)), connections: 2,
            logger: Logger(component: "test", level: .error))
        let roster = try Roster.parse(
            schools: "school_id,name,timezone,digest_time\nsa,School A,Asia/Seoul,08:50\n",
            students: "school_id,student_id,grade,class,number,name,photo_url\n",
            teachers: "school_id,teacher_id,name,email,role,grade,class\n",
            tokens: "token_sha256,teacher_id\n")
        let caller = Caller(roster: roster, teacher: nil, client: "127.0.0.1")
        let started = Date()
        let answers = await withTaskGroup(of: Int.self) { group in
            for index in 0..<6 {
                group.addTask {
                    let request = Request(
                        method: "GET", path: "/v1/teachers/t1/inbox", headers: ["authorization": "Bearer x"], requestID: "r\(index)",
                        peer: "127.0.0.1")
                    do {
                        _ = try await forwarding.send("GET", "/v1/teachers/t1/inbox", request: request, caller: caller, unavailable: "down")
                        return 200
                    } catch let error as HTTPError {
                        return error.status
                    } catch {
                        return 0
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(answers, Array(repeating: 503, count: 6))
        XCTAssertLessThan(Date().timeIntervalSince(started), 6, "answered within the forwarder's 5 s")
        // The connections that reached the hung service: the pool's two, not six.
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
        var reached = 0
        while case let accepted = accept(socket, nil, nil), accepted >= 0 {
            close(accepted)
            reached += 1
        }
        XCTAssertEqual(reached, 2)
    }
}
