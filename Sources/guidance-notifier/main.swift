import Common
import Foundation
import Notifier

Memory.limitArenas()
do {
    let config = try NotifierConfig.fromEnvironment()
    let logger = Logger(component: "notifier", level: config.logLevel)
    let service = try NotifierService(config: config, logger: logger)
    try await service.start()
    let signal = await waitForTerminationSignal()
    logger.info("received signal, stopping", ["signal": String(signal)])
    await service.shutdown()
} catch {
    Logger(component: "notifier").error("guidance-notifier could not start: \(error)")
    exit(1)
}
