import Foundation

/// Keeping a store healthy and measuring it: part of every `ValueBox`, so Postbox runs its
/// maintenance without knowing the engine, and a new engine says what each operation means for
/// it — or, where the engine does the work itself, answers with nothing to do.
///
/// | operation | SQLite file | PostgreSQL schema |
/// |---|---|---|
/// | `integrityCheck` | `PRAGMA integrity_check` | every table read in full (a damaged page is an error) |
/// | `walCheckpoint` | `PRAGMA wal_checkpoint` | nothing: the server checkpoints its own log |
/// | `compact` | `VACUUM` (or incremental vacuum) | `VACUUM` of each table; the drop in `pg_total_relation_size` |
/// | `incrementalVacuum` | `PRAGMA incremental_vacuum(n)` | nothing: autovacuum keeps freed space for reuse |
/// | `usage` | `dbstat` (or a row-by-row estimate), pages, WAL | `pg_column_size` of the live rows, `pg_total_relation_size` |
/// | `storedBytes` | the file and its WAL | 0: no file of its own |
/// | `measuredBytes` | pages × page size | bytes of the live rows |
/// | `syncCommitted` | `fsync` of the WAL | nothing: a commit is durable |
public protocol ValueBoxMaintenance: AnyObject {
    /// The engine's own consistency check: `["ok"]`, or the problems found (`quick`: a cheaper
    /// check where the engine has one).
    func integrityCheck(quick: Bool) throws -> [String]
    /// Moves committed writes from the engine's log into the store (`truncate`: and empties the
    /// log), waiting at most `maxWaitMilliseconds` for readers; `busy` when they held it back.
    func walCheckpoint(truncate: Bool, maxWaitMilliseconds: Int32) throws -> ValueBoxCheckpoint
    /// Returns the space deletes freed to the file system; the bytes reclaimed.
    @discardableResult func compact() throws -> Int64
    /// Returns at most `pages` free pages in one short step; the pages released.
    func incrementalVacuum(pages: Int) throws -> Int64
    /// Bytes held by free pages, reclaimable by `compact()`.
    func freeBytes() throws -> Int64
    /// Free pages, and the bytes per page (1 where the engine has no pages to show).
    func freePageCount() throws -> Int64
    func pageSize() throws -> Int64
    /// Where the store's bytes go, per engine table (call inside a read transaction).
    func usage() throws -> ValueBoxUsage
    /// The bytes the store occupies on this host's disk (file and log); 0 for a server's store.
    /// Callable from any thread: it asks the file system, not the store's connection.
    func storedBytes() -> Int64
    /// The bytes a size limit bounds: the pages of a file, the live rows on a server.
    func measuredBytes() throws -> Int64
    /// Makes every committed transaction durable now.
    func syncCommitted() throws
    /// Caps the log at `bytes` after each checkpoint.
    func setJournalSizeLimit(_ bytes: Int64) throws
    /// A cheap counter of this process's view of the store that moves when another connection
    /// committed (SQLite's pager data version), or nil where the engine has none: Postbox then
    /// asks `dataVersion()` inside the transaction.
    func pagerDataVersion() -> UInt32?
}

/// What a checkpoint did.
public struct ValueBoxCheckpoint: Sendable, Equatable {
    /// Readers held the checkpoint back: the log is left to the next one.
    public var busy: Bool
    public var logFrames: Int64
    public var checkpointedFrames: Int64

    public init(busy: Bool, logFrames: Int64, checkpointedFrames: Int64) {
        self.busy = busy
        self.logFrames = logFrames
        self.checkpointedFrames = checkpointedFrames
    }

    /// Nothing to checkpoint (an engine without a log of its own to fold in).
    public static let nothing = ValueBoxCheckpoint(busy: false, logFrames: 0, checkpointedFrames: 0)
}

/// Where a store's bytes go, as its engine measures them (`DatabaseUsage` adds Postbox's table
/// names and the per-peer figures).
public struct ValueBoxUsage: Sendable {
    public var source: DatabaseUsage.Source
    public var pageSize: Int64
    public var pageCount: Int64
    public var freePages: Int64
    public var fileBytes: Int64
    public var walBytes: Int64
    /// Per engine table (`name` is the engine's: `t7`).
    public var tables: [DatabaseUsage.TableUsage]

    public init(
        source: DatabaseUsage.Source, pageSize: Int64, pageCount: Int64, freePages: Int64, fileBytes: Int64, walBytes: Int64,
        tables: [DatabaseUsage.TableUsage]
    ) {
        self.source = source
        self.pageSize = pageSize
        self.pageCount = pageCount
        self.freePages = freePages
        self.fileBytes = fileBytes
        self.walBytes = walBytes
        self.tables = tables
    }
}
