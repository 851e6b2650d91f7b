import Foundation
import Logging
import Postbox
import PostgresNIO

/// One PostgreSQL connection used synchronously: every call blocks its caller until the
/// server answers. The connection runs on a private event loop, and a call made on that loop
/// is refused (it would wait on itself), so callers are plain threads — Postbox's serial
/// queues, never Swift's cooperative pool or an event loop.
///
/// Not thread-safe: confine to one thread or serial queue, like `SqliteValueBox`.
public final class PostgresSession {
    /// The loop every session of the process runs on: one thread, created once.
    static let eventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private static let logger = Logger(label: "jobrun.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    public let endpoint: PostgresEndpoint
    /// Names the store or lock in errors (no address, no credentials).
    public let name: String
    private var connection: PostgresConnection?
    /// Set by `close()`: a session its owner closed stays closed.
    private var closedByOwner = false
    /// The deadline of a call made without one (seconds; nil: none).
    public var defaultTimeout: Double?

    public init(endpoint: PostgresEndpoint, name: String) throws {
        self.endpoint = endpoint
        self.name = name
        try connect()
    }

    private func connect() throws {
        try Self.refuseOnEventLoop()
        let configuration = try endpoint.configuration()
        do {
            connection = try PostgresConnection.connect(
                on: Self.eventLoopGroup.next(), configuration: configuration, id: Int(getpid()), logger: Self.logger
            ).wait()
        } catch {
            throw Self.describe(error, name: name)
        }
    }

    /// Opens a new connection if the server closed this one (a restart, a terminated backend):
    /// call it only between transactions, where nothing of the old session is lost.
    public func reconnectIfClosed() throws {
        guard !closedByOwner, connection?.isClosed ?? true else { return }
        connection = nil
        try connect()
    }

    deinit { close() }

    public var isClosed: Bool { connection?.isClosed ?? true }

    /// Closes the connection (the server ends its transaction and releases its locks).
    public func close() {
        closedByOwner = true
        guard let connection else { return }
        self.connection = nil
        try? connection.close().wait()
    }

    /// Runs one statement and returns its rows. With `timeout` (seconds), a server that has not
    /// answered by then — a cut link, a dead host, which TCP alone reports only after many
    /// minutes — fails the call with SQLSTATE 57014 and closes the connection (the next call on
    /// it fails; `reconnectIfClosed` opens another). Without `timeout`, `defaultTimeout` applies.
    @discardableResult
    public func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings(), timeout: Double? = nil) throws -> [PostgresRow] {
        let timeout = timeout ?? defaultTimeout
        guard let connection else { throw PostboxError.server(store: name, code: "08003", message: "connection is closed") }
        // A query written to a channel the server already closed may never be answered.
        if connection.isClosed { throw PostboxError.server(store: name, code: "08006", message: "connection to the database server lost") }
        try Self.refuseOnEventLoop()
        let answer = connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: Self.logger)
        if let timeout {
            let answered = DispatchSemaphore(value: 0)
            answer.whenComplete { _ in answered.signal() }
            if answered.wait(timeout: .now() + max(0.001, timeout)) == .timedOut {
                // Closing the channel fails the pending query; its answer, if it ever comes, is dropped.
                connection.close().whenComplete { _ in }
                throw PostboxError.server(
                    store: name, code: "57014", message: "no answer from the database server within \(Self.seconds(timeout)) (connection closed)")
            }
        }
        do {
            let result = try answer.wait()
            return Array(result.rows)
        } catch {
            throw Self.describe(error, name: name)
        }
    }

    /// Calls `handler` (on the session's event loop: it must not block) for every notification
    /// sent to `channel` (`NOTIFY`, `pg_notify`) while this connection lasts; postgres-nio sends
    /// the `LISTEN` itself.
    public func listen(_ channel: String, _ handler: @escaping @Sendable () -> Void) throws {
        guard let connection, !connection.isClosed else {
            throw PostboxError.server(store: name, code: "08003", message: "connection is closed")
        }
        connection.addListener(channel: channel) { _, _ in handler() }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }

    /// The advisory lock class under which hosts create shared schema objects.
    static let setUpLockClass: Int32 = 0x5345_0001

    /// Runs `statements` (idempotent DDL such as `CREATE … IF NOT EXISTS`) in one transaction
    /// under a server-wide advisory lock, so hosts creating the same objects at once do not race.
    /// When the relation `present` (a qualified, quoted name the statements create last or
    /// together) exists already, nothing is run: the common case — every run of every host
    /// after the first — takes no server-wide lock.
    public func setUp(_ statements: [String], present: String? = nil) throws {
        if let present {
            var binds = PostgresBindings()
            binds.append(present)
            let found = try query("SELECT to_regclass($1) IS NOT NULL", binds).first?.first
            if (try? found?.decode(Bool.self)) == true { return }
        }
        try query("BEGIN")
        do {
            try query("SELECT pg_advisory_xact_lock(\(Self.setUpLockClass), 0)")
            for statement in statements { try query(statement) }
            try query("COMMIT")
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    /// Runs one statement that returns a single `int8` (or null → nil).
    public func queryInt(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> Int64? {
        guard let row = try query(sql, binds).first, let cell = row.first, cell.bytes != nil else { return nil }
        do { return try cell.decode(Int64.self) } catch { throw PostboxError.decoding("\(name): \(error)") }
    }

    private static func refuseOnEventLoop() throws {
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            throw PostboxError.server(store: "postgres", code: "XX000", message: "blocking call on an event loop thread refused")
        }
    }

    /// PostgreSQL's SQLSTATE and message, or the client's own failure, without the query text,
    /// its parameters or the connection's credentials.
    static func describe(_ error: any Error, name: String) -> PostboxError {
        if let e = error as? PostboxError { return e }
        if let e = error as? PSQLError {
            if let info = e.serverInfo {
                return .server(store: name, code: info[.sqlState] ?? "XX000", message: info[.message] ?? "server error")
            }
            switch e.code {
            case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .connectionError:
                return .server(store: name, code: "08006", message: "connection to the database server lost (\(e.code))")
            default:
                return .server(store: name, code: "08000", message: "database client error: \(e.code)")
            }
        }
        if error is NIOSSLError { return .server(store: name, code: "08000", message: "TLS handshake failed") }
        return .server(store: name, code: "08001", message: "cannot connect to the database server: \(type(of: error))")
    }
}
