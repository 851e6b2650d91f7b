import ConfinedFiles
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// Makes the index and the files agree again after crashes, manual deletions or foreign
/// writers — the only part of cleanup that walks the file system:
///
/// 0. walks each location's shard directories (`MediaShard`); a complete file with a resource's
///    name outside its shard (dropped at the top of `media/`, say) is moved into its shard and
///    indexed like any file without a row; anything else MediaBox never produces (another
///    name, a link, a FIFO) is foreign: counted with its bytes, and removed once older than
///    `foreignFileAge` when that is set (never through a link: the entry itself goes);
/// 1. stale `_partial` files (unlocked, older than `stalePartialAge` and not indexed, or left
///    beside a complete file by a crash between link and unlink) are removed (their range
///    record goes with them) — an indexed partial (a prefix fetched on purpose) is a cache
///    entry, evicted like any; a `_partial.want` file, or a `_partial.meta` file of an earlier
///    version, without its partial file is a leftover and removed too;
/// 2. complete files without a row are indexed (or removed, per policy), unless locked or
///    modified within `settleTime` (a writer may be about to index them);
/// 3. rows whose file is gone are dropped (a partial file counts), rows with a wrong size are
///    corrected;
/// 4. the running totals are rebuilt from the rows.
public enum Reconciliation {
    public static func run(
        mediaBox: MediaBox, options: ReconciliationOptions = ReconciliationOptions(),
        now: Int64? = nil, dryRun: Bool = false
    ) throws -> ReconciliationReport {
        let now = now ?? Int64(Date().timeIntervalSince1970)
        var report = ReconciliationReport()
        let storage = mediaBox.storageBox
        let media = mediaBox.directory
        for location in MediaStorageLocation.allCases {
            let locationDirectory = location.directoryName ?? ""
            func relative(_ directory: String, _ name: String) -> String { directory.isEmpty ? name : directory + "/" + name }
            var pending: [(MediaStorageKey, stat)] = []
            func flushPending() throws {
                guard !pending.isEmpty else { return }
                let known = try storage.existingKeys(pending.map { $0.0 })
                var toIndex: [StorageBoxEntry] = []
                for (key, st) in pending where !known.contains(key) {
                    let paths = mediaBox.paths(for: key)
                    let mtime = Int64(st.st_mtim.tv_sec)
                    if mtime > now - options.settleTime || ResourceLock.isLocked(paths.relativeComplete, in: media) { continue }
                    let usage = StorageUsage(bytes: Int64(st.st_size), count: 1)
                    switch options.unindexedFiles {
                    case .index:
                        report.indexedFiles += usage
                        let rid = MediaResourceId(safeFileName: key.fileName)?.stringRepresentation ?? key.fileName
                        toIndex.append(
                            StorageBoxEntry(
                                resourceId: rid, fileName: key.fileName,
                                info: MediaResourceStorageInfo(contentType: .other, location: location),
                                size: Int64(st.st_size), accessTime: mtime, storedTime: mtime))
                    case .remove:
                        switch ResourceRemoval.remove(paths, in: media, dryRun: dryRun) {
                        case .removed: report.removedUnindexedFiles += usage
                        case let .refused(error): throw error
                        default: break
                        }
                    }
                }
                if !dryRun { try storage.insert(toIndex) }
                pending.removeAll(keepingCapacity: true)
            }
            /// Counts a foreign entry and removes it when old enough.
            func foreign(_ path: String, _ st: stat?) throws {
                report.foreignFiles += 1
                let bytes = st.map { (($0.st_mode & S_IFMT) == S_IFREG) ? Int64($0.st_size) : 0 } ?? 0
                report.foreignBytes += bytes
                guard let age = options.foreignFileAge, let st, Int64(st.st_mtim.tv_sec) < now - age else { return }
                let removed = try dryRun || PosixFile.unlinkIfExists(path, in: media)
                if removed { report.removedForeignFiles += StorageUsage(bytes: bytes, count: 1) }
            }
            /// A complete file with a resource's name, found outside its shard: moved into it
            /// (never replacing a file there) and queued for indexing. Foreign otherwise.
            func misplaced(_ path: String, name: String, _ st: stat?) throws {
                guard let st, (st.st_mode & S_IFMT) == S_IFREG, MediaResourceId.isSafeFileName(name) else { return try foreign(path, st) }
                let key = MediaStorageKey(location: location, fileName: name)
                let target = mediaBox.paths(for: key)
                if dryRun {
                    if !PosixFile.exists(target.relativeComplete, in: media) { pending.append((key, st)) } else { try foreign(path, st) }
                    return
                }
                try PosixFile.makeDirectory(target.relativeDirectory, in: media)
                guard try media.link(path, to: target.relativeComplete) else { return try foreign(path, st) }
                try PosixFile.unlinkIfExists(path, in: media)
                report.movedIntoShards += 1
                pending.append((key, st))
            }
            // The shard directories hold the files; in the flat layout (a read-only look at a
            // store not yet migrated) the location directory itself does.
            let sharded = mediaBox.layout == .sharded
            // Only the shard folders that exist (they are created by the first file that needs one).
            var directories = sharded ? [] : [locationDirectory]
            if sharded {
                var loose: [String] = []
                try PosixFile.forEachEntry(in: locationDirectory, of: media) { name, type in
                    if type == .directory {
                        if MediaShard.isShardName(name) { directories.append(relative(locationDirectory, name)) }
                        return
                    }
                    report.filesScanned += 1
                    loose.append(name)
                }
                for name in loose {
                    let path = relative(locationDirectory, name)
                    try misplaced(path, name: name, try PosixFile.lstat(path, in: media))
                }
            }
            for directory in directories {
                let shard = sharded ? String(directory.suffix(3)) : nil
                try PosixFile.forEachEntry(in: directory, of: media) { name, type in
                    if type == .directory { return }
                    report.filesScanned += 1
                    let path = relative(directory, name)
                    guard let st = try PosixFile.lstat(path, in: media) else { return }
                    guard (st.st_mode & S_IFMT) == S_IFREG else { return try foreign(path, st) }
                    if let shard, let base = ShardMigration.resourceFileBase(name), MediaShard.name(forFileName: base) != shard {
                        return try misplaced(path, name: name, st)
                    }
                    let mtime = Int64(st.st_mtim.tv_sec)
                    if let suffix = [ResourceStorePaths.legacyMetaSuffix, ResourceStorePaths.wantsSuffix].first(where: name.hasSuffix) {
                        let base = String(name.dropLast(suffix.count))
                        let partial = relative(directory, base + ResourceStorePaths.partialSuffix)
                        if !PosixFile.exists(partial, in: media) && mtime < now - options.settleTime {
                            if !dryRun { try PosixFile.unlinkIfExists(path, in: media) }
                            report.removedPartials += StorageUsage(bytes: Int64(st.st_size), count: 1)
                        }
                        return
                    }
                    if name.hasSuffix(ResourceStorePaths.partialSuffix) {
                        let base = String(name.dropLast(ResourceStorePaths.partialSuffix.count))
                        guard MediaResourceId.isSafeFileName(base) else { return try foreign(path, st) }
                        let paths = mediaBox.paths(for: MediaStorageKey(location: location, fileName: base))
                        let leftover = PosixFile.exists(paths.relativeComplete, in: media)
                        guard leftover || mtime < now - options.stalePartialAge else { return }
                        if !leftover, try storage.entry(MediaStorageKey(location: location, fileName: base)) != nil { return }
                        guard let fd = try PosixFile.openIfExists(path, in: media, .read) else { return }
                        defer { Glibc.close(fd) }
                        guard ResourceLock.tryLock(fd, .exclusive), PosixFile.isSameFile(fd, path, in: media) else { return }
                        if !dryRun { try PosixFile.unlinkIfExists(paths.relativePartial, in: media) }
                        report.removedPartials += StorageUsage(bytes: Int64(st.st_size), count: 1)
                        return
                    }
                    guard MediaResourceId.isSafeFileName(name) else {
                        // storage.sqlite and its WAL live in storage/, never here; anything else is foreign.
                        return try foreign(path, st)
                    }
                    pending.append((MediaStorageKey(location: location, fileName: name), st))
                    if pending.count >= 512 { try flushPending() }
                }
            }
            try flushPending()
        }

        // Rows whose file is gone, or whose size is wrong.
        var cursor: MediaStorageKey?
        while true {
            let rows = try storage.entries(after: cursor, limit: 1024)
            if rows.isEmpty { break }
            cursor = rows.last?.key
            var drop: [MediaStorageKey] = []
            var fix: [StorageBoxEntry] = []
            for row in rows {
                let rowPaths = mediaBox.paths(for: row.key)
                let path = rowPaths.relativeComplete
                guard let st = try PosixFile.lstat(path, in: media), (st.st_mode & S_IFMT) == S_IFREG else {
                    if let partial = try PosixFile.lstat(rowPaths.relativePartial, in: media), (partial.st_mode & S_IFMT) == S_IFREG { continue }
                    drop.append(row.key)
                    report.droppedRows += StorageUsage(bytes: row.size, count: 1)
                    continue
                }
                if Int64(st.st_size) != row.size {
                    var fixed = row
                    fixed.size = Int64(st.st_size)
                    fix.append(fixed)
                    report.resizedRows += 1
                }
            }
            if !dryRun {
                try storage.remove(drop)
                try storage.insert(fix)
            }
        }
        if !dryRun { try storage.recomputeTotals() }
        return report
    }
}
