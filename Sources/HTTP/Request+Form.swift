import Foundation

extension Request {
    /// An HTML form's body (`application/x-www-form-urlencoded`) as names →
    /// values, the first of a repeated name kept: 415 for another content
    /// type, 400 when a part does not decode.
    package func form() throws(HTTPError) -> [String: String] {
        let contentType = (header("content-type") ?? "").split(separator: ";").first.map { $0.trimmingWhitespace().lowercased() }
        guard contentType == "application/x-www-form-urlencoded" else {
            throw HTTPError(status: 415, detail: "send the form as application/x-www-form-urlencoded")
        }
        var fields: [String: String] = [:]
        for part in body.split(separator: UInt8(ascii: "&")) {
            let pair = part.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Request.formDecode(pair[0]), let value = Request.formDecode(pair.count > 1 ? pair[1] : []) else {
                throw HTTPError.badRequest("the form's body is not valid percent-encoded UTF-8")
            }
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    private static func formDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        let plusAsSpace = bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }
        return String(bytes: plusAsSpace, encoding: .utf8)?.removingPercentEncoding
    }
}
