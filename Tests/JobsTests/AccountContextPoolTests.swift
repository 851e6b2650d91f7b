import Foundation
import Jobs
import TestSupport
import XCTest

/// The pool's bound on open stores against a real PostgreSQL server: idle stores past
/// `maxOpenStores` are closed least recently used first (their connections end), and a store a
/// job holds is never closed.
final class AccountContextPoolTests: XCTestCase {
    private var server: PostgresServer!
    private var database = ""

    override func setUpWithError() throws {
        server = try PostgresServer.shared()
        database = try server.createDatabase("pool_\(UUID().uuidString.prefix(8).lowercased())")
    }

    /// A root whose `cluster.yaml` keeps the stores in `database`, at most `maxOpenStores` open.
    private func pool(maxOpenStores: Int) throws -> AccountContextPool {
        let url = try TestPaths.makeTempDirectory()
        chmod(url.path, 0o700)
        let file = url.appendingPathComponent("cluster.yaml").path
        try "postgres:\n  url: postgresql://\(server.user)@/\(database)?host=\(server.socketDirectory)&port=\(server.port)\n  maxOpenStores: \(maxOpenStores)\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        return AccountContextPool(root: DataRoot(url: url))
    }

    /// The server's sessions on the test database.
    private func sessions() throws -> Int {
        Int(try server.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)'").trimmingCharacters(in: .whitespacesAndNewlines))
            ?? -1
    }

    func testIdleStoresPastTheBoundCloseLeastRecentlyUsedFirst() async throws {
        let pool = try pool(maxOpenStores: 2)
        let first = try await pool.context(for: 1)
        _ = try await pool.context(for: 2)
        _ = try await pool.context(for: 1)  // 2 is now the least recently used
        _ = try await pool.context(for: 3)
        let open = await pool.openCount
        XCTAssertEqual(open, 2)
        let again = try await pool.context(for: 1)
        XCTAssertTrue(again === first, "the recently used store stayed open")
        let reopened = try await pool.context(for: 2)  // closes 3, the least recent now
        XCTAssertEqual(reopened.id, 2)
        XCTAssertEqual(try sessions(), 2, "the dropped stores' connections closed")
    }

    func testAStoreAJobHoldsIsNeverClosed() async throws {
        let pool = try pool(maxOpenStores: 1)
        do {
            let held = try await pool.lease([1, 2])
            XCTAssertEqual(held.map(\.id), [1, 2])
            for id: Int64 in 3...5 { _ = try await pool.context(for: id) }
            let open = await pool.openCount
            XCTAssertEqual(open, 2, "past the bound only the held stores stay open")
            let again = try await pool.lease([1])
            XCTAssertTrue(again[0] === held[0], "a held store is the same instance")
        }
        await pool.release([1, 2])
        var open = await pool.openCount
        XCTAssertEqual(open, 1, "released, 2 closes; 1 is still held once")
        XCTAssertEqual(try sessions(), 1, "one connection for the one open store")
        await pool.release([1])
        open = await pool.openCount
        XCTAssertEqual(open, 1, "an idle store within the bound stays open")
    }
}
