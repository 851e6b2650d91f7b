import Foundation

/// Everything that can go wrong in Postbox, with the path of the database where it matters so an
/// operator can tell which file to look at.
public enum PostboxError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The file exists but is not an SQLite database (wrong header).
    case notADatabase(path: String)
    /// SQLite reports the database as damaged.
    case corrupt(path: String, detail: String)
    /// Another process held the write lock longer than the busy timeout.
    case busy(path: String)
    /// An SQLite call failed.
    case sqlite(path: String, code: Int32, message: String)
    /// A write was attempted on a store opened read-only.
    case readOnly(path: String)
    /// A `Transaction` was used after its body returned.
    case transactionFinished
    /// The database was written by a newer jobrun whose schema this one does not know.
    case schemaTooNew(path: String, found: Int32, supported: Int32)
    /// A stored value could not be decoded.
    case decoding(String)
    /// A database server (PostgreSQL) refused or failed a statement: `code` is its SQLSTATE
    /// (e.g. `08006` connection lost, `40P01` deadlock), `store` names the store, never how to
    /// reach it.
    case server(store: String, code: String, message: String)
    /// An immutable open (a read-only file system without the `-shm` file) would read the
    /// database file alone, but its `-wal` file is not empty: it may hold commits the file lacks.
    case walUnreadable(path: String)
    /// The store is encrypted and was opened without a key.
    case keyRequired(path: String)
    /// The store is in clear and was opened with a key.
    case notEncrypted(path: String)
    /// The key does not authenticate the store's first page: another store's key, or a damaged
    /// first page.
    case wrongKey(path: String)
    /// A page of an encrypted store (or of its WAL) failed authentication: it was changed on
    /// disk or damaged. Its bytes are never used.
    case pageAuthenticationFailed(path: String, page: Int64)
    /// A key that cannot be a store key (its length); never carries the key's bytes.
    case invalidKey(reason: String)
    /// A file of the store (the database, its WAL, shared memory or journal) is a symbolic link,
    /// a FIFO or device, hard-linked, or writable by others: it is not opened.
    case unsafeFile(path: String, reason: String)

    public var description: String {
        switch self {
        case let .notADatabase(path): return "\(path): not an SQLite database (bad header); refusing to open it"
        case let .corrupt(path, detail): return "\(path): database is corrupt: \(detail)"
        case let .busy(path): return "\(path): database is locked by another process (busy timeout expired)"
        case let .sqlite(path, code, message): return "\(path): SQLite error \(code): \(message)"
        case let .readOnly(path): return "\(path): opened read-only; writes are not allowed"
        case .transactionFinished: return "transaction used after it finished"
        case let .schemaTooNew(path, found, supported):
            return "\(path): schema version \(found) is newer than this jobrun supports (\(supported)); upgrade jobrun"
        case let .decoding(detail): return "cannot decode stored value: \(detail)"
        case let .server(store, code, message): return "\(store): database server error \(code): \(message)"
        case let .walUnreadable(path):
            return
                "\(path): its -wal file may hold commits the database file lacks, and on a read-only file system SQLite reads them only through the store's -shm file, which is missing (copy the store with both)"
        case let .keyRequired(path): return "\(path): the store is encrypted and no key was given"
        case let .notEncrypted(path): return "\(path): the store is not encrypted, but a key was given; refusing to open it"
        case let .wrongKey(path): return "\(path): the key does not open this store (wrong key, or its first page is damaged)"
        case let .pageAuthenticationFailed(path, page):
            return "\(path): page \(page) failed authentication (changed on disk or damaged); it was not used"
        case let .invalidKey(reason): return "invalid store key: \(reason)"
        case let .unsafeFile(_, reason): return reason
        }
    }
}
