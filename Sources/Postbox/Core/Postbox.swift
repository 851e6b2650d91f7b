import Dispatch
import Foundation

/// A Postbox store: one SQLite file (WAL) of typed tables, one serialized writer per process,
/// several processes per file.
///
/// Every transaction runs on the store's own serial queue, off Swift's cooperative pool, so a
/// blocking SQLite call (a busy wait on another process's lock, an fsync) never starves other
/// tasks. Table caches survive between transactions only while no other process has committed
/// (`PRAGMA data_version`), so several processes can share the file safely.
public final class Postbox: @unchecked Sendable {
    /// The schema this build writes. Bump it and add a `PostboxMigration` when the layout changes.
    public static let schemaVersion: Int32 = 3

    /// Where the store lives: the SQLite file's path, or `postgres:<schema>` for a store on a
    /// PostgreSQL server (never the server's address or credentials). Named in every error.
    public let path: String
    public let isReadOnly: Bool
    // Everything below is confined to `queue`.
    let queue: DispatchQueue
    /// The engine, with its maintenance (`ValueBoxMaintenance`).
    let valueBox: any ValueBox
    private let state = TransactionState()
    private var lastDataVersion: Int64 = -1
    /// The pager's data version after this connection's last write check or commit: a write
    /// transaction (which holds the lock from `begin()`) compares it instead of running
    /// `PRAGMA data_version`, and its own commit does not count as a change.
    private var lastPagerVersion: UInt32?
    private var observers: [UUID: AsyncStream<PostboxChanges>.Continuation] = [:]

    let metadataTable: MetadataTable
    let peerTable: PeerTable
    let messageHistoryTable: MessageHistoryTable
    let peerSyncStateTable: PeerSyncStateTable
    let historyHoleTable: HistoryHoleTable
    let mediaReferenceTable: MediaReferenceTable
    let revalidationLeaseTable: RevalidationLeaseTable
    let uploadQueueTable: UploadQueueTable
    let jobRunTable: JobRunTable
    let sharedMediaTierTable: SharedMediaTierTable
    private let tables: [Table]

    /// Opens the store at `path` (a file; its directory is created 0700), checks the schema
    /// version and runs pending migrations. A read-only store never writes, never blocks a
    /// writer, and fails with a clear error if the file does not exist.
    /// `immutable` (read-only only) opens a file nobody can be writing without the WAL's
    /// shared-memory file, e.g. on a read-only mount.
    public convenience init(
        path: String, readOnly: Bool = false, synchronous: SqliteValueBox.Synchronous = .normal,
        migrations: [PostboxMigration] = PostboxMigration.all, immutable: Bool = false, key: StoreKey? = nil,
        allowInsecureFiles: Bool = false, conversion: MessageRecordConversion = MessageRecordConversion()
    ) throws {
        if readOnly && !FileManager.default.fileExists(atPath: path) {
            throw PostboxError.sqlite(path: path, code: 14, message: "no database here yet (run a job first)")
        }
        var options = SqliteValueBox.Options(readOnly: readOnly, synchronous: synchronous)
        options.immutable = immutable
        options.key = key
        options.allowInsecureFiles = allowInsecureFiles
        let box = try SqliteValueBox(path: path, options: options)
        try self.init(valueBox: box, name: path, readOnly: readOnly, migrations: migrations, conversion: conversion)
    }

    /// Opens a store on another `ValueBox` (e.g. PostgreSQL): `name` identifies it in errors
    /// and must not carry credentials. The box must not be used by anything else: the store
    /// confines it to its own queue.
    public init(
        valueBox: any ValueBox, name: String, readOnly: Bool = false, migrations: [PostboxMigration] = PostboxMigration.all,
        conversion: MessageRecordConversion = MessageRecordConversion()
    ) throws {
        self.path = name
        self.isReadOnly = readOnly
        self.valueBox = valueBox
        self.queue = DispatchQueue(label: "postbox:\(name)")
        let vb = valueBox
        let st = state
        metadataTable = MetadataTable(valueBox: vb, table: PostboxTableId.metadata.table, state: st)
        peerTable = PeerTable(valueBox: vb, table: PostboxTableId.peers.table, state: st)
        messageHistoryTable = MessageHistoryTable(valueBox: vb, state: st)
        peerSyncStateTable = PeerSyncStateTable(valueBox: vb, table: PostboxTableId.peerSyncState.table, state: st)
        historyHoleTable = HistoryHoleTable(valueBox: vb, table: PostboxTableId.historyHoles.table, state: st)
        mediaReferenceTable = MediaReferenceTable(valueBox: vb, state: st)
        revalidationLeaseTable = RevalidationLeaseTable(valueBox: vb, table: PostboxTableId.revalidationLeases.table, state: st)
        uploadQueueTable = UploadQueueTable(valueBox: vb, state: st)
        jobRunTable = JobRunTable(valueBox: vb, table: PostboxTableId.jobRuns.table, state: st)
        sharedMediaTierTable = SharedMediaTierTable(valueBox: vb, table: PostboxTableId.sharedMediaTier.table, state: st)
        tables = [
            metadataTable, peerTable, messageHistoryTable, peerSyncStateTable, historyHoleTable,
            mediaReferenceTable, revalidationLeaseTable, uploadQueueTable, jobRunTable, sharedMediaTierTable,
        ]
        try queue.sync {
            if try self.migrate(migrations) { _ = try self.convertLegacyMessageRecords(conversion) }
        }
    }

    /// The database file's name inside a Postbox directory.
    public static let databaseFileName = "db.sqlite"

    /// Opens `<dir>/db.sqlite`: the layout of `account-<id>/postbox/db/`. `key` opens (or
    /// creates) an encrypted store.
    public convenience init(directory: String, readOnly: Bool = false, key: StoreKey? = nil) throws {
        try self.init(path: (directory as NSString).appendingPathComponent(Postbox.databaseFileName), readOnly: readOnly, key: key)
    }

    deinit {
        for c in observers.values { c.finish() }
    }

    /// Runs pending migrations; returns whether legacy message rows remain to be rewritten.
    private func migrate(_ migrations: [PostboxMigration]) throws -> Bool {
        let (found, legacyRows) = try runRead { (try $0.metadata.schemaVersion(), try $0.metadata.messageRecordCursor() != nil) }
        if found > Self.schemaVersion {
            if isReadOnly { return false }  // reading what we understand is still safe
            throw PostboxError.schemaTooNew(path: path, found: found, supported: Self.schemaVersion)
        }
        guard found < Self.schemaVersion, !isReadOnly else { return legacyRows && !isReadOnly }
        return try runWrite { tx in
            // Re-read under the write lock: another process may have migrated meanwhile.
            var version = try tx.metadata.schemaVersion()
            for m in migrations.sorted(by: { $0.toVersion < $1.toVersion }) where m.toVersion > version {
                try m.apply(tx)
                version = m.toVersion
            }
            try tx.metadata.setSchemaVersion(Self.schemaVersion)
            return try tx.metadata.messageRecordCursor() != nil
        }
    }

    // MARK: Transactions

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`) on the store's queue. Commits if
    /// it returns, rolls back if it throws. Observers receive the change record after COMMIT.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await onQueue { try self.runWrite(body) }
    }

    /// Runs `body` in a read transaction: a consistent snapshot that never blocks a writer.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        try await onQueue { try self.runRead(body) }
    }

    /// Makes every transaction committed so far durable now, on the store's queue: a store in an
    /// SQLite file syncs its WAL (else synced at the next checkpoint or when the store closes);
    /// a server commits durably already.
    public func syncCommitted() async throws {
        try await onQueue { try self.valueBox.syncCommitted() }
    }

    /// `transaction`, then `syncCommitted`, in one trip to the store's queue: for a write that
    /// must be durable when the call returns. Throws what the transaction throws; a failed sync
    /// after the commit comes back beside the body's result (the write is committed, not yet on
    /// the disk).
    public func transactionThenSync<T: Sendable>(
        _ body: @escaping @Sendable (Transaction) throws -> T
    ) async throws -> (result: T, syncFailure: (any Error)?) {
        try await onQueue {
            let result = try self.runWrite(body)
            do { try self.valueBox.syncCommitted() } catch { return (result, error) }
            return (result, nil)
        }
    }

    /// Runs `work` on the store's queue, off the cooperative pool, and resumes with its result.
    private func onQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Blocking form of `transaction`, for command-line tools and benchmarks. Never call it from
    /// inside another transaction's body (it would deadlock on the queue).
    public func transactionSync<T>(_ body: (Transaction) throws -> T) throws -> T {
        try queue.sync { try runWrite(body) }
    }

    /// Blocking form of `read`.
    public func readSync<T>(_ body: (Transaction) throws -> T) throws -> T {
        try queue.sync { try runRead(body) }
    }

    private func refreshCachesIfChanged() throws {
        let version = try valueBox.dataVersion()
        if version != lastDataVersion {
            for t in tables { t.clearMemoryCache() }
            lastDataVersion = version
        }
    }

    func runWrite<T>(_ body: (Transaction) throws -> T) throws -> T {
        if isReadOnly { throw PostboxError.readOnly(path: path) }
        try valueBox.begin()
        state.isActive = true
        state.isWrite = true
        state.changes = PostboxChanges()
        let tx = Transaction(postbox: self, state: state)
        do {
            if let version = valueBox.pagerDataVersion() {
                if version != lastPagerVersion {
                    for t in tables { t.clearMemoryCache() }
                    lastPagerVersion = version
                }
            } else {
                try refreshCachesIfChanged()
            }
            let result = try body(tx)
            for t in tables { try t.beforeCommit() }
            try valueBox.commit()
            lastPagerVersion = valueBox.pagerDataVersion()
            state.isActive = false
            let changes = state.changes
            if !changes.isEmpty { for c in observers.values { c.yield(changes) } }
            return result
        } catch {
            state.isActive = false
            valueBox.rollback()
            for t in tables { t.clearMemoryCache() }
            lastPagerVersion = nil
            throw error
        }
    }

    private func runRead<T>(_ body: (Transaction) throws -> T) throws -> T {
        try valueBox.beginRead()
        state.isActive = true
        state.isWrite = false
        defer {
            state.isActive = false
            valueBox.rollback()
        }
        try refreshCachesIfChanged()
        return try body(Transaction(postbox: self, state: state))
    }

    // MARK: Observation and maintenance

    /// The change record of every write transaction committed by this process from now on.
    public func changes() -> AsyncStream<PostboxChanges> {
        let (stream, continuation) = AsyncStream<PostboxChanges>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        queue.sync { observers[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.queue.async { self.observers[id] = nil }
        }
        return stream
    }

    /// The engine's consistency check (`PRAGMA integrity_check` on a file): ["ok"] or the
    /// problems found.
    public func integrityCheck() throws -> [String] { try queue.sync { try valueBox.integrityCheck(quick: false) } }

    /// Bytes of free pages inside the file (0 on a server, which keeps freed space for reuse).
    public func freeBytes() throws -> Int64 { try queue.sync { try valueBox.freeBytes() } }

    /// Returns the space deletes freed to the file system; the bytes reclaimed.
    public func compact() throws -> Int64 { try queue.sync { try valueBox.compact() } }

    /// Size of the database file plus its WAL, in bytes (0 for a store that is not a file).
    public func fileSize() -> Int64 { valueBox.storedBytes() }
}
