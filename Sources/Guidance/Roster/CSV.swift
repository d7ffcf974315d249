import Common
import Foundation

/// RFC 4180 CSV: quoted fields with commas, quotes (`""`) and line breaks,
/// CRLF or LF line ends, an optional UTF-8 byte-order mark. Bytes are fed in
/// chunks and rows handed out as they end, so a large file is never held
/// whole: only ASCII delimiters matter, and each field is checked as UTF-8.
package struct CSV {
    package struct Row: Sendable, Equatable {
        /// 1-based line where the row starts, for error messages.
        package let line: Int
        package let fields: [String]

        package init(line: Int, fields: [String]) {
            self.line = line
            self.fields = fields
        }
    }

    /// `value` as a field of a file this reads: quoted when it holds a
    /// comma, quote or line break, a quote written twice.
    package static func quoted(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    private let file: String
    private var fields: [String] = []
    private var field: [UInt8] = []
    private var inQuotes = false
    private var fieldWasQuoted = false
    /// A quote inside a quoted field: an escaped quote or the closing one.
    private var quotePending = false
    private var crPending = false
    private var line = 1
    private var rowLine = 1
    private var atStart = true

    init(file: String) {
        self.file = file
    }

    /// Reads `path` in 64 KiB chunks.
    static func forEachRow(inFileAt path: String, file: String, _ body: (Row) throws(RosterError) -> Void) throws(RosterError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw RosterError(file: file, line: nil, reason: "cannot read \(path)")
        }
        defer { try? handle.close() }
        var reader = CSV(file: file)
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 65_536) ?? Data()
            } catch {
                throw RosterError(file: file, line: nil, reason: "cannot read \(path): \(error)")
            }
            if chunk.isEmpty { break }
            var failure: RosterError?
            chunk.withUnsafeBytes { bytes in
                do throws(RosterError) { try reader.feed(bytes, body) } catch { failure = error }
            }
            if let failure { throw failure }
        }
        try reader.finish(body)
    }

    package static func forEachRow(in text: String, file: String, _ body: (Row) throws(RosterError) -> Void) throws(RosterError) {
        var reader = CSV(file: file)
        var text = text
        var failure: RosterError?
        text.withUTF8 { bytes in
            do throws(RosterError) { try reader.feed(UnsafeRawBufferPointer(bytes), body) } catch { failure = error }
        }
        if let failure { throw failure }
        try reader.finish(body)
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ body: (Row) throws(RosterError) -> Void) throws(RosterError) {
        var index = 0
        if atStart {
            atStart = false
            if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { index = 3 }
        }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if crPending {
                crPending = false
                if byte == 0x0A { continue }
            }
            if quotePending {
                quotePending = false
                if byte == 0x22 {
                    field.append(0x22)
                    continue
                }
                inQuotes = false
            }
            if inQuotes {
                if byte == 0x22 {
                    quotePending = true
                } else {
                    if byte == 0x0A { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case 0x2C:  // ,
                try endField()
            case 0x22:  // "
                guard field.isEmpty && !fieldWasQuoted else {
                    throw RosterError(file: file, line: line, reason: "a quote inside an unquoted field")
                }
                inQuotes = true
                fieldWasQuoted = true
            case 0x0D, 0x0A:
                crPending = byte == 0x0D
                try endRow(body)
                line += 1
                rowLine = line
            default:
                if fieldWasQuoted {
                    throw RosterError(file: file, line: line, reason: "text after a closing quote")
                }
                field.append(byte)
            }
        }
    }

    mutating func finish(_ body: (Row) throws(RosterError) -> Void) throws(RosterError) {
        if quotePending {
            quotePending = false
            inQuotes = false
        }
        if inQuotes {
            throw RosterError(file: file, line: rowLine, reason: "a quoted field is never closed")
        }
        if !field.isEmpty || !fields.isEmpty || fieldWasQuoted {
            try endRow(body)
        }
    }

    private mutating func endField() throws(RosterError) {
        guard let text = field.withUnsafeBufferPointer(String.init(validUTF8:)) else {
            throw RosterError(file: file, line: line, reason: "not valid UTF-8")
        }
        fields.append(text)
        field.removeAll(keepingCapacity: true)
        fieldWasQuoted = false
    }

    private mutating func endRow(_ body: (Row) throws(RosterError) -> Void) throws(RosterError) {
        let blank = fields.isEmpty && field.isEmpty && !fieldWasQuoted
        try endField()
        if !blank {
            try body(Row(line: rowLine, fields: fields))
        }
        fields.removeAll(keepingCapacity: true)
    }
}
