import Common
import Guidance
import Store

/// A digest as the inbox API and the webhooks write it (the OpenAPI
/// contract's `Digest`): every field, `classNumber` as `null` for grade
/// digests. The inbox adds each entry's `photoUrl` for the page; webhooks
/// leave it out (photos stay in the school's own services).
struct DigestJSON: Encodable, Sendable {
    let digest: Digest
    /// Where the page loads a student's photo from, by school and student id.
    let photo: (@Sendable (String, String) -> String?)?

    init(_ digest: Digest, photo: (@Sendable (String, String) -> String?)? = nil) {
        self.digest = digest
        self.photo = photo
    }

    private enum CodingKeys: String, CodingKey {
        case digestId, teacherId, schoolId, date, scope, grade, classNumber, revision, createdAt, read, subject, text, entries, counts
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(digest.digestId, forKey: .digestId)
        try container.encode(digest.teacherId, forKey: .teacherId)
        try container.encode(digest.schoolId, forKey: .schoolId)
        try container.encode(digest.date, forKey: .date)
        try container.encode(digest.scope, forKey: .scope)
        try container.encode(digest.grade, forKey: .grade)
        try container.encode(digest.classNumber, forKey: .classNumber)
        try container.encode(digest.revision, forKey: .revision)
        try container.encode(digest.createdAt, forKey: .createdAt)
        try container.encode(digest.read, forKey: .read)
        try container.encode(digest.subject, forKey: .subject)
        try container.encode(digest.text, forKey: .text)
        if let photo {
            let school = digest.schoolId
            try container.encode(digest.entries.map { Entry(entry: $0, photoUrl: photo(school, $0.student.studentId)) }, forKey: .entries)
        } else {
            try container.encode(digest.entries, forKey: .entries)
        }
        try container.encode(digest.counts, forKey: .counts)
    }

    /// An entry with the photo the page shows beside it (`null`: none).
    private struct Entry: Encodable {
        let entry: DigestEntry
        let photoUrl: String?

        private enum CodingKeys: String, CodingKey { case photoUrl }

        func encode(to encoder: Encoder) throws {
            try entry.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(photoUrl, forKey: .photoUrl)
        }
    }
}
