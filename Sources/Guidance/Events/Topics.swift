/// The Kafka topics of the system.
package struct Topics: Sendable, Equatable {
    package var registered: String
    package var deleted: String
    /// 봉사 (community service) recorded and withdrawn (`CommunityServiceRecorded`, `CommunityServiceWithdrawn`).
    package var communityService: String
    /// The steps of cases (`CaseStep`).
    package var cases: String
    package var deadLetters: String
    /// Who read which student data (`AccessRecord`), for the notifier to store.
    package var access: String
    /// Schools' roster versions (`RosterVersion`), read whole by every replica; not in `all`: the roster log makes it.
    package var roster: String
    /// Schools' uploaded photos (`PhotoLog`), read whole by every replica; not in `all`.
    package var photos: String

    package init(
        registered: String = "guidance.registered", deleted: String = "guidance.deleted", communityService: String = "guidance.service",
        cases: String = "guidance.cases", deadLetters: String = "guidance.dlq", access: String = "guidance.access",
        roster: String = "guidance.roster", photos: String = "guidance.photos"
    ) {
        self.registered = registered
        self.deleted = deleted
        self.communityService = communityService
        self.cases = cases
        self.deadLetters = deadLetters
        self.access = access
        self.roster = roster
        self.photos = photos
    }

    /// Topics named with a prefix, so tests can share nothing.
    package init(prefix: String) {
        self.init(
            registered: prefix + "guidance.registered", deleted: prefix + "guidance.deleted", communityService: prefix + "guidance.service",
            cases: prefix + "guidance.cases", deadLetters: prefix + "guidance.dlq",
            access: prefix + "guidance.access", roster: prefix + "guidance.roster",
            photos: prefix + "guidance.photos")
    }

    package var all: [String] { events + [deadLetters, access] }

    /// The topics of events about students, keyed `school/grade`: what the
    /// ingest produces, the notifier stores, and a cutoff waits for.
    package var events: [String] { [registered, deleted, communityService, cases] }
}
