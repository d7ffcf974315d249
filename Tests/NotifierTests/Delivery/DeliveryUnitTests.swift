import Common
import Foundation
import Wiring
import XCTest

@testable import Notifier

/// The pure parts of delivery: header encoding, backoff, configuration.
final class DeliveryUnitTests: XCTestCase {
    func testLongKoreanSubjectsBecomeEncodedWordsOfAtMost75CharactersCutAtCharacters() throws {
        let subject = "[서울고등학교] 11월 30일(월) 1학년 3반 교문 지도 명단 1차 정정: 추가 2건, 삭제 1건 😀 끝"
        let encoded = MailHeader.encode(subject)
        let words = encoded.components(separatedBy: "\r\n ")
        XCTAssertGreaterThan(words.count, 1)
        var decoded = Data()
        for word in words {
            XCTAssertLessThanOrEqual(word.count, 75, word)
            XCTAssertTrue(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="), word)
            let bytes = try XCTUnwrap(Data(base64Encoded: String(word.dropFirst(10).dropLast(2))))
            XCTAssertNotNil(String(data: bytes, encoding: .utf8), "a word ends inside a character: \(word)")
            decoded += bytes
        }
        XCTAssertEqual(String(decoding: decoded, as: UTF8.self), subject)
        XCTAssertEqual(MailHeader.encode("Plain ASCII"), "Plain ASCII")
        XCTAssertTrue(MailHeader.encode("looks =?like?= a word").hasPrefix("=?UTF-8?B?"), "text that looks encoded is encoded")
        XCTAssertEqual(MailHeader.address(MailAddress(name: "Kim \"K\"", address: "k@s.example")), #""Kim \"K\"" <k@s.example>"#)
        XCTAssertEqual(MailHeader.date(1_795_996_800), "Mon, 30 Nov 2026 00:00:00 +0000")
    }

    /// A text body's line breaks go out as CRLF, in base64 lines of 76.
    func testATextBodyIsBase64OfCRLFLines() throws {
        let text = String(repeating: "1학년 3반 12번 학생12 · 실내화 미착용\n", count: 4) + "끝"
        let encoded = MailHeader.base64(text: text)
        let lines = encoded.components(separatedBy: "\r\n")
        XCTAssertGreaterThan(lines.count, 1)
        XCTAssertTrue(lines.dropLast().allSatisfy { $0.count == 76 }, encoded)
        let decoded = try XCTUnwrap(Data(base64Encoded: lines.joined()))
        XCTAssertEqual(String(decoding: decoded, as: UTF8.self), text.replacingOccurrences(of: "\n", with: "\r\n"))
    }

    func testAddressesRefuseWhatCouldEndAHeader() {
        XCTAssertEqual(MailAddress("학생부 알림 <guidance@school.example>"), MailAddress(name: "학생부 알림", address: "guidance@school.example"))
        XCTAssertEqual(MailAddress("guidance@school.example"), MailAddress(name: nil, address: "guidance@school.example"))
        for bad in [
            "", "no-at-sign", "a@b", "a@@b.example", "a b@c.example", "a@b.example\r\nBcc: x@y.example", "Na\r\nme <a@b.example>",
            "<a@b.example"
        ] {
            XCTAssertNil(MailAddress(bad), bad)
        }
        XCTAssertEqual(
            DigestMail.messageID(digestId: "s.2026-11-30.t<1>..x.class.r1", domain: "school.example"),
            "<s.2026-11-30.t=3C1=3E.=2Ex.class.r1@school.example>")
    }

    /// A push endpoint is a browser's push service: an https name on the
    /// default port. Each hostile form the sixth outside pass sent is refused.
    func testPushEndpointsAreHTTPSNamesOnTheDefaultPortOnly() {
        for endpoint in [
            "https://127.0.0.1/x", "https://[::1]/x", "https://169.254.169.254/latest/meta-data", "https://0x7f000001/x", "https://127.1/x",
            "https://[::ffff:127.0.0.1]/x", "https://2130706433/x", "https://0177.0.0.1/x", "https://user:pass@push.example.com/x",
            "https://push.example.com@127.0.0.1/x", "https://push.example.com:8443/x", "https://push.example.com:22/x",
            "https://localhost/x", "https://push.example.com/x\r\nX-Injected: 1", "https://push.example.com/a b",
            "https://push.example.com/\u{7f}", "http://push.example.com/x", "ftp://push.example.com/x", "https:///x",
            "https://-bad.example.com/x", "https://push..example/x", "https://push.example.com\\@127.0.0.1/x", "https://10.0.0.1/x",
            "https://[fe80::1]/x", "https://push.example.123/x", "https://푸시.example/x", "https://0x7f.0x1/x", "HTTPS://127.0.0.1/x"
        ] {
            XCTAssertNil(PushChannel.endpointHost(endpoint, overHTTP: false), endpoint)
        }
        for (endpoint, host) in [
            ("https://fcm.googleapis.com/fcm/send/dGVzdA:APA91b", "fcm.googleapis.com"),
            ("https://updates.push.services.mozilla.com/wpush/v2/gAAAA", "updates.push.services.mozilla.com"),
            ("https://web.push.apple.com/QGuQyavXutnMH", "web.push.apple.com"),
            ("https://wns2-by3p.notify.windows.com:443/w/?token=BQYAAA", "wns2-by3p.notify.windows.com")
        ] {
            XCTAssertEqual(PushChannel.endpointHost(endpoint, overHTTP: false), host, endpoint)
        }
        // The tests' push service, where the configuration allows it: loopback over http only.
        XCTAssertEqual(PushChannel.endpointHost("http://127.0.0.1:4000/push/a", overHTTP: true), "127.0.0.1")
        XCTAssertNil(PushChannel.endpointHost("http://127.0.0.1:4000/push/a", overHTTP: false))
        XCTAssertNil(PushChannel.endpointHost("http://10.0.0.1:4000/push/a", overHTTP: true))
    }

    func testBackoffDoublesWithJitterUpToTheCapHonoursRetryAfterAndStopsAtTheMaximumAge() {
        let policy = RetryPolicy(base: 30, maxBackoff: 900, maxAge: 86_400)
        XCTAssertEqual(policy.next(attempts: 1, now: 1000, queuedAt: 1000, retryAfter: nil, random: 1), 1030)
        XCTAssertEqual(policy.next(attempts: 1, now: 1000, queuedAt: 1000, retryAfter: nil, random: 0), 1015, "jitter halves at most")
        XCTAssertEqual(policy.next(attempts: 3, now: 1000, queuedAt: 1000, retryAfter: nil, random: 1), 1120)
        XCTAssertEqual(policy.next(attempts: 40, now: 1000, queuedAt: 1000, retryAfter: nil, random: 1), 1900, "capped at 15 minutes")
        XCTAssertEqual(policy.next(attempts: 1, now: 1000, queuedAt: 1000, retryAfter: 120, random: 1), 1120)
        XCTAssertNil(policy.next(attempts: 9, now: 1000 + 86_000, queuedAt: 1000, retryAfter: nil, random: 1), "past 24 h: failed")
        XCTAssertEqual(RetryPolicy.seconds(retryAfter: "17", now: 0), 17)
        XCTAssertEqual(RetryPolicy.seconds(retryAfter: "Mon, 30 Nov 2026 00:01:00 GMT", now: 1_795_996_800), 60)
        XCTAssertNil(RetryPolicy.seconds(retryAfter: "soon", now: 0))
    }

    func testSMTPSettingsFailAtLaunchNamingTheVariable() throws {
        func problem(_ values: [String: String]) -> String? {
            do {
                _ = try DeliveryConfig.fromEnvironment(Environment(values))
                return nil
            } catch {
                return error.variable
            }
        }
        XCTAssertNil(problem([:]))
        XCTAssertNil(problem(["SMTP_URL": "smtps://mail.school.example:465", "SMTP_FROM": "학생부 <g@school.example>"]))
        XCTAssertEqual(problem(["SMTP_URL": "smtp://mail.school.example:25"]), "SMTP_FROM")
        XCTAssertEqual(problem(["SMTP_URL": "smtp://mail.school.example:25", "SMTP_FROM": "nobody"]), "SMTP_FROM")
        XCTAssertEqual(problem(["SMTP_URL": "http://mail.school.example", "SMTP_FROM": "g@school.example"]), "SMTP_URL")
        XCTAssertEqual(problem(["SMTP_URL": "smtp://user:pw@mail.school.example", "SMTP_FROM": "g@school.example"]), "SMTP_URL")
        XCTAssertEqual(
            problem(["SMTP_URL": "smtp://mail.school.example", "SMTP_FROM": "g@school.example", "SMTP_STARTTLS": "maybe"]), "SMTP_STARTTLS")
        XCTAssertEqual(problem(["SMTP_FROM": "g@school.example"]), "SMTP_URL")
        XCTAssertEqual(problem(["PUBLIC_NOTIFIER_URL": "notifier"]), "PUBLIC_NOTIFIER_URL")
        XCTAssertEqual(problem(["DELIVERY_RETRY_BASE_SECONDS": "0"]), "DELIVERY_RETRY_BASE_SECONDS")
        let config = try DeliveryConfig.fromEnvironment(
            Environment(["SMTP_URL": "smtp://m.example:2525", "SMTP_FROM": "g@school.example", "SMTP_STARTTLS": "required"]))
        guard case .smtp(let server) = config.mail?.transport else { return XCTFail("no SMTP") }
        XCTAssertEqual(server.startTLS, .required)
        XCTAssertEqual(config.retryBase, .seconds(30))
        XCTAssertEqual(config.maxAge, .seconds(86_400))
    }
}
