import Foundation
import PostgresNIO

/// How to reach a PostgreSQL server: address, account, database, TLS and TCP keepalives.
///
/// `description` names the address and database only: the password never appears in logs,
/// metrics or errors.
public struct PostgresEndpoint: Sendable, CustomStringConvertible {
    public enum Address: Sendable, Equatable {
        /// A Unix-domain socket file (`<dir>/.s.PGSQL.<port>`).
        case unixSocket(path: String)
        case tcp(host: String, port: Int)
    }

    /// How the connection is encrypted.
    public enum TLSMode: Sendable, Equatable {
        /// Plain TCP (loopback and Unix sockets).
        case disable
        /// TLS, certificate not checked (libpq's `require`).
        case require
        /// TLS, the server's certificate checked against `caFile` and its host name (libpq's
        /// `verify-full`).
        case verifyFull(caFile: String)
    }

    /// TCP keepalive settings the server applies to this session (`tcp_keepalives_*`): a peer
    /// that vanished (crash, power loss, cut link) is noticed after about
    /// `idleSeconds + intervalSeconds × count`, and its session-level advisory locks released.
    public struct Keepalive: Sendable, Equatable {
        public var idleSeconds: Int
        public var intervalSeconds: Int
        public var count: Int
        public init(idleSeconds: Int = 10, intervalSeconds: Int = 5, count: Int = 3) {
            self.idleSeconds = idleSeconds
            self.intervalSeconds = intervalSeconds
            self.count = count
        }
        /// Seconds after which a silent peer is declared dead.
        public var boundSeconds: Int { idleSeconds + intervalSeconds * count }
    }

    public var address: Address
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    public var keepalive: Keepalive
    /// Shown in `pg_stat_activity.application_name` (e.g. `jobrun@host`).
    public var applicationName: String

    public init(
        address: Address, username: String, password: String? = nil, database: String, tls: TLSMode = .disable,
        keepalive: Keepalive = Keepalive(), applicationName: String = "jobrun"
    ) {
        self.address = address
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
        self.keepalive = keepalive
        self.applicationName = applicationName
    }

    public var description: String {
        switch address {
        case let .unixSocket(path): return "postgresql://\(username)@[\(path)]/\(database)"
        case let .tcp(host, port): return "postgresql://\(username)@\(host):\(port)/\(database)"
        }
    }

    /// The postgres-nio configuration: keepalives and the application name are sent as startup
    /// parameters, so they hold from the first byte of the session.
    public func configuration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch address {
        case let .unixSocket(path):
            configuration = .init(unixSocketPath: path, username: username, password: password, database: database)
        case let .tcp(host, port):
            let tlsSetting: PostgresConnection.Configuration.TLS
            switch tls {
            case .disable:
                tlsSetting = .disable
            case .require:
                var c = TLSConfiguration.makeClientConfiguration()
                c.certificateVerification = .none
                tlsSetting = .require(try NIOSSLContext(configuration: c))
            case let .verifyFull(caFile):
                var c = TLSConfiguration.makeClientConfiguration()
                c.trustRoots = .file(caFile)
                c.certificateVerification = .fullVerification
                tlsSetting = .require(try NIOSSLContext(configuration: c))
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tlsSetting)
        }
        configuration.options.connectTimeout = .seconds(15)
        configuration.options.additionalStartupParameters = [
            ("application_name", applicationName),
            ("tcp_keepalives_idle", "\(keepalive.idleSeconds)"),
            ("tcp_keepalives_interval", "\(keepalive.intervalSeconds)"),
            ("tcp_keepalives_count", "\(keepalive.count)"),
            // A query running for a client that is gone is noticed within this period.
            ("client_connection_check_interval", "\(max(1, keepalive.intervalSeconds) * 1000)"),
        ]
        return configuration
    }
}
