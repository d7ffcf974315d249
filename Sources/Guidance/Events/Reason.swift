import Common

/// A reason a guidance can be recorded for.
package struct Reason: Sendable, Equatable, Codable {
    package let code: String
    /// Korean label shown to teachers.
    package let label: String
    /// Whether a free-text detail (1–200 characters) is required.
    package let requiresDetail: Bool
    /// Sessions of volunteer service a guidance for it puts on the student's
    /// account (`reasons.csv` column `service_sessions`, default 1).
    package let serviceSessions: Int

    package init(code: String, label: String, requiresDetail: Bool = false, serviceSessions: Int = 1) {
        self.code = code
        self.label = label
        self.requiresDetail = requiresDetail
        self.serviceSessions = serviceSessions
    }

    /// What `service_sessions` may say: none up to `maxServiceSessions`.
    package static let serviceSessionsRange = 0...maxServiceSessions
    package static let maxServiceSessions = 10

    package static let maxDetailLength = 200

    /// The detail as kept: trimmed of white space; nil when absent. Throws
    /// the rule it breaks: at most `maxDetailLength` Unicode code points as
    /// sent (what JSON Schema's `maxLength` counts), not blank (leave it out
    /// instead), no C0/C1 control
    /// characters, no bidirectional embeddings, overrides or isolates (they
    /// reorder the text a teacher reads around them).
    package static func detail(_ raw: String?) throws(DetailError) -> String? {
        guard let raw else { return nil }
        var count = 0
        for scalar in raw.unicodeScalars {
            count += 1
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F: throw .controlCharacter(scalar.value)
            case 0x202A...0x202E, 0x2066...0x2069: throw .bidiControl(scalar.value)
            default: break
            }
        }
        guard count <= maxDetailLength else { throw .tooLong(count) }
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty else { throw .blank }
        return trimmed
    }

    package enum DetailError: Error, Equatable, CustomStringConvertible {
        case blank
        case tooLong(Int)
        case controlCharacter(UInt32)
        case bidiControl(UInt32)

        package var description: String {
            switch self {
            case .blank: "must not be blank; leave it out when there is none"
            case .tooLong(let count): "must be at most \(Reason.maxDetailLength) characters (Unicode code points), not \(count)"
            case .controlCharacter(let value): "must not contain control characters (found U+\(Reason.hex(value)))"
            case .bidiControl(let value): "must not contain bidirectional control characters (found U+\(Reason.hex(value)))"
            }
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// The default catalogue; a school may extend it with `reasons.csv`.
    package static let defaults: [Reason] = [
        Reason(code: "wrongClothes", label: "복장 불량"),
        Reason(code: "noShoes", label: "실내화 없음"),
        Reason(code: "trespassing", label: "무단횡단"),
        Reason(code: "others", label: "기타", requiresDetail: true)
    ]
}
