import Foundation
import Synchronization

/// The signals a service answers (SIGTERM and SIGINT to stop, SIGHUP to
/// reload the roster), each counted by a handler that does only what is
/// async-signal-safe: one atomic add, and one byte written to a pipe. A thread
/// of its own blocks reading that pipe and rings `bell`, which whoever waits
/// for a signal waits on. One way for all three: a Dispatch signal source
/// would need the signal blocked in every thread, and libmicrohttpd's and
/// librdkafka's threads start before it could be, so on Linux the kernel may
/// hand the signal to one of those threads, where the source never sees it
/// (seen with SIGHUP); a handler runs on whichever thread gets it.
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

    /// Rings after any of the counted signals arrived (read `rings`, then the
    /// counts, then wait).
    package static let bell: Doorbell = {
        let bell = Doorbell()
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return bell }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        wakeFD.store(ends[1], ordering: .releasing)
        let readEnd = ends[0]
        let reader = Thread {
            var bytes = [UInt8](repeating: 0, count: 64)
            while true {
                let count = read(readEnd, &bytes, bytes.count)
                if count < 0 && errno != EINTR { return }
                bell.ring()
            }
        }
        reader.name = "signals"
        reader.start()
        return bell
    }()

    private static let installed = Mutex<Set<Int32>>([])

    private static func install(_ signal: Int32) {
        _ = bell
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

/// Waits for SIGTERM or SIGINT and returns its number.
package func waitForTerminationSignal() async -> Int32 {
    let (terms, interrupts) = (Signals.count(SIGTERM), Signals.count(SIGINT))
    while true {
        let seen = Signals.bell.rings
        if Signals.count(SIGTERM) != terms { return SIGTERM }
        if Signals.count(SIGINT) != interrupts { return SIGINT }
        if Task.isCancelled { return SIGTERM }
        await Signals.bell.wait(after: seen, atMost: .seconds(3600))
    }
}

fileprivate let terminations = Atomic<Int>(0)
fileprivate let interrupts = Atomic<Int>(0)
fileprivate let hangups = Atomic<Int>(0)
/// The pipe's writing end (non-blocking: a full pipe already wakes the reader).
fileprivate let wakeFD = Atomic<Int32>(-1)

/// The handler: one atomic add and one `write(2)`, both async-signal-safe.
fileprivate func countSignal(_ signal: Int32) {
    let saved = errno
    switch signal {
    case SIGTERM: terminations.add(1, ordering: .releasing)
    case SIGINT: interrupts.add(1, ordering: .releasing)
    case SIGHUP: hangups.add(1, ordering: .releasing)
    default: break
    }
    var byte = UInt8(truncatingIfNeeded: signal)
    _ = write(wakeFD.load(ordering: .acquiring), &byte, 1)
    errno = saved
}
