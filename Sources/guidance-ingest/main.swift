import Common
import Foundation
import Ingest

Memory.limitArenas(to: 8)
do {
    let config = try IngestConfig.fromEnvironment()
    let logger = Logger(component: "ingest", level: config.logLevel)
    let service = try IngestService(config: config, logger: logger)
    try await service.start()
    let signal = await waitForTerminationSignal()
    logger.info("received signal, stopping", ["signal": String(signal)])
    await service.shutdown()
} catch {
    Logger(component: "ingest").error("guidance-ingest could not start: \(error)")
    exit(1)
}
