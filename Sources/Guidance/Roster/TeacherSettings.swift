import Foundation

/// A teacher's own choices in 설정, and the defaults of one who made none:
/// whether lists also come by e-mail, when the day's list comes, and the
/// quiet hours during which nothing reaches them by e-mail or push. Times
/// are minutes of the school's day, in its time zone.
package struct TeacherSettings: Sendable, Equatable {
    package var emailLists = true
    /// When the day's list comes; nil: at the school's `digest_time`. An
    /// earlier time gets the list as it stands then, and the rest as an 정정
    /// at the school's time; a later one holds the list's e-mail and push.
    package var listMinute: Int?
    /// The teacher's own quiet hours (`QuietHours.none`: none); nil: the
    /// service's default (`QUIET_HOURS`).
    package var quietHours: QuietHours?

    package init() {}

    package static let standard = TeacherSettings()

    /// When a message about `digest`, written at `now`, may go to the
    /// teacher by e-mail or push: the day's lists of today (and their
    /// amendments) not before the teacher's own time; then, unless it is
    /// `urgent` (a rule whose `rules.csv` row says so), not within quiet
    /// hours but when they end. `now` when nothing holds it.
    package func release(of digest: Digest, urgent: Bool, school: School, now: Double, quietByDefault: QuietHours?) -> Double {
        release(scope: digest.scope, date: digest.date, urgent: urgent, school: school, now: now, quietByDefault: quietByDefault)
    }

    /// The same for a message of `scope` about `date` (a held delivery's kind).
    package func release(scope: DigestScope, date: String, urgent: Bool, school: School, now: Double, quietByDefault: QuietHours?)
        -> Double
    {
        let quiet = quietHours ?? quietByDefault ?? .none
        let (today, minute) = Timestamp.local(now, in: school.timeZone)
        // Seconds since the school's midnight; zones are whole minutes from UTC.
        let midnight = now - Double(minute * 60) - now.truncatingRemainder(dividingBy: 60)
        var at = now
        var atMinute = minute
        if let own = listMinute, own > minute, scope != .rule, Timestamp.civilDay(date) == today {
            at = midnight + Double(own * 60)
            atMinute = own
        }
        if !urgent, quiet.contains(atMinute) {
            let wait = (quiet.until - atMinute + 1440) % 1440
            let start = at - at.truncatingRemainder(dividingBy: 60)
            at = start + Double(wait * 60)
        }
        return at
    }
}

/// Hours of the school's day in which nothing is sent to a teacher by
/// e-mail or push: from `from` until `until` (minutes), across midnight
/// when `from` is the later; equal: none.
package struct QuietHours: Sendable, Equatable {
    package let from: Int
    package let until: Int

    package init(from: Int, until: Int) {
        self.from = from
        self.until = until
    }

    package static let standard = QuietHours(from: 21 * 60, until: 7 * 60)
    package static let none = QuietHours(from: 0, until: 0)

    package var isNone: Bool { from == until }

    package func contains(_ minute: Int) -> Bool {
        guard !isNone else { return false }
        return from < until ? (from..<until).contains(minute) : minute >= from || minute < until
    }

    /// `21:00-07:00`, or `off`.
    package var text: String { isNone ? "off" : Roster.clock(from) + "-" + Roster.clock(until) }

    /// Of `text`'s form; nil when it is not that.
    package init?(_ text: String) {
        if text == "off" {
            self = .none
            return
        }
        let ends = text.split(separator: "-")
        guard ends.count == 2, let from = Roster.minuteOfDay(String(ends[0])), let until = Roster.minuteOfDay(String(ends[1])),
            from != until
        else { return nil }
        self.init(from: from, until: until)
    }
}
