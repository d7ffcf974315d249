import Foundation
import FoundationXML
import Guidance

/// The first sheet of an XLSX workbook as rows of text, as NEIS and Korean
/// Excel save it: shared and inline strings, numbers as written (`3`, not
/// `3.0`), empty cells as empty text. Each row keeps its number in the
/// sheet, for an admin to find a refused row.
package enum Spreadsheet {
    /// A row of the sheet; its line is the row's number, as Excel shows it.
    package typealias Row = CSV.Row

    package static func rows(ofXLSX data: [UInt8]) throws(UploadError) -> [Row] {
        let parts = try ZipArchive.entries(of: data) { $0.hasPrefix("xl/") }
        func part(_ name: String) -> [UInt8]? { parts.first { $0.name == name }?.bytes }
        guard let workbook = part("xl/workbook.xml"), let relations = part("xl/_rels/workbook.xml.rels") else {
            throw UploadError("not an Excel workbook (.xlsx): it has no xl/workbook.xml")
        }
        let sheets = try collect(workbook, element: "sheet", attributes: ["r:id"]).compactMap { $0["r:id"] }
        let targets = try collect(relations, element: "Relationship", attributes: ["Id", "Target"])
        guard let first = sheets.first, let target = targets.first(where: { $0["Id"] == first })?["Target"] else {
            throw UploadError("the workbook has no sheet")
        }
        let path = target.hasPrefix("/") ? String(target.dropFirst()) : "xl/" + target
        guard let sheet = part(path) else { throw UploadError("the workbook's first sheet (\(path)) is missing") }
        let shared = try part("xl/sharedStrings.xml").map(sharedStrings) ?? []
        return try cells(of: sheet, shared: shared)
    }

    /// The given attributes of every `element`.
    private static func collect(_ xml: [UInt8], element: String, attributes: [String]) throws(UploadError) -> [[String: String]] {
        final class Collector: NSObject, XMLParserDelegate {
            let element: String
            let attributes: [String]
            var found: [[String: String]] = []
            init(element: String, attributes: [String]) {
                self.element = element
                self.attributes = attributes
            }
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) {
                guard name == element else { return }
                found.append(attributes.filter { self.attributes.contains($0.key) })
            }
        }
        let collector = Collector(element: element, attributes: attributes)
        try parse(xml, with: collector)
        return collector.found
    }

    /// `sharedStrings.xml`: each `<si>`'s text, its runs joined.
    private static func sharedStrings(_ xml: [UInt8]) throws(UploadError) -> [String] {
        final class Strings: NSObject, XMLParserDelegate {
            var strings: [String] = []
            var current: String?
            var inText = false
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) {
                if name == "si" { current = "" }
                if name == "t" { inText = true }
            }
            func parser(_ parser: XMLParser, foundCharacters text: String) {
                if inText { current? += text }
            }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
                if name == "t" { inText = false }
                if name == "si" {
                    strings.append(current ?? "")
                    current = nil
                }
            }
        }
        let reader = Strings()
        try parse(xml, with: reader)
        return reader.strings
    }

    /// A sheet's cells by row and column.
    private static func cells(of xml: [UInt8], shared: [String]) throws(UploadError) -> [Row] {
        final class Cells: NSObject, XMLParserDelegate {
            let shared: [String]
            var rows: [Row] = []
            var line = 0
            var fields: [String] = []
            var column = 0
            var type = ""
            var value: String?
            var inValue = false
            var failure: String?
            init(shared: [String]) { self.shared = shared }
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) {
                switch name {
                case "row":
                    line = attributes["r"].flatMap { Int($0) } ?? line + 1
                    fields = []
                    column = 0
                case "c":
                    column = attributes["r"].map(Spreadsheet.column) ?? column
                    type = attributes["t"] ?? "n"
                    value = nil
                case "v", "t":
                    inValue = true
                    value = value ?? ""
                default: break
                }
            }
            func parser(_ parser: XMLParser, foundCharacters text: String) {
                if inValue { value? += text }
            }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
                switch name {
                case "v", "t":
                    inValue = false
                case "c":
                    var text = value ?? ""
                    switch type {
                    case "s":
                        guard let index = Int(text), shared.indices.contains(index) else {
                            failure = "row \(line) names a shared string the workbook does not have"
                            return
                        }
                        text = shared[index]
                    case "b":
                        text = text == "1" ? "TRUE" : "FALSE"
                    case "n":
                        if text.hasSuffix(".0") { text.removeLast(2) }
                    default: break
                    }
                    guard column < 16_384 else { return }
                    if fields.count <= column { fields += Array(repeating: "", count: column - fields.count + 1) }
                    fields[column] = text
                    column += 1
                case "row":
                    if fields.contains(where: { !$0.isEmpty }) { rows.append(Row(line: line, fields: fields)) }
                default: break
                }
            }
        }
        let reader = Cells(shared: shared)
        try parse(xml, with: reader)
        if let failure = reader.failure { throw UploadError(failure) }
        return reader.rows
    }

    /// The 0-based column of a cell reference: `A1` 0, `AB7` 27.
    static func column(_ reference: String) -> Int {
        var column = 0
        for scalar in reference.unicodeScalars {
            guard scalar.value >= 65 && scalar.value <= 90 else { break }
            column = column * 26 + Int(scalar.value - 64)
        }
        return max(column - 1, 0)
    }

    private static func parse(_ xml: [UInt8], with delegate: any XMLParserDelegate) throws(UploadError) {
        let parser = XMLParser(data: Data(xml))
        parser.delegate = delegate
        parser.shouldResolveExternalEntities = false
        guard parser.parse() else {
            throw UploadError("the workbook's XML cannot be read (\(parser.parserError.map { "\($0)" } ?? "no reason given"))")
        }
    }
}
