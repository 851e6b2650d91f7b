import Foundation
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// The storage engines every ValueBox and Postbox test runs against.
enum StoreEngine: String, CaseIterable, Sendable {
    case sqlite
    /// SQLite with every page encrypted (a store opened with a `StoreKey`).
    case encryptedSqlite
    case postgres

    /// A file of SQLite's, in clear or encrypted.
    var isSQLite: Bool { self != .postgres }

    /// SQLite of the kind the test process makes (`TestRoot`): for a test of SQLite's files
    /// themselves, which runs on both kinds through that switch.
    static var ofTestRoot: StoreEngine { TestRoot.kind == .encrypted ? .encryptedSqlite : .sqlite }
}

/// One store of one test on one engine, reopened as often as the test needs: an SQLite file
/// in a temporary folder, or a schema of its own on the shared test PostgreSQL server.
final class TestStore: @unchecked Sendable {
    let engine: StoreEngine
    let directory: TemporaryDirectory
    /// The file name (SQLite) or schema (PostgreSQL).
    let name: String
    /// The key of an encrypted SQLite store, nil for the others.
    let key: StoreKey?

    init(_ engine: StoreEngine, directory: TemporaryDirectory = TemporaryDirectory(), name: String? = nil) {
        self.engine = engine
        self.directory = directory
        self.name = name ?? "s" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        self.key = engine == .encryptedSqlite ? StoreKey.random() : nil
    }

    /// Another store beside this one, on the same engine.
    func sibling() -> TestStore { TestStore(engine, directory: directory) }

    /// What the store's errors name: the file's path, or `postgres:<schema>`.
    var identity: String {
        switch engine {
        case .sqlite, .encryptedSqlite: return directory.file(name + ".sqlite")
        case .postgres: return "postgres:\(name)"
        }
    }

    static func endpoint() throws -> PostgresEndpoint {
        let server = try PostgresServer.shared()
        return PostgresEndpoint(address: .unixSocket(path: server.socketPath), username: server.user, database: "postgres")
    }

    func valueBox(readOnly: Bool = false) throws -> any ValueBox {
        switch engine {
        case .sqlite, .encryptedSqlite: return try SqliteValueBox(path: identity, options: .init(readOnly: readOnly, key: key))
        case .postgres: return try PostgresValueBox(endpoint: Self.endpoint(), schema: name, readOnly: readOnly)
        }
    }

    /// How a `jobrun-testkit` child names this store (see its `openPostbox`).
    func childSpec() throws -> String {
        switch engine {
        case .sqlite: return identity
        case .encryptedSqlite:
            // The key reaches the child in a file of its own, never on its command line.
            let keyFile = directory.file(name + ".key")
            let bytes = key!.withBytes { Data($0) }
            _ = FileManager.default.createFile(atPath: keyFile, contents: bytes, attributes: [.posixPermissions: 0o600])
            return "encrypted:\(keyFile):\(identity)"
        case .postgres:
            let server = try PostgresServer.shared()
            return "pg:\(server.socketPath):\(server.user):postgres:\(name)"
        }
    }

    func postbox(readOnly: Bool = false, migrations: [PostboxMigration] = PostboxMigration.all) throws -> Postbox {
        switch engine {
        case .sqlite, .encryptedSqlite: return try Postbox(path: identity, readOnly: readOnly, migrations: migrations, key: key)
        case .postgres:
            let box = try PostgresValueBox(endpoint: Self.endpoint(), schema: name, readOnly: readOnly)
            return try Postbox(valueBox: box, name: identity, readOnly: readOnly, migrations: migrations)
        }
    }
}

extension TestStore {
    /// A child process commits peer 1 ("committed before"), then adds `rows` messages of peer 2
    /// in one transaction and is killed with SIGKILL halfway through it.
    func killWriterMidTransaction(rows: Int) throws {
        _ = try postbox()
        let child = try ChildProcess(Products.executable("jobrun-testkit"), ["big-transaction", try childSpec(), "\(rows)"])
        XCTAssertTrue(child.waitForOutput("midway", timeout: 300), child.stderr)
        child.signal(SIGKILL)
        _ = child.wait()
    }
}

/// Runs `body` once per engine, each with a fresh store. A thrown error names the engine; an
/// assertion failure follows the `engine:` line the run printed.
func forEachEngine(_ body: (TestStore) throws -> Void) throws {
    for engine in StoreEngine.allCases {
        do {
            print("engine: \(engine.rawValue)")
            try body(TestStore(engine))
        } catch {
            throw EngineFailure(engine: engine, error: error)
        }
    }
}

func forEachEngine(_ body: (TestStore) async throws -> Void) async throws {
    for engine in StoreEngine.allCases {
        do {
            print("engine: \(engine.rawValue)")
            try await body(TestStore(engine))
        } catch {
            throw EngineFailure(engine: engine, error: error)
        }
    }
}

struct EngineFailure: Error, CustomStringConvertible {
    let engine: StoreEngine
    let error: any Error
    var description: String { "[\(engine.rawValue)] \(error)" }
}
