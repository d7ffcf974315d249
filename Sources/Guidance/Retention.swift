import Common

/// How long student data is kept (docs/guarantees.md, "Data protection"); both services
/// read the same settings.
package struct Retention: Sendable, Equatable {
    /// `RETENTION_DAYS`: guidances, digests, their deliveries, pending
    /// amendments and run records of school days older than this are purged,
    /// and registrations and digest runs for such days are refused.
    package var days = 365
    /// `TOPIC_RETENTION_DAYS`: how long Kafka keeps the events topics
    /// (`retention.ms` of the topics the ingest creates).
    package var topicDays = 14
    /// `DLQ_RETENTION_DAYS`: how long the dead-letter topic keeps what it holds.
    package var deadLetterDays = 30
    /// `ACCESS_LOG_DAYS`: how long the record of who read what is kept.
    package var accessLogDays = 730

    package init() {}

    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> Retention {
        var retention = Retention()
        retention.days = try environment.int("RETENTION_DAYS", default: retention.days, range: 1...36_500)
        retention.topicDays = try environment.int("TOPIC_RETENTION_DAYS", default: retention.topicDays, range: 1...36_500)
        retention.deadLetterDays = try environment.int("DLQ_RETENTION_DAYS", default: retention.deadLetterDays, range: 1...36_500)
        retention.accessLogDays = try environment.int("ACCESS_LOG_DAYS", default: retention.accessLogDays, range: 1...36_500)
        return retention
    }

    /// How far back a guidance's `occurredAt`, or a digest run's date, may
    /// reach: the smaller of 400 days and the retention, so that nothing is
    /// accepted that the next purge would remove.
    package var windowDays: Int { min(Registration.pastWindowDays, days) }

    /// The oldest school day kept when the school's today is `today`
    /// (`YYYY-MM-DD`); older days are purged. Nil for a malformed date.
    package func firstKeptDay(today: String) -> String? {
        Timestamp.civilDay(today).map { Timestamp.dateString(civil: $0 - days) }
    }
}
