/// Text placed into HTML, in an element or a quoted attribute.
package enum HTML {
    /// `&`, `<`, `>`, `"` and `'` as character references: a roster name or a
    /// teacher's detail of `<script>` reads as text wherever it is put.
    package static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}
