import Common
import Foundation
import Notifier

let logger = Logger(component: "notifier")
do {
    let config = try NotifierConfig.fromEnvironment()
    let service = try NotifierService(config: config, logger: logger)
    try await service.start()
    let signal = await waitForTerminationSignal()
    logger.info("received signal, stopping", ["signal": String(signal)])
    await service.shutdown()
} catch {
    logger.error("guidance-notifier could not start: \(error)")
    exit(1)
}
