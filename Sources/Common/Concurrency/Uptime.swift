/// The clock waits, periods, deadlines and ages are measured on when
/// nothing else is given: the system's continuous clock. The one place a
/// library makes it; a service passes its own (`IngestConfig.timer`,
/// `NotifierConfig.timer`), and a test a `ManualClock` it moves.
package let systemTimer: any Clock<Duration> = ContinuousClock()

/// A clock's readings as the time since this value was made: deadlines and
/// ages kept and compared as plain `Duration`s whatever the clock, so that
/// what keeps them (a connection table, a producer's queue) need not be
/// generic over it.
package struct Uptime: Sendable {
    private let read: @Sendable () -> Duration

    package init(_ clock: any Clock<Duration> = systemTimer) {
        read = Uptime.reader(clock)
    }

    private static func reader<C: Clock>(_ clock: C) -> @Sendable () -> Duration where C.Duration == Duration {
        let origin = clock.now
        return { origin.duration(to: clock.now) }
    }

    /// The time since this value was made, on its clock.
    package var now: Duration { read() }
}
