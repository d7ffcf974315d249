/// RFC 4180 CSV: quoted fields with commas, quotes (`""`) and line breaks,
/// CRLF or LF line ends, an optional UTF-8 byte-order mark.
enum CSV {
    struct Row {
        /// 1-based line where the row starts, for error messages.
        let line: Int
        let fields: [String]
    }

    struct ParseError: Error {
        let line: Int
        let reason: String
    }

    static func parse(_ text: String) throws(ParseError) -> [Row] {
        var rows: [Row] = []
        var fields: [String] = []
        var field = ""
        var inQuotes = false
        var fieldWasQuoted = false
        var line = 1
        var rowLine = 1
        var scalars = Substring(text).unicodeScalars[...]
        if scalars.first == "\u{FEFF}" { scalars = scalars.dropFirst() }
        var iterator = scalars.makeIterator()
        var pending: Unicode.Scalar? = nil

        func next() -> Unicode.Scalar? {
            if let scalar = pending { pending = nil; return scalar }
            return iterator.next()
        }

        func endRow() {
            fields.append(field)
            // A blank line is no row.
            if !(fields.count == 1 && fields[0].isEmpty && !fieldWasQuoted) {
                rows.append(Row(line: rowLine, fields: fields))
            }
            fields = []
            field = ""
            fieldWasQuoted = false
        }

        while let scalar = next() {
            if inQuotes {
                if scalar == "\"" {
                    if let following = next() {
                        if following == "\"" {
                            field.unicodeScalars.append("\"")
                        } else {
                            inQuotes = false
                            pending = following
                        }
                    } else {
                        inQuotes = false
                    }
                } else {
                    if scalar == "\n" { line += 1 }
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case ",":
                fields.append(field)
                field = ""
                fieldWasQuoted = false
            case "\"":
                guard field.isEmpty && !fieldWasQuoted else {
                    throw ParseError(line: line, reason: "a quote inside an unquoted field")
                }
                inQuotes = true
                fieldWasQuoted = true
            case "\r":
                if let following = next(), following != "\n" { pending = following }
                endRow()
                line += 1
                rowLine = line
            case "\n":
                endRow()
                line += 1
                rowLine = line
            default:
                if fieldWasQuoted {
                    throw ParseError(line: line, reason: "text after a closing quote")
                }
                field.unicodeScalars.append(scalar)
            }
        }
        if inQuotes {
            throw ParseError(line: rowLine, reason: "a quoted field is never closed")
        }
        if !field.isEmpty || !fields.isEmpty || fieldWasQuoted {
            endRow()
        }
        return rows
    }
}
