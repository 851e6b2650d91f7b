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
///   leaseSeconds: 30                                  # a scheduler's hold on a work item
/// ```
///
/// A Unix socket is named as libpq does: `postgresql:///jobrun?host=/run/postgresql`.
/// Each account's Postbox lives in schema `<schemaPrefix>_account_<id>`.
public struct PostgresClusterConfig: Sendable {
    public enum TLS: String, Sendable, CaseIterable {
        case disable
        case require
        case verifyFull = "verify-full"
    }

    public static let urlVariable = "JOBRUN_POSTGRES_URL"
    public static let passwordFileVariable = "JOBRUN_POSTGRES_PASSWORD_FILE"
    public static let tlsModeVariable = "JOBRUN_POSTGRES_TLS_MODE"
    public static let caFileVariable = "JOBRUN_POSTGRES_CA_FILE"
    public static let schemaPrefixVariable = "JOBRUN_POSTGRES_SCHEMA_PREFIX"
    static let knownKeys: Set<String> = ["url", "passwordFile", "tls", "schemaPrefix", "leaseSeconds"]
    /// The lease of a scheduler's work item when `leaseSeconds` is not set.
    public static let defaultLeaseSeconds = 30
    /// The shortest and longest lease accepted.
    public static let leaseSecondsRange = 2...3600

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

    public init(
        address: PostgresEndpoint.Address, username: String, database: String, passwordFile: String? = nil, tls: TLS = .disable,
        caFile: String? = nil, schemaPrefix: String = "jobrun", leaseSeconds: Int = PostgresClusterConfig.defaultLeaseSeconds
    ) {
        self.address = address
        self.username = username
        self.database = database
        self.passwordFile = passwordFile
        self.tls = tls
        self.caFile = caFile
        self.schemaPrefix = schemaPrefix
        self.leaseSeconds = leaseSeconds
    }

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
            switch SmallFile.read(passwordFile, limit: 4096) {
            case .success(let data):
                password = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init)
                if password?.isEmpty ?? true { throw .config("postgres.passwordFile: the password file \(passwordFile) is empty") }
            case .failure(let problem):
                throw .config("postgres.passwordFile: cannot read the password file \(passwordFile): \(problem.message)")
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

    struct Problems: Error {
        var problems: [String]
    }

    /// Parses a `postgres:` node.
    static func parse(_ node: ConfigNode, rootDirectory: String) -> Result<PostgresClusterConfig, Problems> {
        guard case .mapping(let entries) = node.value else {
            return .failure(Problems(problems: ["\(node.position): `postgres` must be a mapping with at least `url`"]))
        }
        var problems: [String] = []
        var url: (String, ConfigNode)?
        var passwordFile: String?
        var tls = TLS.disable
        var caFile: String?
        var prefix = "jobrun"
        var lease = defaultLeaseSeconds
        func path(_ text: String) -> String { text.hasPrefix("/") ? text : (rootDirectory as NSString).appendingPathComponent(text) }
        for entry in entries {
            let v = entry.value
            switch entry.key {
            case "url":
                guard let text = v.scalarText, !text.isEmpty else { problems.append("\(v.position): `postgres.url` must be a postgresql:// URL"); continue }
                url = (text, v)
            case "passwordFile":
                guard let text = v.scalarText, !text.isEmpty else { problems.append("\(v.position): `postgres.passwordFile` must be a path"); continue }
                passwordFile = path(text)
            case "schemaPrefix":
                guard let text = v.scalarText, validPrefix(text) else {
                    problems.append("\(v.position): `postgres.schemaPrefix` must be 1–30 lower-case letters, digits and _, starting with a letter")
                    continue
                }
                prefix = text
            case "leaseSeconds":
                guard let text = v.scalarText, let seconds = Int(text), leaseSecondsRange.contains(seconds) else {
                    problems.append(
                        "\(v.position): `postgres.leaseSeconds` must be a whole number of seconds from \(leaseSecondsRange.lowerBound) to \(leaseSecondsRange.upperBound)"
                    )
                    continue
                }
                lease = seconds
            case "tls":
                if let text = v.scalarText {
                    guard let mode = TLS(rawValue: text) else { problems.append("\(v.position): \(tlsExpected)"); continue }
                    tls = mode
                } else if case .mapping(let fields) = v.value {
                    for f in fields {
                        switch f.key {
                        case "mode":
                            guard let mode = f.value.scalarText.flatMap(TLS.init(rawValue:)) else {
                                problems.append("\(f.value.position): \(tlsExpected)"); continue
                            }
                            tls = mode
                        case "caFile":
                            guard let text = f.value.scalarText, !text.isEmpty else {
                                problems.append("\(f.value.position): `postgres.tls.caFile` must be a path"); continue
                            }
                            caFile = path(text)
                        default:
                            problems.append("\(f.keyPosition): unknown key `postgres.tls.\(AccountCloudConfig.shown(f.key))` (known: caFile, mode)")
                        }
                    }
                } else {
                    problems.append("\(v.position): `postgres.tls` must be a mode or a mapping with `mode` and `caFile`")
                }
            default:
                problems.append(
                    "\(entry.keyPosition): unknown key `postgres.\(AccountCloudConfig.shown(entry.key))` (known: \(knownKeys.sorted().joined(separator: ", ")))"
                )
            }
        }
        guard let (text, urlNode) = url else {
            problems.append("\(node.position): `postgres` needs `url`")
            return .failure(Problems(problems: problems))
        }
        switch parseURL(text) {
        case .success(let (address, user, database)):
            if tls == .verifyFull && caFile == nil { problems.append("\(node.position): `postgres.tls` mode verify-full needs `caFile`") }
            if !problems.isEmpty { return .failure(Problems(problems: problems)) }
            return .success(
                PostgresClusterConfig(
                    address: address, username: user, database: database, passwordFile: passwordFile, tls: tls, caFile: caFile, schemaPrefix: prefix,
                    leaseSeconds: lease))
        case .failure(let message):
            problems.append("\(urlNode.position): \(message)")
            return .failure(Problems(problems: problems))
        }
    }

    static let tlsExpected = "`postgres.tls` mode must be one of disable, require, verify-full"

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

    /// The file's section with the `JOBRUN_POSTGRES_*` variables applied over it: the URL
    /// variable alone is enough to share the stores.
    static func applying(environment: [String: String], to config: PostgresClusterConfig?, rootDirectory: String) throws(JobError) -> PostgresClusterConfig? {
        var config = config
        if let url = environment[urlVariable], !url.isEmpty {
            switch parseURL(url) {
            case .success(let (address, user, database)):
                if var c = config {
                    c.address = address
                    c.username = user
                    c.database = database
                    config = c
                } else {
                    config = PostgresClusterConfig(address: address, username: user, database: database)
                }
            case .failure(let problem):
                throw .config("\(urlVariable): " + problem.message.replacingOccurrences(of: "`postgres.url`", with: "the URL"))
            }
        }
        guard var c = config else {
            let stray = [passwordFileVariable, tlsModeVariable, caFileVariable, schemaPrefixVariable].filter { !(environment[$0] ?? "").isEmpty }
            if !stray.isEmpty { throw .config("\(stray.joined(separator: ", ")) set without \(urlVariable) or a `postgres:` section in cluster.yaml") }
            return nil
        }
        if let file = environment[passwordFileVariable], !file.isEmpty { c.passwordFile = file }
        if let mode = environment[tlsModeVariable], !mode.isEmpty {
            guard let tls = TLS(rawValue: mode) else { throw .config("\(tlsModeVariable): must be one of disable, require, verify-full") }
            c.tls = tls
        }
        if let ca = environment[caFileVariable], !ca.isEmpty { c.caFile = ca }
        if let prefix = environment[schemaPrefixVariable], !prefix.isEmpty {
            guard validPrefix(prefix) else { throw .config("\(schemaPrefixVariable): 1–30 lower-case letters, digits and _, starting with a letter") }
            c.schemaPrefix = prefix
        }
        if c.tls == .verifyFull && c.caFile == nil { throw .config("postgres TLS mode verify-full needs a CA file (\(caFileVariable) or tls.caFile)") }
        return c
    }
}
