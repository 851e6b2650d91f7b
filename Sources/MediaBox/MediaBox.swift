import ConfinedFiles
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// The file cache of media resources for one account (`account-<id>/postbox/media`): complete
/// files `<shard>/<name>`, downloads in progress `<shard>/<name>_partial` (each recording the
/// ranges it holds in an extended attribute), cached representations in `cache/<shard>/` and
/// `short-cache/<shard>/`, and the StorageBox index in `storage/` (`MediaShard` names the shard).
///
/// MediaBox knows nothing of the network: missing data comes from the injected
/// `MediaResourceFetcher`. Concurrent fetches of one resource share one fetch in this process
/// (an actor) and across processes (the partial file's exclusive `flock`). Readers hold a
/// shared lock, so cleanup never removes a file being read or written.
public final class MediaBox: Sendable {
    /// Tuning that trades durability for speed.
    public struct Options: Sendable {
        /// What the ranges map survives during a download.
        public var partialDurability: MediaBoxPartialFile.Durability
        /// How a fetched or stored file is made durable before its complete name appears.
        public var completionSync: CompletionSync
        /// How often a fetch waiting on another process's lock looks again.
        public var lockPollInterval: Duration
        /// `storeBatch` writes files under no name (`UnnamedFile`) and links them once synced.
        /// Off, or on a file system without `O_TMPFILE`, it writes them under their partial names.
        public var unnamedBatchFiles: Bool
        public init(
            partialDurability: MediaBoxPartialFile.Durability = .processCrash, completionSync: CompletionSync = .group,
            lockPollInterval: Duration = .milliseconds(20), unnamedBatchFiles: Bool = true
        ) {
            self.partialDurability = partialDurability
            self.completionSync = completionSync
            self.lockPollInterval = lockPollInterval
            self.unnamedBatchFiles = unnamedBatchFiles
        }
    }

    /// Durability of completion (the data is synced before the complete name appears, so a
    /// crash never leaves a complete file with missing bytes).
    public enum CompletionSync: Sendable {
        /// fsync the file and its directory (~200 µs each, per file).
        case fsync
        /// Concurrent completions share their `syncfs` calls (group commit): one for the data
        /// before the link, one for the link before the index row. Default: crash-safe at a
        /// fraction of the cost.
        case group
        /// No sync: safe against process crashes only (a power loss may lose data).
        case none
    }

    /// The media directory, held open: every file below it is reached beneath this descriptor
    /// (no link followed, no FIFO or device opened, no hard-linked file written).
    public let directory: ConfinedDirectory
    /// The media directory's path, for messages and SQLite.
    public var basePath: String { directory.path }
    public let storageBox: StorageBox
    /// Sharded once opened for writing (the open migrates a flat store); a read-only open of a
    /// store no writer has migrated yet sees it flat.
    public let layout: MediaLayout
    private let groupSync = GroupSync()
    public let fetcher: (any MediaResourceFetcher)?
    public let options: Options
    private let coordinator = FetchCoordinator()
    private static let blockingQueue = DispatchQueue(label: "MediaBox.blocking", attributes: .concurrent)

    /// `<accountDirectory>/postbox/media`.
    public static func mediaDirectory(accountDirectory: String) -> String { accountDirectory + "/postbox/media" }

    /// Opens the MediaBox of an account directory (`<root>/account-<id>`).
    public convenience init(
        accountDirectory: String, fetcher: (any MediaResourceFetcher)? = nil,
        readOnly: Bool = false, options: Options = Options()
    ) throws {
        try self.init(
            basePath: Self.mediaDirectory(accountDirectory: accountDirectory), fetcher: fetcher,
            readOnly: readOnly, options: options)
    }

    /// Opens the media directory at `basePath` (created 0700 with missing parents unless
    /// read-only; the path itself is the caller's choice and may be reached through a link).
    public convenience init(
        basePath: String, fetcher: (any MediaResourceFetcher)? = nil, readOnly: Bool = false,
        options: Options = Options(), policy: ConfinementPolicy = ConfinementPolicy()
    ) throws {
        try self.init(
            directory: ConfinedDirectory.open(path: basePath, create: !readOnly, policy: policy), fetcher: fetcher,
            readOnly: readOnly, options: options)
    }

    /// Opens the media directory held by `directory`, creating its subdirectories (0700)
    /// unless read-only. A writable open of a store in the flat layout first moves its files
    /// into their shards (`ShardMigration`: crash-safe, resumed by the next open if
    /// interrupted). Read-only opens (`jobrun stats`) never write and never block writers.
    public init(
        directory: ConfinedDirectory, fetcher: (any MediaResourceFetcher)? = nil, readOnly: Bool = false,
        options: Options = Options()
    ) throws {
        self.directory = directory
        self.fetcher = fetcher
        self.options = options
        if !readOnly {
            for location in MediaStorageLocation.allCases {
                if let sub = location.directoryName { try PosixFile.makeDirectory(sub, in: directory) }
            }
            try PosixFile.makeDirectory("storage", in: directory)
        } else if try PosixFile.lstat("storage", in: directory) != nil {
            _ = try directory.directory("storage")
        }
        let storageBox = try StorageBox(directory: directory.display("storage"), readOnly: readOnly)
        self.storageBox = storageBox
        var layout = try storageBox.mediaLayout()
        if !readOnly && layout != .sharded {
            try ShardMigration.run(media: directory, storageBox: storageBox, threads: CleanupOptions.defaultRemovalThreads)
            layout = .sharded
        }
        self.layout = layout
    }

    // MARK: paths and state

    public func paths(for id: MediaResourceId, location: MediaStorageLocation = .resources) -> ResourceStorePaths {
        ResourceStorePaths(mediaDirectory: basePath, location: location, id: id, layout: layout)
    }

    public func paths(for key: MediaStorageKey) -> ResourceStorePaths {
        ResourceStorePaths(mediaDirectory: basePath, location: key.location, fileName: key.fileName, layout: layout)
    }

    /// The folder that holds a location's shard folders (the media directory itself for
    /// `.resources`), reached beneath the media directory like every file of the store.
    public func locationDirectory(_ location: MediaStorageLocation) throws(ConfinedFileError) -> ConfinedDirectory {
        try directory.directory(location.directoryName ?? "")
    }

    private func completeData(_ paths: ResourceStorePaths) -> MediaResourceData? {
        guard let st = try? PosixFile.lstat(paths.relativeComplete, in: directory), (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return MediaResourceData(path: paths.complete, offset: 0, size: Int64(st.st_size), complete: true)
    }

    /// What is on disk for a resource now: the complete file, the contiguous prefix of a partial
    /// download (from its record), or nil. Takes no lock and changes nothing.
    public func resourceData(_ id: MediaResourceId, location: MediaStorageLocation = .resources) -> MediaResourceData? {
        let paths = self.paths(for: id, location: location)
        if let d = completeData(paths) { return d }
        guard let meta = partialRecord(paths) else { return nil }
        let prefix = RangeMap(meta.ranges).contiguousPrefix
        return MediaResourceData(path: paths.partial, offset: 0, size: prefix, complete: false)
    }

    private static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    // MARK: fetch

    /// Returns the complete resource, fetching what is missing with the injected fetcher
    /// (resuming an existing partial file). Concurrent calls for one resource, in this process
    /// or another, result in one fetch. Records the resource in StorageBox (or its access).
    /// `fetcher` replaces the injected one for this call (e.g. a job's bandwidth-capped one);
    /// callers joining a fetch in progress share whichever fetcher started it.
    public func fetch(
        _ resource: any MediaResource, info: MediaResourceStorageInfo,
        fetcher override: (any MediaResourceFetcher)? = nil
    ) async throws -> MediaResourceData {
        try await fetch(resource, info: info, ranges: nil, priority: .default, fetcher: override)
    }

    /// Fetches `ranges` of a resource (nil: all of it) at `priority`, and returns once they are
    /// held: the complete file when it is complete, otherwise the partial file (its contiguous
    /// prefix in `size`; `heldRanges` tells exactly what it holds). A resource with a
    /// `headerSize` gets `0..<headerSize` before anything else. A call joining a fetch in
    /// progress adds its ranges to it: the fetcher serves the highest priority next. A partial
    /// file is a cache entry like a complete one: indexed with the bytes it holds.
    public func fetch(
        _ resource: any MediaResource, info: MediaResourceStorageInfo, ranges: [Range<Int64>]?,
        priority: MediaFetchPriority, fetcher override: (any MediaResourceFetcher)? = nil
    ) async throws -> MediaResourceData {
        let key = MediaStorageKey(location: info.location, id: resource.id)
        let paths = self.paths(for: key)
        if let d = completeData(paths) {
            try touchOrIndex(key, id: resource.id, info: info, size: d.size)
            return d
        }
        if let ranges, let held = heldRanges(resource.id, location: info.location),
            ranges.allSatisfy({ held.ranges.contains($0.clamped(to: 0..<(held.size ?? .max))) }),
            held.ranges.contains(0..<min(resource.headerSize, held.size ?? .max))
        {
            try storageBox.touch([key], at: Self.now())
            return resourceData(resource.id, location: info.location) ?? MediaResourceData(path: paths.partial, offset: 0, size: 0, complete: false)
        }
        guard let fetcher = override ?? fetcher else { throw MediaBoxError.noFetcher }
        let result = try await coordinator.run(key, ranges: ranges, priority: priority, headerSize: resource.headerSize) { [self] demand in
            let (data, fetched) = try await self.performFetch(resource, info: info, key: key, paths: paths, fetcher: fetcher, demand: demand)
            // After the partial file's lock is released: the complete file is immutable.
            if fetched, data.complete, let reader = try? self.openForReading(resource.id, location: info.location, touch: false) {
                await fetcher.fetchCompleted(resource, reader: reader)
                reader.close()
            }
            return data
        }
        if let result { return result }
        return completeData(paths) ?? resourceData(resource.id, location: info.location)
            ?? MediaResourceData(path: paths.partial, offset: 0, size: 0, complete: false)
    }

    /// Whether the complete file of `id` is on disk. A complete file is published before its
    /// StorageBox row is written, so a process killed between the two leaves a file the index
    /// does not name: it is indexed here, and every run that relies on a file leaves it indexed.
    public func holdsComplete(_ id: MediaResourceId, info: MediaResourceStorageInfo) throws -> Bool {
        let key = MediaStorageKey(location: info.location, id: id)
        guard let d = completeData(paths(for: key)) else { return false }
        if try storageBox.entry(key) == nil {
            try storageBox.insert(StorageBoxEntry(id: id, info: info, size: d.size, accessTime: Self.now()))
        }
        return true
    }

    /// Records an access to a complete file, indexing it if a crash left it without its row
    /// (see ``holdsComplete(_:info:)``).
    private func touchOrIndex(_ key: MediaStorageKey, id: MediaResourceId, info: MediaResourceStorageInfo, size: Int64) throws {
        if try storageBox.entry(key) == nil {
            try storageBox.insert(StorageBoxEntry(id: id, info: info, size: size, accessTime: Self.now()))
        } else {
            try storageBox.touch([key], at: Self.now())
        }
    }

    /// Exactly which bytes of a resource are on disk, and its size when known: every byte of a
    /// complete file, or the ranges a partial file records. Nil when there is neither.
    public func heldRanges(_ id: MediaResourceId, location: MediaStorageLocation = .resources) -> (ranges: RangeMap, size: Int64?)? {
        let paths = self.paths(for: id, location: location)
        if let d = completeData(paths) { return (RangeMap([0..<d.size]), d.size) }
        guard let meta = partialRecord(paths) else { return nil }
        return (RangeMap(meta.ranges), meta.totalSize)
    }

    /// What the partial file at `paths` records holding (`MediaBoxPartialFile.record(of:in:)`).
    private func partialRecord(_ paths: ResourceStorePaths) -> PartialFileMeta? {
        MediaBoxPartialFile.record(of: paths, in: directory)
    }

    private func performFetch(
        _ resource: any MediaResource, info: MediaResourceStorageInfo, key: MediaStorageKey,
        paths: ResourceStorePaths, fetcher: any MediaResourceFetcher, demand: MediaResourceFetchRanges
    ) async throws -> (MediaResourceData, fetched: Bool) {
        // Across processes: wait for the partial file's lock, for the other writer's result, or
        // for the other writer to hold the ranges wanted here (read from its record), having asked
        // it for them (`ForeignWants`): the bytes are downloaded once, by whoever writes.
        var acquired: MediaBoxPartialFile?
        var askedGeneration: Int?
        while acquired == nil {
            if let d = completeData(paths) {
                try storageBox.touch([key], at: Self.now())
                return (d, false)
            }
            // A shard folder this open creates is synced with the data it will hold: at once
            // when every part is, else by the completion (`publish`). A partial file that only
            // survives a killed process needs no durable folder, and a folder sync costs a
            // journal commit, which waits for whatever other data is being written then.
            acquired = try MediaBoxPartialFile.open(
                paths: paths, in: directory, wait: false, durability: options.partialDurability,
                syncNewDirectory: options.partialDurability == .powerLoss)
            if acquired == nil {
                if askedGeneration != demand.generation {
                    askedGeneration = demand.generation
                    let wanted = demand.wanted
                    for p in MediaFetchPriority.allCases {
                        let ranges = wanted.filter { $0.priority == p }.map(\.range)
                        if !ranges.isEmpty { try? ForeignWants.request(ranges, priority: p, paths: paths, in: directory) }
                    }
                }
                // (A partial that holds everything is about to be completed: wait for that.)
                if let meta = partialRecord(paths), let size = meta.totalSize ?? resource.size, !RangeMap(meta.ranges).contains(0..<size) {
                    demand.setSize(size)
                    demand.setHeld(RangeMap(meta.ranges))
                    if demand.closeIfSatisfied(), let d = resourceData(resource.id, location: info.location) { return (d, false) }
                }
                try await Task.sleep(for: options.lockPollInterval)
            }
        }
        let partial = acquired!
        var foreign = ForeignWants(paths: paths, media: directory)
        defer {
            foreign.remove()
            partial.close()
        }
        if let d = completeData(paths) {
            // Completed by another process between our check and our lock.
            if partial.ranges.totalBytes == 0 { partial.discard() }
            try storageBox.touch([key], at: Self.now())
            return (d, false)
        }
        if let size = resource.size { try partial.setSize(size) }
        demand.setSize(partial.knownSize)
        demand.setHeld(partial.ranges)
        let heldBefore = partial.ranges.totalBytes
        for (range, priority) in foreign.pull() { _ = demand.add([range], priority: priority, foreign: true) }
        var fetched = false
        if !demand.closeIfSatisfied() && !partial.isComplete {
            fetched = true
            // Revoked before the partial file's lock is released (the `defer` above runs last).
            // A large file whose completion syncs it is written with direct I/O: the sync then
            // has no page-cache write-back to do (see `DirectIO`). Not a prefix: nothing syncs it.
            let writer = try MediaResourcePartWriter(
                duplicating: partial.descriptor, path: paths.partial,
                directIO: options.completionSync != .none && (partial.knownSize ?? 0) >= Self.ownSyncThreshold
                    && demand.wantsWholeResource)
            defer { writer.revoke() }
            repeat {
                let generation = demand.generation
                // Completion will sync: start each part's disk write as it lands, so the final
                // sync only waits for the tail of the file. A fetch of some ranges (a video's
                // prefix) ends in a partial file that nothing syncs: its parts stay in the page
                // cache, as any written file, and reach the disk when the kernel writes them.
                partial.eagerWriteback = options.completionSync != .none && demand.wantsWholeResource
                try await runStream(resource, partial: partial, writer: writer, fetcher: fetcher, demand: demand, foreign: &foreign)
                // Every caller left: the stream ended early, and nothing it left is an entry.
                try Task.checkCancellation()
                if demand.closeIfSatisfied() || partial.isComplete { break }
                // Ranges added while the stream ran may have come too late for it: run another.
                guard demand.generation != generation else {
                    throw MediaBoxError.incompleteFetch(
                        id: resource.id.stringRepresentation, have: partial.ranges.totalBytes, expected: partial.knownSize)
                }
            } while true
        }
        guard partial.isComplete else {
            // The wanted ranges are held; the rest stays missing. The partial is a cache entry
            // counted with the bytes it holds.
            if try partial.ranges.totalBytes != heldBefore || storageBox.entry(key) == nil {
                try storageBox.insert(StorageBoxEntry(id: resource.id, info: info, size: partial.ranges.totalBytes, accessTime: Self.now()))
            } else {
                try storageBox.touch([key], at: Self.now())
            }
            return (partial.availableData, fetched)
        }
        let mode = options.completionSync
        let group = groupSync
        let base = basePath
        try await Self.offPool {
            switch mode {
            case .fsync: try partial.complete(sync: true)
            case .none: try partial.complete(sync: false)
            case .group where (partial.knownSize ?? 0) >= Self.ownSyncThreshold:
                // A large file: its own fsync (its data is mostly written back already) costs
                // less than a syncfs, which would also flush every other dirty file on the
                // file system.
                try partial.complete(sync: true)
            case .group:
                try partial.prepareForBatchCompletion()
                try group.sync(fd: partial.descriptor, path: base)
                try partial.publish(syncDirectory: false)
                // The link too is durable before the row says the file is complete.
                try group.sync(fd: partial.descriptor, path: base)
            }
        }
        let size = partial.knownSize ?? 0
        let now = Self.now()
        try storageBox.insert(StorageBoxEntry(id: resource.id, info: info, size: size, accessTime: now))
        return (MediaResourceData(path: paths.complete, offset: 0, size: size, complete: true), fetched)
    }

    /// One stream of the fetcher: writes what it delivers into the partial file and records each
    /// range there and in `demand`.
    private func runStream(
        _ resource: any MediaResource, partial: MediaBoxPartialFile, writer: MediaResourcePartWriter,
        fetcher: any MediaResourceFetcher, demand: MediaResourceFetchRanges, foreign: inout ForeignWants
    ) async throws {
        defer {
            demand.streamEnded()
            // What other processes asked for meanwhile: the next stream serves it.
            for (range, priority) in foreign.pull() { _ = demand.add([range], priority: priority, foreign: true) }
        }
        var request = MediaResourceFetchRequest(resource: resource, missingRanges: partial.missingRanges, knownSize: partial.knownSize)
        request.partWriter = writer
        request.ranges = demand
        request.headerRevision = partial.headerRevision
        func checkBounds(_ offset: Int64, _ length: Int) throws {
            if offset < 0 || (partial.knownSize.map { offset + Int64(length) > $0 } ?? false) {
                throw MediaBoxError.invalidDataPart(id: resource.id.stringRepresentation, offset: offset, length: length)
            }
        }
        for try await event in fetcher.fetch(request) {
            switch event {
            case let .dataPart(offset, data):
                try checkBounds(offset, data.count)
                if writer.prefersWholeParts {
                    try await writer.writePart(data, at: offset)
                    try partial.recordWritten(offset: offset, length: data.count)
                } else {
                    try partial.write(offset: offset, data: data)
                }
                demand.held(offset..<(offset + Int64(data.count)))
            case let .dataWritten(offset, length):
                try checkBounds(offset, length)
                try partial.recordWritten(offset: offset, length: length)
                demand.held(offset..<(offset + Int64(length)))
            case let .replaceHeader(data):
                try checkBounds(0, data.count)
                try partial.replaceHeader(data)
                demand.held(0..<Int64(data.count))
            case let .resourceSizeUpdated(size):
                try partial.setSize(size)
                demand.setSize(size)
            case let .headerRevision(revision):
                try partial.setHeaderRevision(revision)
            }
            // Part by part, what other processes ask for joins the wanted ranges.
            for (range, priority) in foreign.pull() { _ = demand.add([range], priority: priority, foreign: true) }
        }
        // A stream that ends without a size delivered the whole resource from offset 0.
        if partial.knownSize == nil, partial.ranges.ranges.count == 1, partial.ranges.contiguousPrefix > 0 {
            try partial.setSize(partial.ranges.contiguousPrefix)
            demand.setSize(partial.knownSize)
        }
    }

    /// Files at least this large complete with their own fsync under `.group` (see performFetch).
    static let ownSyncThreshold: Int64 = 8 << 20

    /// Runs blocking file work (fsync, link) on a dispatch queue instead of the cooperative pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            blockingQueue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    // MARK: store

    /// Stores data that is already in hand (cached representations, local files) as a complete
    /// resource: written to the partial name, synced (per `options`), linked into place, indexed.
    /// An existing complete file is kept (contents of an id never change) and only touched.
    @discardableResult
    public func store(_ data: Data, id: MediaResourceId, info: MediaResourceStorageInfo, accessTime: Int64? = nil) throws -> MediaResourceData {
        try storeBatch([(id, data)], info: { _ in info }, accessTime: accessTime, durability: storeDurability)[0]
    }

    /// How `store` makes its files durable, from `options.completionSync`.
    public var storeDurability: BatchDurability {
        switch options.completionSync {
        case .none: return .none
        case .fsync: return .syncEach
        case .group: return .batch
        }
    }

    /// How `storeBatch` makes files durable before they become complete.
    public enum BatchDurability: Sendable {
        /// One `syncfs` for the whole batch (instead of an fsync per file), then each link.
        case batch
        /// fsync each file and its directory before its link (~200 µs each).
        case syncEach
        /// No sync: a process crash is still safe (the page cache holds the data), a power loss
        /// may leave complete files with missing data.
        case none
    }

    /// Stores many resources with batched durability (by default): every file written, one
    /// `syncfs` for all, then each linked into place, the directories synced once, and all rows
    /// inserted in one StorageBox transaction. Files are written under no name (`UnnamedFile`)
    /// where the file system allows it, else under their partial names. A crash before the link
    /// leaves no complete file with missing data: an unnamed file vanishes, a partial one is
    /// removed by reconciliation.
    @discardableResult
    public func storeBatch(
        _ items: [(MediaResourceId, Data)], info: (MediaResourceId) -> MediaResourceStorageInfo,
        accessTime: Int64? = nil, durability: BatchDurability = .batch
    ) throws -> [MediaResourceData] {
        let syncEach = durability == .syncEach
        // Unnamed files are published by the chunk's link step, which `syncEach` does not have.
        var unnamedFiles = options.unnamedBatchFiles && !syncEach
        var results: [MediaResourceData] = []
        results.reserveCapacity(items.count)
        let chunkSize = 256
        var start = 0
        while start < items.count {
            let chunk = items[start..<min(start + chunkSize, items.count)]
            start += chunkSize
            var open: [(BatchFile, MediaResourceStorageInfo, MediaResourceId)] = []
            var touched: [MediaStorageKey] = []
            defer { for (f, _, _) in open { f.close() } }
            var chunkResults: [MediaStorageKey: MediaResourceData] = [:]
            for (id, data) in chunk {
                let i = info(id)
                let paths = self.paths(for: id, location: i.location)
                if let d = completeData(paths) {
                    touched.append(MediaStorageKey(location: i.location, id: id))
                    chunkResults[MediaStorageKey(location: i.location, id: id)] = d
                    continue
                }
                let file: BatchFile
                if unnamedFiles, let unnamed = try UnnamedFile.create(in: paths.relativeDirectory, of: directory) {
                    file = .unnamed(unnamed, paths: paths, size: Int64(data.count))
                } else {
                    unnamedFiles = false
                    // No range record: the data is written whole and completed in this call (a
                    // crash before the link leaves a partial that resumes from zero).
                    guard
                        let partial = try MediaBoxPartialFile.open(
                            paths: paths, in: directory, wait: true, durability: .processCrash,
                            recordsRanges: false, syncNewDirectory: syncEach)
                    else { continue }
                    if let d = completeData(paths) {
                        partial.discard()
                        touched.append(MediaStorageKey(location: i.location, id: id))
                        chunkResults[MediaStorageKey(location: i.location, id: id)] = d
                        continue
                    }
                    file = .partial(partial)
                }
                open.append((file, i, id))
                try file.write(data, completeNow: syncEach)
                // The batch's sync finds the data already on its way to the disk.
                if durability == .batch { PosixFile.startWriteback(file.descriptor, offset: 0, count: data.count) }
            }
            if !syncEach, let first = open.first {
                let sync = durability == .batch
                // One sync for the whole file system instead of one fsync per file.
                if sync { try PosixFile.syncFileSystem(containing: first.0.descriptor, files: open.map { $0.0.descriptor }, path: basePath) }
                var directories = Set<String>()
                for (f, _, _) in open {
                    try f.publish(in: directory)
                    directories.insert(f.paths.relativeDirectory)
                }
                // The links of a chunk land in many shard folders. One more sync of the file
                // system makes all of them durable at once (it writes back every dirty directory
                // block and inode); an fsync per folder would cost the same each time on a file
                // system without a journal, where every directory fsync writes its own block.
                // Only after it are the rows inserted: a file is indexed once its name is durable.
                if sync { try PosixFile.syncDirectories(directories, in: directory, containing: first.0.descriptor, path: basePath) }
            }
            let time = accessTime ?? Self.now()
            var entries: [StorageBoxEntry] = []
            for (f, i, id) in open {
                entries.append(StorageBoxEntry(id: id, info: i, size: f.size, accessTime: time))
                chunkResults[MediaStorageKey(location: i.location, id: id)] = MediaResourceData(path: f.paths.complete, offset: 0, size: f.size, complete: true)
            }
            try storageBox.insert(entries)
            try storageBox.touch(touched, at: time)
            for (id, data) in chunk {
                let key = MediaStorageKey(location: info(id).location, id: id)
                results.append(chunkResults[key] ?? MediaResourceData(path: paths(for: key).complete, offset: 0, size: Int64(data.count), complete: true))
            }
        }
        return results
    }

    // MARK: read and remove

    /// Opens a complete resource for reading under a shared lock (cleanup skips it until the
    /// reader is closed) and records the access. Nil when the resource is not complete here.
    public func openForReading(
        _ id: MediaResourceId, location: MediaStorageLocation = .resources,
        touch: Bool = true, accessTime: Int64? = nil
    ) throws -> MediaResourceReader? {
        let key = MediaStorageKey(location: location, id: id)
        let resourcePaths = paths(for: key)
        let path = resourcePaths.complete
        guard let fd = try PosixFile.openIfExists(resourcePaths.relativeComplete, in: directory, .read) else { return nil }
        do {
            try ResourceLock.lock(fd, .shared, path: path)
            // Cleanup may have removed it between our open and our lock.
            guard PosixFile.isSameFile(fd, resourcePaths.relativeComplete, in: directory) else { close(fd); return nil }
            let size = Int64(try PosixFile.fstat(fd, path: path).st_size)
            if touch { try storageBox.touch([key], at: accessTime ?? Self.now()) }
            return MediaResourceReader(path: path, fd: fd, size: size)
        } catch {
            close(fd)
            throw error
        }
    }

    /// Removes a resource's files and row unless it is locked (being read or written).
    /// Returns false when it was locked and left alone.
    @discardableResult
    public func remove(_ id: MediaResourceId, location: MediaStorageLocation = .resources) throws -> Bool {
        let key = MediaStorageKey(location: location, id: id)
        let outcome = ResourceRemoval.remove(paths(for: key), in: directory, dryRun: false)
        if outcome == .locked { return false }
        try storageBox.remove([key])
        return true
    }

    /// Cache usage from StorageBox's totals (no file-system walk).
    public func stats() throws -> StorageStats { try storageBox.stats() }

    /// Entries that stand for a partial file (a prefix fetched on purpose, counted with the
    /// bytes it holds), from a look at each row's files that changes nothing.
    public func partialEntries() throws -> StorageUsage {
        var usage = StorageUsage()
        var cursor: MediaStorageKey?
        while true {
            let rows = try storageBox.entries(after: cursor, limit: 1024)
            guard let last = rows.last else { return usage }
            cursor = last.key
            for row in rows where completeData(paths(for: row.key)) == nil {
                if try PosixFile.lstat(paths(for: row.key).relativePartial, in: directory) != nil {
                    usage += StorageUsage(bytes: row.size, count: 1)
                }
            }
        }
    }

    /// What is on disk that the index does not count — complete files without a row and
    /// foreign entries — from a walk of the media folders that changes nothing.
    public func notIndexed(now: Int64? = nil) throws -> StorageUsage {
        try Reconciliation.run(mediaBox: self, options: ReconciliationOptions(settleTime: 0), now: now, dryRun: true).notIndexed
    }
}
