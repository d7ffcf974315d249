import Foundation
import Synchronization

/// The signals a service answers (SIGTERM and SIGINT to stop, SIGHUP to
/// reload the roster), each counted by a handler that does nothing else (one
/// atomic add: async-signal-safe) and read by whoever waits for it. One way
/// for all three: a Dispatch signal source would need the signal blocked in
/// every thread, and libmicrohttpd's and librdkafka's threads start before it
/// could be, so on Linux the kernel may hand the signal to one of those
/// threads, where the source never sees it (seen with SIGHUP).
package enum Signals {
    /// How many times `signal` arrived since `count(_:)` was first asked for
    /// it. From that first call on, the signal no longer has its default
    /// action: a second SIGTERM does not kill a process that is draining.
    package static func count(_ signal: Int32) -> Int {
        install(signal)
        return switch signal {
        case SIGTERM: terminations.load(ordering: .acquiring)
        case SIGINT: interrupts.load(ordering: .acquiring)
        case SIGHUP: hangups.load(ordering: .acquiring)
        default: 0
        }
    }

    private static let installed = Mutex<Set<Int32>>([])

    private static func install(_ signal: Int32) {
        installed.withLock { installed in
            guard [SIGTERM, SIGINT, SIGHUP].contains(signal), installed.insert(signal).inserted else { return }
            var action = sigaction()
            action.__sigaction_handler.sa_handler = countSignal
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
        }
    }
}

/// Waits for SIGTERM or SIGINT and returns its number, looking every 100 ms.
package func waitForTerminationSignal() async -> Int32 {
    let (terms, interrupts) = (Signals.count(SIGTERM), Signals.count(SIGINT))
    while true {
        if Signals.count(SIGTERM) != terms { return SIGTERM }
        if Signals.count(SIGINT) != interrupts { return SIGINT }
        do { try await Task.sleep(for: .milliseconds(100)) } catch { return SIGTERM }
    }
}

private let terminations = Atomic<Int>(0)
private let interrupts = Atomic<Int>(0)
private let hangups = Atomic<Int>(0)

/// The handler: one atomic add.
private func countSignal(_ signal: Int32) {
    switch signal {
    case SIGTERM: terminations.add(1, ordering: .releasing)
    case SIGINT: interrupts.add(1, ordering: .releasing)
    case SIGHUP: hangups.add(1, ordering: .releasing)
    default: break
    }
}
