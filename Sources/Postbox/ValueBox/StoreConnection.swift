import CSQLite
import ConfinedFiles
import Foundation

/// What the store's VFS knows about one SQLite connection: its key, the rule its files are
/// opened by, and why its last file operation failed (a refused file, a page that failed
/// authentication), so `SqliteValueBox` can turn SQLite's bare result code into an error that
/// names the file and the page. The VFS finds it by the `jobrun_connection` URI parameter of
/// the file names SQLite gives it.
final class StoreConnection: @unchecked Sendable {
    let id: String
    /// The database's path, as the store names it in errors.
    let path: String
    let cipher: PageCipher?
    /// For an encrypted connection, how its checkpoints copy the WAL (`CheckpointCopy`).
    let checkpointCopy: CheckpointCopy?
    let policy: ConfinementPolicy
    /// The unix VFS's handle of the open database file, for the salt a WAL page needs.
    var mainFile: UnsafeMutablePointer<sqlite3_file>?
    /// Set by the VFS, read and cleared by the store (one connection is used by one thread at a
    /// time).
    var refusal: PostboxError?
    var failedPage: (file: String, page: Int64)?
    /// Whether a page was ever authenticated with this connection's key: a failure before that
    /// means the key is wrong, not that a page was changed.
    var authenticated = false

    private static let lock = NSLock()
    nonisolated(unsafe) private static var open: [String: StoreConnection] = [:]
    nonisolated(unsafe) private static var counter: UInt64 = 0

    private init(id: String, path: String, key: StoreKey?, policy: ConfinementPolicy) {
        self.id = id
        self.path = path
        self.cipher = key.map(PageCipher.init)
        self.checkpointCopy = key == nil ? nil : CheckpointCopy()
        self.policy = policy
    }

    /// A new connection's record, findable by the VFS until `release()`.
    static func make(path: String, key: StoreKey?, policy: ConfinementPolicy) -> StoreConnection {
        lock.lock()
        defer { lock.unlock() }
        counter += 1
        let connection = StoreConnection(id: "\(getpid())-\(counter)", path: path, key: key, policy: policy)
        open[connection.id] = connection
        return connection
    }

    static func find(_ id: String) -> StoreConnection? {
        lock.lock()
        defer { lock.unlock() }
        return open[id]
    }

    func release() {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        Self.open[id] = nil
    }

    /// The error a failed SQLite call stands for, when the VFS knows better than `rc`.
    func takeFailure() -> PostboxError? {
        defer {
            refusal = nil
            failedPage = nil
        }
        if let refusal { return refusal }
        if let failedPage {
            return authenticated ? .pageAuthenticationFailed(path: failedPage.file, page: failedPage.page) : .wrongKey(path: path)
        }
        return nil
    }
}
