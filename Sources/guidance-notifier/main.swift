import Common
import Foundation
import Notifier

Memory.limitArenas(to: 2)
Memory.mapBlocks(largerThan: 128 * 1024)
do {
    let config = try NotifierConfig.fromEnvironment()
    let logger = Logger(component: "notifier", level: config.logLevel)
    let service = try NotifierService(config: config, logger: logger)
    try await service.start()
    let signal = await waitForTerminationSignal()
    logger.info("received signal, stopping", ["signal": String(signal)])
    // A part that cannot finish (a store that does not answer) must not keep
    // the replica from stopping: events it did not commit are read again by the group.
    let limit = config.drainPeriod + .seconds(8)
    Thread.detachNewThread {
        // A sleep, and meant: this thread exists only to end the process at the deadline.
        Thread.sleep(forTimeInterval: limit.seconds)
        logger.error(
            "shutdown did not finish in time; exiting, events not committed are read again by the group",
            ["seconds": String(Int(limit.seconds))])
        exit(1)
    }
    await service.shutdown()
} catch {
    Logger(component: "notifier").error("guidance-notifier could not start: \(error)")
    exit(1)
}
