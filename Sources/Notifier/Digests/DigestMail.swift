import Foundation
import Guidance
import Store
import Web
import Wiring

/// A digest revision as an e-mail: RFC 5322 headers (non-ASCII encoded per
/// RFC 2047) and a `multipart/alternative` body with the digest text and an
/// HTML table of the same entries. Pure: the same digest gives the same
/// message but for its `Date`.
struct DigestMail {
    let digest: Digest
    let school: School
    let to: MailAddress
    let from: MailAddress
    /// `PUBLIC_INGEST_URL`, for a link to the digest in the app's 알림함.
    let publicURL: String?
    /// How many held messages of its kind this one replaced (quiet hours).
    var merged = 0

    /// Said first when the message stands for others held with it.
    var mergedNote: String? {
        merged > 0 ? "방해 금지 시간 동안 온 알림 \(merged + 1)건 중 가장 새로운 것입니다. 모두 알림함에 있습니다." : nil
    }

    /// Stable across attempts and replicas, so mail clients and servers
    /// drop a second copy: `<digest id@sender's domain>`.
    static func messageID(digestId: String, domain: String) -> String {
        var local = ""
        for byte in digestId.utf8 {
            let safe =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            // A dot may not start or end the part, nor follow another.
            if safe || (byte == UInt8(ascii: ".") && !local.isEmpty && !local.hasSuffix(".")) {
                local.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                local += "=" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        if local.hasSuffix(".") { local = String(local.dropLast()) + "=2E" }
        return "<\(local)@\(domain)>"
    }

    var link: String? {
        publicURL.map { $0 + Page.digestPath(of: digest.digestId) }
    }

    func render(date: Double) -> [UInt8] {
        let boundary = "=_guidance_alternative"
        var headers = [
            "From: " + MailHeader.address(from),
            "To: " + MailHeader.address(to),
            "Subject: " + MailHeader.encode(digest.subject),
            "Date: " + MailHeader.date(date),
            "Message-ID: " + DigestMail.messageID(digestId: digest.digestId, domain: from.domain)
        ]
        if digest.revision > 1 && digest.scope != .rule {
            let first = Digest.id(school: digest.schoolId, date: digest.date, recipient: digest.recipient, revision: 1)
            let original = DigestMail.messageID(digestId: first, domain: from.domain)
            headers += ["In-Reply-To: " + original, "References: " + original]
        }
        headers += [
            "X-Guidance-Digest-Id: " + MailHeader.encode(digest.digestId),
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\""
        ]
        let link = self.link
        var plain = (mergedNote.map { $0 + "\n\n" } ?? "") + digest.text
        if let link { plain += "\n\n알림함에서 보기: \(link)" }
        let lines =
            headers + [
                "",
                "--\(boundary)",
                "Content-Type: text/plain; charset=utf-8",
                "Content-Transfer-Encoding: base64",
                "",
                MailHeader.base64(text: plain),
                "--\(boundary)",
                "Content-Type: text/html; charset=utf-8",
                "Content-Transfer-Encoding: base64",
                "",
                MailHeader.base64(html(link: link)),
                "--\(boundary)--",
                ""
            ]
        return Array(lines.joined(separator: "\r\n").utf8)
    }

    /// The digest for a phone's mail app: the same words as the text (one
    /// `DigestText`), each entry a short block rather than a table row, grouped
    /// by class.
    func html(link: String?) -> String {
        let text = DigestText(digest, school: school)
        var out = """
            <!DOCTYPE html>
            <html lang="ko"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(digest.subject))</title></head>
            <body style="font-family:sans-serif;line-height:1.5;word-break:keep-all;max-width:40em;margin:0 auto;padding:0 .5em">
            <h1 style="font-size:1.2em">\(escape(digest.subject))</h1>

            """
        if let mergedNote { out += "<p><b>\(escape(mergedNote))</b></p>\n" }
        // A rule notice's words are its text, written once (`RuleNotices`).
        if digest.scope == .rule {
            for line in digest.text.split(separator: "\n") { out += "<p>\(escape(String(line)))</p>\n" }
            if let link { out += "<p><a href=\"\(escape(link))\">알림함에서 보기</a></p>\n" }
            return out + "</body></html>\n"
        }
        for sentence in text.introduction { out += "<p>\(escape(sentence))</p>\n" }
        for section in text.sections {
            if let heading = section.heading { out += "<h2 style=\"font-size:1.05em\">\(escape(heading))</h2>\n" }
            var currentClass: Int?
            for entry in section.entries {
                if entry.student.classNumber != currentClass {
                    currentClass = entry.student.classNumber
                    out += "<h3 style=\"font-size:1em;margin:1em 0 .25em\">\(entry.student.grade)학년 \(entry.student.classNumber)반</h3>\n"
                }
                let struck = entry.change == .removed ? "text-decoration:line-through;" : ""
                out += "<p style=\"margin:0;padding:.4em 0;border-top:1px solid #d5dae1\">"
                out += "<b style=\"\(struck)\">\(entry.student.number)번 \(escape(entry.student.name))</b> · \(escape(text.what(entry)))<br>"
                out += "<span style=\"color:#5b6472\">\(escape(text.particulars(entry)))</span></p>\n"
            }
        }
        if let summary = text.summary { out += "<p>\(escape(summary))</p>\n" }
        if let link { out += "<p><a href=\"\(escape(link))\">알림함에서 보기</a></p>\n" }
        return out + "</body></html>\n"
    }

    private func escape(_ text: String) -> String { HTML.escape(text) }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
