import Store

/// A digest as the inbox API and the webhooks write it (the OpenAPI
/// contract's `Digest`): every field, `classNumber` as `null` for grade
/// digests.
struct DigestJSON: Encodable, Sendable {
    let digest: Digest

    init(_ digest: Digest) {
        self.digest = digest
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
        try container.encode(digest.entries, forKey: .entries)
        try container.encode(digest.counts, forKey: .counts)
    }
}
