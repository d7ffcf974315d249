import Dispatch
import Foundation

/// Waits for SIGTERM or SIGINT and returns its number. The signals' default
/// action is disabled for the life of the process, so a second signal does not
/// kill a process that is draining.
package func waitForTerminationSignal() async -> Int32 {
    await withCheckedContinuation { continuation in
        let queue = DispatchQueue(label: "signals")
        let resumed = SignalLatch()
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if resumed.fire() { continuation.resume(returning: number) }
            }
            source.resume()
            SignalLatch.keep(source)
        }
    }
}

private final class SignalLatch: @unchecked Sendable {
    private var fired = false
    private static let lock = NSLock()
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Called on the signal queue only.
    func fire() -> Bool {
        defer { fired = true }
        return !fired
    }

    static func keep(_ source: any DispatchSourceSignal) {
        lock.withLock { sources.append(source) }
    }
}
