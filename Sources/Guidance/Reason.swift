/// A reason a guidance can be recorded for.
public struct Reason: Sendable, Equatable, Codable {
    public let code: String
    /// Korean label shown to teachers.
    public let label: String
    /// Whether a free-text detail (1–200 characters) is required.
    public let requiresDetail: Bool

    public init(code: String, label: String, requiresDetail: Bool = false) {
        self.code = code
        self.label = label
        self.requiresDetail = requiresDetail
    }

    public static let maxDetailLength = 200

    /// The default catalogue; a school may extend it with `reasons.csv`.
    public static let defaults: [Reason] = [
        Reason(code: "wrongClothes", label: "복장 불량"),
        Reason(code: "noShoes", label: "실내화 없음"),
        Reason(code: "trespassing", label: "무단횡단"),
        Reason(code: "others", label: "기타", requiresDetail: true),
    ]
}
