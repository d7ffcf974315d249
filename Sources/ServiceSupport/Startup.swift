import Access
import Sessions
import Common
import Foundation
import Guidance
import HTTP
import Kafka

/// Start-up steps both services share, each failing with the variable to
/// fix and how, never with a bare file or socket error.
package enum Startup {
    /// The roster in `directory` (`ROSTER_DIR`).
    package static func roster(from directory: String) throws(ConfigurationError) -> Roster {
        let schools = URL(fileURLWithPath: directory).appendingPathComponent("schools.csv").path
        guard FileManager.default.fileExists(atPath: schools) else {
            throw ConfigurationError(
                variable: "ROSTER_DIR",
                reason: "'\(directory)' has no schools.csv; set ROSTER_DIR to the folder holding schools.csv, students.csv and teachers.csv (examples/roster is the sample)")
        }
        do {
            return try Roster.load(from: directory)
        } catch {
            throw ConfigurationError(variable: "ROSTER_DIR", reason: "\(directory)/\(error); fix the file and start again")
        }
    }

    /// The roster of `directory`, served live: reloaded when its files change
    /// or on SIGHUP once the service calls `watch`.
    package static func liveRoster(from directory: String, logger: Logger, metrics: Metrics) throws(ConfigurationError) -> LiveRoster {
        LiveRoster(directory: directory, roster: try roster(from: directory), logger: logger.with(["part": "roster"]), metrics: metrics)
    }

    /// Starts `server` on the port `variable` names.
    package static func listen(_ server: HTTPServer, portVariable variable: String, service: String) throws(ConfigurationError) {
        do {
            try server.start()
        } catch {
            let port = server.config.port
            let reason = error.code == EADDRINUSE
                ? "port \(port) is in use: another \(service) or another program listens there; stop it or set \(variable) to a free port"
                : error.code == EACCES
                ? "port \(port) needs privileges this process lacks; set \(variable) to a port above 1023"
                : error.message
            throw ConfigurationError(variable: variable, reason: reason)
        }
    }
}

/// The long-lived parts both services have, for their `Parts`.
extension Part {
    /// Closing flushes what the other parts sent and waits for the
    /// acknowledgements, at most `timeout`: off the cooperative pool.
    package static func producer(_ producer: Producer, timeout: Duration) -> Part {
        Part("producer", stop: { _ = try? await blocking { producer.close(timeout: timeout) } })
    }

    package static func accessLog(_ log: AccessLog) -> Part {
        Part("access log", start: { log.start() }, stop: { await log.stop() })
    }

    package static func sessionLog(_ sessions: Sessions) -> Part {
        Part("session log", start: { sessions.log.start() }, stop: { await sessions.log.stop() })
    }

    /// Listens on the port `variable` names; stopping drains requests in flight.
    package static func http(_ server: HTTPServer, portVariable variable: String, service: String, drain: Duration) -> Part {
        Part("http", start: { try Startup.listen(server, portVariable: variable, service: service) }, stop: { await server.shutdown(gracePeriod: drain) })
    }

    package static func rosterWatch(_ roster: LiveRoster, every interval: Duration) -> Part {
        Part("roster watch", start: { roster.watch(every: interval) }, stop: { await roster.stopWatching() })
    }
}
