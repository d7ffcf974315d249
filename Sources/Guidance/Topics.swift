/// The Kafka topics of the system.
public struct Topics: Sendable, Equatable {
    public var registered: String
    public var deleted: String
    /// Volunteer service recorded and withdrawn (`ServiceRecorded`, `ServiceWithdrawn`).
    public var service: String
    public var deadLetters: String
    /// Who read which student data (`AccessRecord`), for the notifier to store.
    public var access: String

    public init(
        registered: String = "guidance.registered", deleted: String = "guidance.deleted", service: String = "guidance.service",
        deadLetters: String = "guidance.dlq", access: String = "guidance.access"
    ) {
        self.registered = registered
        self.deleted = deleted
        self.service = service
        self.deadLetters = deadLetters
        self.access = access
    }

    /// Topics named with a prefix, so tests can share nothing.
    public init(prefix: String) {
        self.init(
            registered: prefix + "guidance.registered", deleted: prefix + "guidance.deleted", service: prefix + "guidance.service",
            deadLetters: prefix + "guidance.dlq",
            access: prefix + "guidance.access")
    }

    public var all: [String] { events + [deadLetters, access] }

    /// The topics of events about students, keyed `school/grade`: what the
    /// ingest produces, the notifier stores, and a cutoff waits for.
    public var events: [String] { [registered, deleted, service] }
}
