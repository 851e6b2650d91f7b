import Foundation
import PostboxPostgres

/// The `postgres:` section of `cluster.yaml`, or the `JOBRUN_POSTGRES_*` variables:
///
/// ```yaml
/// postgres:
///   url: postgresql://jobrun@db.internal:5432/jobrun   # no password in the URL
///   passwordFile: /etc/jobrun/pg-password             # 0600, first line
///   tls: {mode: verify-full, caFile: /etc/jobrun/pg-ca.pem}
///   schemaPrefix: jobrun
///   lease: 30s                                        # a scheduler's hold on a work item
///   maxOpenStores: 16                                 # account stores (connections) kept open
/// ```
///
/// The keys, their defaults and their `JOBRUN_POSTGRES_*` variables are `PostgresSection`'s.
///
/// A Unix socket is named as libpq does: `postgresql:///jobrun?host=/run/postgresql`.
/// Each account's Postbox lives in schema `<schemaPrefix>_account_<id>`.
public struct PostgresClusterConfig: Sendable {
    public enum TLS: String, Sendable, CaseIterable {
        case disable
        case require
        case verifyFull = "verify-full"
    }

    /// The variable whose URL alone shares the stores.
    public static var urlVariable: String { PostgresSection.url.spec.environment! }

    public var address: PostgresEndpoint.Address
    public var username: String
    public var database: String
    /// Where the password is read from (never the password itself).
    public var passwordFile: String?
    public var tls: TLS
    public var caFile: String?
    public var schemaPrefix: String
    /// How long a `jobrun schedule` host holds a claimed work item without renewing it (it renews
    /// every third of it): the bound after which another host takes over a dead host's work.
    public var leaseSeconds: Int
    /// How many account stores (one server connection each) a process keeps open: idle ones
    /// beyond it are closed, least recently used first (`AccountContextPool`).
    public var maxOpenStores: Int

    public init(
        address: PostgresEndpoint.Address, username: String, database: String, passwordFile: String? = nil,
        tls: TLS = PostgresTLSSection.mode.defaultValue!, caFile: String? = nil, schemaPrefix: String = PostgresSection.schemaPrefix.defaultValue!,
        leaseSeconds: Int = Int(PostgresSection.lease.defaultValue!.wholeSeconds),
        maxOpenStores: Int = PostgresSection.maxOpenStores.defaultValue!
    ) {
        self.address = address
        self.username = username
        self.database = database
        self.passwordFile = passwordFile
        self.tls = tls
        self.caFile = caFile
        self.schemaPrefix = schemaPrefix
        self.leaseSeconds = leaseSeconds
        self.maxOpenStores = maxOpenStores
    }

    /// The deadline of every statement on a shared store: a server that has not answered by then
    /// is taken as gone (its connection is closed and the transaction fails), so a run cut off
    /// from it — a fenced one writing its closing record — ends within this instead of waiting
    /// for TCP to give up. Far longer than any statement Postbox sends takes.
    public static let storeStatementTimeoutSeconds: Double = 60

    /// The schema of account `id`'s Postbox.
    public func schema(account id: Int64) -> String {
        id >= 0 ? "\(schemaPrefix)_account_\(id)" : "\(schemaPrefix)_account_n\(id.magnitude)"
    }

    /// The account a schema belongs to, or nil for another schema.
    public func account(schema: String) -> Int64? {
        let prefix = "\(schemaPrefix)_account_"
        guard schema.hasPrefix(prefix) else { return nil }
        let rest = schema.dropFirst(prefix.count)
        if rest.hasPrefix("n") { return Int64(rest.dropFirst()).map { -$0 } }
        return Int64(rest)
    }

    /// The connection settings, the password read from `passwordFile` (0600, this user's).
    public func endpoint(applicationName: String = "jobrun@\(ProcessInfo.processInfo.hostName)") throws(JobError) -> PostgresEndpoint {
        var password: String?
        if let passwordFile {
            if let refusal = AccountCloudConfig.credentialsRefusal(passwordFile) {
                throw .config("postgres.passwordFile: " + refusal.replacingOccurrences(of: "credentials file", with: "password file"))
            }
            do { password = try ConfigFile.firstLine(at: passwordFile, limit: 4096, what: "password file") } catch {
                throw .config("postgres.passwordFile: \(error)")
            }
        }
        let mode: PostgresEndpoint.TLSMode
        switch tls {
        case .disable: mode = .disable
        case .require: mode = .require
        case .verifyFull:
            guard let caFile else { throw .config("postgres.tls: mode verify-full needs caFile") }
            mode = .verifyFull(caFile: caFile)
        }
        return PostgresEndpoint(address: address, username: username, password: password, database: database, tls: mode, applicationName: applicationName)
    }

    /// The validated `postgres:` section; a relative path in the file resolves against
    /// `rootDirectory` (one from a variable is used as given).
    init(_ values: JobParams, rootDirectory: String) {
        typealias Section = PostgresSection
        guard case .success(let (address, user, database)) = Self.parseURL(values[Section.url]) else {
            preconditionFailure("postgres.url is checked by PostgresSection")
        }
        func path(_ param: any JobParameter, _ text: String?, in values: JobParams) -> String? {
            guard let text else { return nil }
            let fromVariable = values.position(of: param).file.hasPrefix("$")
            return text.hasPrefix("/") || fromVariable ? text : (rootDirectory as NSString).appendingPathComponent(text)
        }
        let tls = values[Section.tls]
        self.init(
            address: address, username: user, database: database, passwordFile: path(Section.passwordFile, values[Section.passwordFile], in: values),
            tls: tls[PostgresTLSSection.mode], caFile: path(PostgresTLSSection.caFile, tls[PostgresTLSSection.caFile], in: tls),
            schemaPrefix: values[Section.schemaPrefix], leaseSeconds: Int(values[Section.lease].wholeSeconds),
            maxOpenStores: values[Section.maxOpenStores])
    }

    static func validPrefix(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 30 && text.utf8.first.map { $0 >= 0x61 && $0 <= 0x7a } == true
            && text.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f }
    }

    struct URLProblem: Error { var message: String }

    /// `postgresql://user@host:port/database` or `postgresql:///database?host=/socket/dir`
    /// (`port=` also names the socket file). A password in the URL is refused: it belongs in
    /// `passwordFile`, where the file's mode protects it.
    static func parseURL(_ text: String) -> Result<(PostgresEndpoint.Address, String, String), URLProblem> {
        guard let components = URLComponents(string: text), let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme) else {
            return .failure(URLProblem(message: "`postgres.url` must be a postgresql:// URL"))
        }
        if components.password != nil {
            return .failure(URLProblem(message: "`postgres.url` holds a password: put it in `passwordFile` (0600) instead"))
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let user = components.user ?? query["user"] ?? LaunchEnvironment.variables["USER"] ?? "postgres"
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { return .failure(URLProblem(message: "`postgres.url` must name the database (postgresql://user@host/DATABASE)")) }
        let port = components.port ?? query["port"].flatMap { Int($0) } ?? 5432
        if let host = components.host, !host.isEmpty {
            return .success((.tcp(host: host, port: port), user, database))
        }
        if let dir = query["host"], dir.hasPrefix("/") {
            return .success((.unixSocket(path: (dir as NSString).appendingPathComponent(".s.PGSQL.\(port)")), user, database))
        }
        return .failure(URLProblem(message: "`postgres.url` needs a host (postgresql://user@host/db) or a socket folder (?host=/run/postgresql)"))
    }
}
