import Glibc
import Guidance

/// A table a school uploads, as rows of text: an Excel workbook (.xlsx, its
/// first sheet) or CSV as Korean Excel saves it ("CSV (쉼표로 분리)", in
/// CP949), or UTF-8 with or without a byte-order mark.
package enum UploadedTable {
    package static func rows(of data: [UInt8], file: String) throws(UploadError) -> [CSV.Row] {
        if data.starts(with: [0x50, 0x4B, 0x03, 0x04]) { return try Spreadsheet.rows(ofXLSX: data) }
        let text = try csvText(data)
        var rows: [CSV.Row] = []
        do {
            try CSV.forEachRow(in: text, file: file) { rows.append($0) }
        } catch {
            throw UploadError(error.description)
        }
        return rows
    }

    /// CSV bytes as text: UTF-8 (a byte-order mark dropped), else CP949,
    /// which covers EUC-KR.
    package static func csvText(_ data: [UInt8]) throws(UploadError) -> String {
        let body = data.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(data.dropFirst(3)) : data
        if let text = String(validating: body, as: UTF8.self) { return text }
        guard let text = convert(body, from: "CP949") else {
            throw UploadError("the file is neither UTF-8 nor Korean Excel's CSV (CP949/EUC-KR); save it again as CSV")
        }
        return text
    }

    /// `bytes` in `encoding` as text, with glibc's iconv; nil when they are not.
    private static func convert(_ bytes: [UInt8], from encoding: String) -> String? {
        let converter = iconv_open("UTF-8", encoding)
        guard converter != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(converter) }
        var input = bytes.map { CChar(bitPattern: $0) }
        var output = [CChar](repeating: 0, count: bytes.count * 2 + 16)
        let converted: Int? = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                var sourcePointer = source.baseAddress
                var sourceLeft = source.count
                var targetPointer = target.baseAddress
                var targetLeft = target.count
                guard iconv(converter, &sourcePointer, &sourceLeft, &targetPointer, &targetLeft) != -1, sourceLeft == 0 else {
                    return nil
                }
                return target.count - targetLeft
            }
        }
        guard let converted else { return nil }
        return String(validating: output[..<converted].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
