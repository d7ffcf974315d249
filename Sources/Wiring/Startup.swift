import Access
import Common
import Foundation
import Guidance
import HTTP
import Kafka
import Sessions

/// Start-up steps both services share, each failing with the variable to
/// fix and how, never with a bare file or socket error.
package enum Startup {
    /// The roster in `directory` (`ROSTER_DIR`).
    package static func roster(from directory: String) throws(ConfigurationError) -> Roster {
        let schools = URL(fileURLWithPath: directory).appendingPathComponent("schools.csv").path
        guard FileManager.default.fileExists(atPath: schools) else {
            throw ConfigurationError(
                variable: "ROSTER_DIR",
                reason:
                    "'\(directory)' has no schools.csv; set ROSTER_DIR to the folder holding schools.csv, students.csv and teachers.csv (examples/roster is the sample)"
            )
        }
        do {
            return try Roster.load(from: directory)
        } catch {
            throw ConfigurationError(variable: "ROSTER_DIR", reason: "\(directory)/\(error); fix the file and start again")
        }
    }

    /// The roster of `directory`, served live: reloaded when its files change
    /// or on SIGHUP once the service calls `watch`; with authentication
    /// required, a change that removes `tokens.csv` is refused.
    package static func liveRoster(
        from directory: String, web: WebSettings, clock: @escaping @Sendable () -> Double, logger: Logger, metrics: Metrics
    ) throws(ConfigurationError) -> LiveRoster {
        LiveRoster(
            directory: directory, roster: try roster(from: directory), requireTokens: web.authentication == .required, clock: clock,
            logger: logger.with(["part": "roster"]), metrics: metrics)
    }

    /// A service whose roster has no `tokens.csv` signs nobody in: it does
    /// not start unless `AUTHENTICATION=optional` says that is wanted, and
    /// then says so at start. `exposes`: what anyone could then do.
    package static func checkCredentials(_ roster: Roster, web: WebSettings, directory: String, exposes: String, logger: Logger)
        throws(ConfigurationError)
    {
        guard !roster.authenticationEnabled else { return }
        guard web.authentication == .optional else {
            throw ConfigurationError(
                variable: "ROSTER_DIR",
                reason: "'\(directory)' has no tokens.csv, so nobody would need to sign in. Issue the first admin's token first "
                    + "(guidance-admin token issue TEACHER_ID writes tokens.csv; a header-only tokens.csv turns sign-in on with e-mail links only), "
                    + "or set AUTHENTICATION=optional for a test network")
        }
        logger.warning(
            "AUTHENTICATION IS OFF (AUTHENTICATION=optional and no tokens.csv in the roster): anyone who reaches this port may \(exposes)",
            ["rosterDir": directory])
    }

    /// Starts `server` on the port `variable` names.
    package static func listen(_ server: HTTPServer, portVariable variable: String, service: String) throws(ConfigurationError) {
        do {
            try server.start()
        } catch {
            let port = server.config.port
            let reason =
                error.code == EADDRINUSE
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
    /// acknowledgements, at most `timeout`: on the broker's threads.
    package static func producer(_ producer: Producer, timeout: Duration) -> Part {
        Part(
            "producer", waits: [producer.waits],
            stop: { _ = try? await BlockingExecutor.broker.run { producer.close(timeout: timeout) } })
    }

    /// Listens on the port `variable` names; stopping drains requests in flight.
    package static func http(_ server: HTTPServer, portVariable variable: String, service: String, drain: Duration) -> Part {
        Part(
            "http", waits: HTTPServer.waits, start: { try Startup.listen(server, portVariable: variable, service: service) },
            stop: { await server.shutdown(gracePeriod: drain) })
    }
}
