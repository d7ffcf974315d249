import Common

/// Whether a service may run with nobody signing in (`AUTHENTICATION`).
package enum AuthenticationMode: String, Sendable {
    /// The default: a roster without `tokens.csv` stops the service at
    /// start, and a reload that removes it is refused.
    case required
    /// Without `tokens.csv` anyone who reaches the port may use it (a test
    /// network; the services say so loudly at start).
    case optional
}

/// What both services read for their pages and sign-in: `SESSION_SECRET`
/// (shared by every replica of both services), `SESSION_DAYS`,
/// `TRUSTED_PROXIES`, `HTTP_CONNECTIONS_PER_ADDRESS` and `AUTHENTICATION`.
package struct WebSettings: Sendable {
    /// nil: a random secret per process (sessions then end at restart and
    /// work on one replica only; the service warns).
    package var secret: String?
    package var days: Int
    package var topic: String
    package var clients: ClientAddresses
    /// Connections one address may hold open: a whole school behind one NAT
    /// address needs more than the default.
    package var connectionsPerAddress: Int
    /// Failed sign-ins naming one teacher in 10 minutes before they wait
    /// (`SIGN_IN_FAILURE_LIMIT`), and from one client address
    /// (`SIGN_IN_FAILURE_LIMIT_PER_ADDRESS`: a school behind one NAT
    /// address carries every teacher's mistakes).
    package var failedSignInLimit = 10
    package var failedSignInLimitPerAddress = 100
    package var authentication = AuthenticationMode.required

    package init(
        secret: String? = nil, days: Int = 30, topic: String = "guidance.sessions", clients: ClientAddresses = ClientAddresses(),
        connectionsPerAddress: Int = 500
    ) {
        self.secret = secret
        self.days = days
        self.topic = topic
        self.clients = clients
        self.connectionsPerAddress = connectionsPerAddress
    }

    package static func fromEnvironment(_ environment: Environment) throws(ConfigurationError) -> WebSettings {
        let secret = environment["SESSION_SECRET"]
        if let secret, secret.utf8.count < 32 {
            throw ConfigurationError(variable: "SESSION_SECRET", reason: "must be at least 32 characters (e.g. openssl rand -base64 32)")
        }
        var settings = WebSettings(
            secret: secret, days: try environment.int("SESSION_DAYS", default: 30, range: 1...365),
            topic: environment.string("SESSION_TOPIC", default: "guidance.sessions"),
            clients: try ClientAddresses.fromEnvironment(environment),
            connectionsPerAddress: try environment.int("HTTP_CONNECTIONS_PER_ADDRESS", default: 500, range: 1...100_000))
        settings.failedSignInLimit = try environment.int("SIGN_IN_FAILURE_LIMIT", default: 10, range: 1...1_000_000)
        settings.failedSignInLimitPerAddress = try environment.int("SIGN_IN_FAILURE_LIMIT_PER_ADDRESS", default: 100, range: 1...1_000_000)
        let mode = environment.string("AUTHENTICATION", default: "required")
        guard let authentication = AuthenticationMode(rawValue: mode) else {
            throw ConfigurationError(variable: "AUTHENTICATION", reason: "'\(mode)' is neither required (the default) nor optional")
        }
        settings.authentication = authentication
        return settings
    }
}
