import Crypto
import Foundation
import Guidance
import Store

/// A digest revision as a Standard Webhooks message: the body
/// `{"type":"digest.created","timestamp":…,"data":<the digest as the inbox
/// API returns it>}` and the headers that sign it. A 보호자 안내 (scope
/// `guardian`) is `{"type":"case.guardian_notice", "data":{noticeId, caseId,
/// schoolId, date, student, text, sentAt}}`: for the school's SMS or 알림장
/// system to send to the parents; no teacher is named in it.
enum WebhookMessage {
    private struct Envelope: Encodable {
        let type = "digest.created"
        /// When the digest was written: the same body on every attempt.
        let timestamp: String
        let data: DigestJSON
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()

    private struct NoticeEnvelope: Encodable {
        struct Notice: Encodable {
            let noticeId: String
            let caseId: String
            let schoolId: String
            let date: String
            let student: StudentRef
            let text: String
            let sentAt: String
        }
        let type = "case.guardian_notice"
        let timestamp: String
        let data: Notice
    }

    static func body(_ digest: Digest) -> [UInt8] {
        if digest.scope == .guardian, let entry = digest.entries.first {
            let notice = NoticeEnvelope.Notice(
                noticeId: digest.digestId, caseId: entry.guidanceId, schoolId: digest.schoolId, date: digest.date, student: entry.student,
                text: digest.text, sentAt: digest.createdAt)
            return (try? Array(encoder.encode(NoticeEnvelope(timestamp: digest.createdAt, data: notice)))) ?? []
        }
        // Encoding a Digest of strings and numbers cannot fail.
        return (try? Array(encoder.encode(Envelope(timestamp: digest.createdAt, data: DigestJSON(digest))))) ?? []
    }

    /// `webhook-id`, `webhook-timestamp` (this attempt, Unix seconds) and
    /// `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.
    static func headers(id: String, timestamp: Int, body: [UInt8], secret: [UInt8]) -> [(String, String)] {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        let signature = Data(HMAC.sha256(key: secret, message: signed)).base64EncodedString()
        return [
            ("Content-Type", "application/json"),
            ("webhook-id", id),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", "v1,\(signature)")
        ]
    }
}
