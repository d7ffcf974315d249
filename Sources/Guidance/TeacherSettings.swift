import Foundation

/// A teacher's own choices in 설정, and the defaults of one who made none:
/// whether lists also come by e-mail, when the day's list comes, and the
/// quiet hours during which nothing reaches them by e-mail or push. Times
/// are minutes of the school's day, in its time zone.
package struct TeacherSettings: Sendable, Equatable {
    package var emailLists = true
    /// When the day's list comes, after the school's `digest_time`; nil:
    /// at the school's time.
    package var listMinute: Int?
    /// Quiet from this minute until `quietUntil`, across midnight when it
    /// is the later; equal minutes: no quiet hours.
    package var quietFrom = 21 * 60
    package var quietUntil = 7 * 60

    package init() {}

    package static let standard = TeacherSettings()

    package var hasQuietHours: Bool { quietFrom != quietUntil }

    /// Whether the school-local `minute` lies in the quiet hours.
    package func isQuiet(_ minute: Int) -> Bool {
        guard hasQuietHours else { return false }
        return quietFrom < quietUntil ? (quietFrom..<quietUntil).contains(minute) : minute >= quietFrom || minute < quietUntil
    }

    /// When a message about `digest`, written at `now`, may go to the
    /// teacher by e-mail or push: the day's lists of today (and their
    /// amendments) not before the teacher's own time; then, unless it is
    /// `urgent` (a rule whose `rules.csv` row says so), not within quiet
    /// hours but when they end. `now` when nothing holds it.
    package func release(of digest: Digest, urgent: Bool, school: School, now: Double) -> Double {
        let (today, minute) = Timestamp.local(now, in: school.timeZone)
        // Seconds since the school's midnight; zones are whole minutes from UTC.
        let midnight = now - Double(minute * 60) - now.truncatingRemainder(dividingBy: 60)
        var at = now
        var atMinute = minute
        if let own = listMinute, own > minute, digest.scope != .rule, Timestamp.civilDay(digest.date) == today {
            at = midnight + Double(own * 60)
            atMinute = own
        }
        if !urgent, isQuiet(atMinute) {
            let wait = (quietUntil - atMinute + 1440) % 1440
            let start = at - at.truncatingRemainder(dividingBy: 60)
            at = start + Double(wait * 60)
        }
        return at
    }

    /// `HH:MM` of a minute of the day.
    package static func clock(_ minute: Int) -> String {
        (minute / 60 < 10 ? "0" : "") + String(minute / 60) + ":" + (minute % 60 < 10 ? "0" : "") + String(minute % 60)
    }
}
