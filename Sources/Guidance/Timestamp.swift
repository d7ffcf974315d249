import Foundation

/// RFC 3339 timestamps (`2026-11-30T07:52:10+09:00`), parsed and written by
/// hand: fast, allocation-light and safe on any thread, unlike the formatters.
package enum Timestamp {
    /// Seconds since the epoch, or nil when `text` is not RFC 3339 with an offset.
    package static func parse(_ text: String) -> Double? {
        let bytes = Array(text.utf8)
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20,
            let year = digits(0, 4), bytes[4] == 45, let month = digits(5, 2), bytes[7] == 45, let day = digits(8, 2),
            bytes[10] == 84 || bytes[10] == 116,
            let hour = digits(11, 2), bytes[13] == 58, let minute = digits(14, 2), bytes[16] == 58, let second = digits(17, 2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == 46 {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 90, 122:
            index += 1
        case 43, 45:
            guard let offsetHour = digits(index + 1, 2), index + 3 < bytes.count, bytes[index + 3] == 58,
                let offsetMinute = digits(index + 4, 2), offsetHour < 24, offsetMinute < 60
            else { return nil }
            offset = (offsetHour * 60 + offsetMinute) * 60 * (bytes[index] == 45 ? -1 : 1)
            index += 6
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }

    /// UTC, whole milliseconds when there are any: `2026-11-29T22:52:10.250Z`.
    package static func format(_ seconds: Double) -> String {
        let milliseconds = Int((seconds * 1000).rounded(.down))
        let whole = Int((Double(milliseconds) / 1000).rounded(.down))
        let millis = milliseconds - whole * 1000
        let days = Int((Double(whole) / 86_400).rounded(.down))
        let secondOfDay = whole - days * 86_400
        let (year, month, day) = civilFromDays(days)
        // Written into one small buffer: the notifier formats a time per event.
        var text: [UInt8] = []
        text.reserveCapacity(24)
        appendDate(year, month, day, to: &text)
        text.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3600, 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 3600 / 60, 2, to: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, 2, to: &text)
        if millis > 0 {
            text.append(UInt8(ascii: "."))
            appendDigits(millis, 3, to: &text)
        }
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    package static func now() -> Double { Date().timeIntervalSince1970 }

    /// The instant as a clock in `zone` shows it: the day (days since
    /// 1970-01-01) and the minute of that day. The one place local time is
    /// worked out.
    package static func local(_ seconds: Double, in zone: TimeZone) -> (day: Int, minuteOfDay: Int) {
        let local = Int((seconds + Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: seconds)))).rounded(.down))
        let day = Int((Double(local) / 86_400).rounded(.down))
        return (day, (local - day * 86_400) / 60)
    }

    /// `YYYY-MM-DD` of the instant in `zone`.
    package static func localDate(_ seconds: Double, in zone: TimeZone) -> String {
        let (year, month, day) = civilFromDays(local(seconds, in: zone).day)
        return dateString(year, month, day)
    }

    /// `YYYY-MM-DD` of a day counted from 1970-01-01.
    package static func dateString(civil days: Int) -> String {
        let (year, month, day) = civilFromDays(days)
        return dateString(year, month, day)
    }

    /// `YYYY-MM-DD`.
    package static func dateString(_ year: Int, _ month: Int, _ day: Int) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(10)
        appendDate(year, month, day, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// The instant as teachers read a clock in `zone`: `오전 8:18`, `오후 2:28`
    /// (the pages write the same with `ko-KR`'s `hour: 'numeric'`).
    package static func koreanTime(_ seconds: Double, in zone: TimeZone) -> String {
        let minuteOfDay = local(seconds, in: zone).minuteOfDay
        let hour = minuteOfDay / 60
        let twelve = hour % 12 == 0 ? 12 : hour % 12
        return (hour < 12 ? "오전 " : "오후 ") + String(twelve) + ":" + pad(minuteOfDay % 60, 2)
    }

    /// `2026-12-01` as teachers write a day: `12월 1일(화)`; the text itself
    /// when it is not a date.
    package static func koreanDay(_ date: String) -> String {
        guard let (year, month, day) = parseDate(date) else { return date }
        let weekdays = ["목", "금", "토", "일", "월", "화", "수"]
        let days = daysFromCivil(year: year, month: month, day: day)
        return "\(month)월 \(day)일(\(weekdays[((days % 7) + 7) % 7]))"
    }

    /// `YYYY-MM-DD` as days since 1970-01-01; nil when it is not a date.
    package static func civilDay(_ date: String) -> Int? {
        parseDate(date).map { daysFromCivil(year: $0.year, month: $0.month, day: $0.day) }
    }

    /// Parses `YYYY-MM-DD` into its parts.
    package static func parseDate(_ text: String) -> (year: Int, month: Int, day: Int)? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        return (year, month, day)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since the Monday of the week holding day `civil` (days since
    /// 1970-01-01): 0 on a Monday, 6 on a Sunday. Day 0 was a Thursday.
    package static func daysSinceMonday(civil: Int) -> Int {
        ((civil + 3) % 7 + 7) % 7
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    package static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    package static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        var text: [UInt8] = []
        appendDigits(value, width, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// `YYYY-MM-DD`.
    private static func appendDate(_ year: Int, _ month: Int, _ day: Int, to text: inout [UInt8]) {
        appendDigits(year, 4, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(month, 2, to: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(day, 2, to: &text)
    }

    /// `value` in decimal, zero-padded to `width` digits (wider if it needs).
    private static func appendDigits(_ value: Int, _ width: Int, to text: inout [UInt8]) {
        guard value >= 0 else {
            text.append(UInt8(ascii: "-"))
            return appendDigits(-value, width, to: &text)
        }
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        for _ in digits..<max(digits, width) { text.append(UInt8(ascii: "0")) }
        var divisor = 1
        for _ in 1..<digits { divisor *= 10 }
        var remaining = value
        while divisor > 0 {
            text.append(UInt8(ascii: "0") + UInt8(remaining / divisor))
            remaining %= divisor
            divisor /= 10
        }
    }
}
