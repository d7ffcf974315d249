import XCTest

@testable import Notifier

/// The CSV export's fields as a spreadsheet reads them: nothing it would
/// run as a formula.
final class ExportCSVTests: XCTestCase {
    func testAFieldThatAStartsLikeAFormulaIsExportedAsText() {
        // A combining mark, a ZWJ, a variation selector or a keycap after the
        // sign makes one grapheme whose first scalar is still the sign.
        for value in ["=1+1", "=\u{301}HYPERLINK(\"x\")", "=\u{200D}cmd", "+\u{FE0F}1", "-\u{20E3}2", "@\u{0301}SUM(A1)", "\t=1", "\r=1"] {
            let field = DataProtectionHandlers.field(value)
            let unquoted = field.hasPrefix("\"") ? String(field.dropFirst()) : field
            XCTAssertEqual(unquoted.unicodeScalars.first, "'", "\(value.unicodeScalars.map { String($0.value, radix: 16) }): \(field)")
        }
        XCTAssertEqual(DataProtectionHandlers.field("가가"), "가가")
        XCTAssertEqual(DataProtectionHandlers.field("a,b"), "\"a,b\"")
        XCTAssertEqual(DataProtectionHandlers.field("교문 앞 \"껌\""), "\"교문 앞 \"\"껌\"\"\"")
    }
}
