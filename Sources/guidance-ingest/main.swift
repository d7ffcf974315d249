import Common
import Foundation
import Ingest

let logger = Logger(component: "ingest")
do {
    let config = try IngestConfig.fromEnvironment()
    let service = try IngestService(config: config, logger: logger)
    try await service.start()
    let signal = await waitForTerminationSignal()
    logger.info("received signal, stopping", ["signal": String(signal)])
    await service.shutdown()
} catch {
    logger.error("guidance-ingest could not start: \(error)")
    exit(1)
}
