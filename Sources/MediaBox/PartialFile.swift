import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A download in progress: data parts written at their offsets into `<name>_partial` with
/// `pwrite`, and the ranges present recorded in an extended attribute of that same file
/// (`PartialRangeRecord`, encoded as a `PartialFileMeta`), each after its data.
///
/// The instance holds `LOCK_EX` on the partial file for its whole life, so at most one writer
/// (in any process) works on a resource and cleanup never removes it. `complete()` makes the
/// complete file appear atomically, only once the ranges cover the known size.
public final class MediaBoxPartialFile: @unchecked Sendable {
    // @unchecked Sendable: used by one task at a time (the fetch that opened it); it may hop threads
    // for blocking completion work, never concurrently.
    /// How much of a crash the ranges map must survive.
    public enum Durability: Sendable {
        /// Data first, then its record, no fsync per part: a killed process (SIGKILL, OOM) loses
        /// at most the part being written; the page cache keeps everything else.
        case processCrash
        /// `fdatasync` the data before each record update, so the record never claims bytes that
        /// a power loss could drop. Costs one sync per part.
        case powerLoss
    }

    public let paths: ResourceStorePaths
    /// The media directory the paths are resolved beneath.
    let media: ConfinedDirectory
    public private(set) var ranges: RangeMap
    public private(set) var knownSize: Int64?
    /// The fetcher's revision of the header bytes held, when it sent one.
    public private(set) var headerRevision: Int64?
    public let durability: Durability
    /// Start the disk write of every part as soon as it is written (`sync_file_range`, async), so
    /// a completion that syncs finds most of the file already on disk instead of writing it all
    /// then: the disk works while the network does. Set by MediaBox when completion syncs.
    public var eagerWriteback = false
    /// True when the file had a record that failed its checks (a foreign value): its ranges
    /// were discarded and the data will be fetched again.
    public private(set) var discardedInvalidRecord = false
    private var fd: Int32
    /// Whether ranges are recorded at all (not for data written whole and completed at once).
    private let recordsRanges: Bool
    /// Whether the file may carry a record now (read at the open or written since; or one an
    /// earlier writer left, unread, when this one records nothing): completion removes it.
    private var hasRecord = false

    /// Opens (creating if needed) the partial file and takes its exclusive lock.
    /// Returns nil when `wait` is false and another writer holds the lock.
    /// A lock taken on a partial file that was completed or removed meanwhile is retried.
    ///
    /// `recordsRanges: false` is for data already in hand that is written whole and completed at
    /// once (`MediaBox.storeBatch`): no record is written (a crash before completion leaves a
    /// partial without one, which resumes from zero), and an existing one is neither read nor
    /// trusted.
    ///
    /// A store written by an earlier version may hold the record in `<name>_partial.meta`: it
    /// is moved into the partial file here (`PartialRangeRecord.importLegacy`).
    ///
    /// `syncNewDirectory: false` leaves a shard folder this open creates unsynced, for a caller
    /// that syncs the whole file system before anything in it becomes complete (a batch), or
    /// whose completion syncs the folder (`complete(sync: true)`), or that never syncs the file.
    public static func open(
        paths: ResourceStorePaths, in media: ConfinedDirectory, wait: Bool, durability: Durability = .processCrash,
        recordsRanges: Bool = true, syncNewDirectory: Bool = true
    ) throws -> MediaBoxPartialFile? {
        while true {
            let fd: Int32
            // The directory exists almost always: create it only when the open says it is missing
            // (shard folders are created by the first file that needs one).
            // A link, FIFO or hard-linked file at the name (or a linked folder on the way) is
            // refused at once; only a missing folder is created.
            do {
                fd = try PosixFile.open(paths.relativePartial, in: media, .readWriteCreating)
            } catch {
                guard case .system(_, _, ENOENT) = error else { throw error }
                try PosixFile.makeDirectory(paths.relativeDirectory, in: media, durably: syncNewDirectory)
                fd = try PosixFile.open(paths.relativePartial, in: media, .readWriteCreating)
            }
            if wait {
                do { try ResourceLock.lock(fd, .exclusive, path: paths.partial) } catch { Glibc.close(fd); throw error }
            } else if !ResourceLock.tryLock(fd, .exclusive) {
                Glibc.close(fd)
                return nil
            }
            // The previous holder may have linked it into place and unlinked the partial name.
            guard PosixFile.isSameFile(fd, paths.relativePartial, in: media) else {
                Glibc.close(fd)
                continue
            }
            if recordsRanges {
                do { try PartialRangeRecord.importLegacy(into: fd, paths: paths, in: media, sync: durability == .powerLoss) } catch {
                    Glibc.close(fd)
                    throw error
                }
            }
            return MediaBoxPartialFile(paths: paths, media: media, fd: fd, recordsRanges: recordsRanges, durability: durability)
        }
    }

    private init(paths: ResourceStorePaths, media: ConfinedDirectory, fd: Int32, recordsRanges: Bool, durability: Durability) {
        self.paths = paths
        self.media = media
        self.fd = fd
        self.recordsRanges = recordsRanges
        self.durability = durability
        let (record, present) = recordsRanges ? PartialRangeRecord.read(fd) : (nil, false)
        self.hasRecord = recordsRanges ? present : true
        if let meta = record {
            // Never trust ranges beyond what the data file actually holds.
            let dataSize = Int64((try? PosixFile.fstat(fd, path: paths.partial).st_size) ?? 0)
            var clipped = RangeMap()
            for r in meta.ranges where r.lowerBound < dataSize { clipped.insert(r.lowerBound..<min(r.upperBound, dataSize)) }
            self.ranges = clipped
            self.knownSize = meta.totalSize
            self.headerRevision = meta.headerRevision
        } else {
            self.ranges = RangeMap()
            self.knownSize = nil
            self.headerRevision = nil
            self.discardedInvalidRecord = present
        }
    }

    deinit { close() }

    /// Releases the lock and closes the file (the partial stays on disk for a later resume).
    public func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    /// Records the resource's total size (from the resource or the fetcher).
    public func setSize(_ size: Int64) throws {
        guard knownSize != size else { return }
        knownSize = size
        try writeRecord()
    }

    /// Writes a data part at `offset` and records its range.
    public func write(offset: Int64, data: Data) throws {
        guard !data.isEmpty else { return }
        try data.withUnsafeBytes { try PosixFile.pwriteAll(fd, $0, offset: offset, path: paths.partial) }
        try recordWritten(offset: offset, length: data.count)
    }

    /// Records `length` bytes at `offset` that are already in the data file (written by `write`,
    /// or by a fetcher through a `MediaResourcePartWriter` and verified). Under `.powerLoss` they
    /// are synced before the range is recorded.
    public func recordWritten(offset: Int64, length: Int) throws {
        guard length > 0 else { return }
        if durability == .powerLoss, fdatasync(fd) != 0 { throw PosixFile.fail(paths.partial, "fdatasync") }
        if eagerWriteback { PosixFile.startWriteback(fd, offset: offset, count: length) }
        ranges.insert(offset..<(offset + Int64(length)))
        try writeRecord()
    }

    /// Rewrites `0..<data.count` with a revised header and records it, durably: the data is
    /// synced before the record says it is there, and the record is synced too (an extended
    /// attribute is the inode's metadata: `fsync`, not `fdatasync`), so a crash leaves either the
    /// old header and its ranges or the new one, never a mix claimed as held.
    public func replaceHeader(_ data: Data) throws {
        guard !data.isEmpty else { return }
        try data.withUnsafeBytes { try PosixFile.pwriteAll(fd, $0, offset: 0, path: paths.partial) }
        if fdatasync(fd) != 0 { throw PosixFile.fail(paths.partial, "fdatasync") }
        ranges.insert(0..<Int64(data.count))
        try writeRecord()
        if recordsRanges { try PosixFile.fsync(fd, path: paths.partial) }
    }

    /// Records the revision of the header bytes now held (sent by the fetcher after the header
    /// itself, so a crash in between leaves the older revision: the next fetch sees a revision
    /// that differs and fetches the header again).
    public func setHeaderRevision(_ revision: Int64) throws {
        guard headerRevision != revision else { return }
        headerRevision = revision
        try writeRecord()
    }

    /// Replaces the file's record with the ranges held now (all of them, or as many as fit:
    /// `PartialRangeRecord.bounded`).
    private func writeRecord() throws {
        guard recordsRanges else { return }  // whole data in hand, completed at once
        let meta = PartialFileMeta(totalSize: knownSize, ranges: ranges.ranges, headerRevision: headerRevision)
        try PartialRangeRecord.write(meta, to: fd, paths: paths, in: media)
        hasRecord = true
    }

    /// Whether the ranges cover the known size.
    public var isComplete: Bool {
        guard let size = knownSize else { return false }
        return ranges.contains(0..<size)
    }

    /// The parts still missing (from the contiguous end onwards when the size is unknown).
    public var missingRanges: [Range<Int64>] {
        if let size = knownSize { return ranges.missing(upTo: size) }
        let start = ranges.contiguousPrefix
        return [start..<Int64.max]
    }

    /// Data available to readers now: the contiguous prefix of the partial file.
    public var availableData: MediaResourceData {
        MediaResourceData(path: paths.partial, offset: 0, size: ranges.contiguousPrefix, complete: false)
    }

    /// Truncates to the known size, syncs (when `sync`), links the partial file to the complete
    /// name (never replacing an existing complete file), removes the partial name and the record.
    /// The lock stays held until `close()`, so cleanup skips the new file while its index row
    /// is written. With `sync: false` the caller must sync before (see `MediaBox.completeBatch`).
    public func complete(sync: Bool = true) throws {
        guard let size = knownSize, ranges.contains(0..<size) else { throw MediaBoxError.notComplete(path: paths.partial) }
        try truncateToKnownSize(size)
        if sync { try PosixFile.fsync(fd, path: paths.partial) }
        try publish(syncDirectory: sync)
    }

    /// The second half of `complete()` for batches that synced everything at once.
    /// `syncDirectory` syncs the shard folder and the folder above it: the shard folder may have
    /// been created, unsynced, by the open of a partial file (`syncNewDirectory: false`), and the
    /// complete name is durable only with it. (A folder with nothing new to write syncs at once.)
    func publish(syncDirectory: Bool) throws {
        _ = try media.link(paths.relativePartial, to: paths.relativeComplete)
        try PosixFile.unlinkIfExists(paths.relativePartial, in: media)
        // Only after the link: a crash before it leaves the partial still recorded (resumed,
        // not fetched again); one after it leaves a record nobody reads on the complete file.
        if hasRecord {
            PartialRangeRecord.remove(from: fd)
            hasRecord = false
        }
        if syncDirectory {
            try media.directory(paths.relativeDirectory).sync()
            try media.directory((paths.relativeDirectory as NSString).deletingLastPathComponent).sync()
        }
    }

    /// The partial file's descriptor (for `syncfs` in batches).
    var descriptor: Int32 { fd }

    /// Truncates to the known size without syncing (batch completion syncs once for all).
    func prepareForBatchCompletion() throws {
        guard let size = knownSize, ranges.contains(0..<size) else { throw MediaBoxError.notComplete(path: paths.partial) }
        try truncateToKnownSize(size)
    }

    /// Cuts the data file to `size` when it is longer (bytes left beyond the end by an earlier
    /// writer). A file already of that size is left alone: `ftruncate` to the same size still
    /// waits for the file's pages under writeback, about a millisecond per just-written file.
    private func truncateToKnownSize(_ size: Int64) throws {
        if Int64(try PosixFile.fstat(fd, path: paths.partial).st_size) == size { return }
        if ftruncate(fd, off_t(size)) != 0 { throw PosixFile.fail(paths.partial, "ftruncate") }
    }

    /// Removes the partial download of `paths` (its record goes with it) if nobody is writing
    /// it (its lock is free); a name that does not exist costs one failed open.
    static func removeAbandoned(_ paths: ResourceStorePaths, in media: ConfinedDirectory) {
        _ = ResourceRemoval.remove(paths.relativePartial, in: media, dryRun: false)
    }

    /// The record of the partial file at `paths`, read without a lock: what its writer (in this
    /// process or another) has recorded so far. Nil when there is no partial file or no valid
    /// record. Every reader of the ranges a partial file holds goes through this.
    public static func record(of paths: ResourceStorePaths, in media: ConfinedDirectory) -> PartialFileMeta? {
        PartialRangeRecord.read(paths, in: media)
    }

    /// Removes the partial (used when a complete file already exists).
    func discard() {
        _ = try? PosixFile.unlinkIfExists(paths.relativePartial, in: media)
        close()
    }
}

/// The record of a partial file's ranges (`PartialRangeRecord`; earlier versions kept it in
/// `<name>_partial.meta`, in the same format), little-endian:
/// `"MBPM"` · version u8 (1 or 2) · 3 reserved bytes · total size i64 (−1 unknown) ·
/// (version 2 only) header revision i64 · range count u32 · ranges (lower i64, upper i64)… ·
/// CRC-32 u32 of everything before it. Version 1 is written while no header revision is known.
/// A value whose length or checksum does not match is not a record and is ignored.
public struct PartialFileMeta: Sendable, Equatable {
    public var totalSize: Int64?
    public var ranges: [Range<Int64>]
    /// The fetcher's revision of the header bytes held (see `MediaResourceFetchEvent.headerRevision`).
    public var headerRevision: Int64?

    public init(totalSize: Int64?, ranges: [Range<Int64>], headerRevision: Int64? = nil) {
        self.totalSize = totalSize
        self.ranges = ranges
        self.headerRevision = headerRevision
    }

    static let magic: [UInt8] = Array("MBPM".utf8)

    public func encode() -> [UInt8] {
        var out = Self.magic + [headerRevision == nil ? 1 : 2, 0, 0, 0]
        Self.append(&out, UInt64(bitPattern: totalSize ?? -1))
        if let headerRevision { Self.append(&out, UInt64(bitPattern: headerRevision)) }
        Self.append32(&out, UInt32(ranges.count))
        for r in ranges {
            Self.append(&out, UInt64(bitPattern: r.lowerBound))
            Self.append(&out, UInt64(bitPattern: r.upperBound))
        }
        Self.append32(&out, CRC32.checksum(out))
        return out
    }

    public static func decode(_ data: Data) -> PartialFileMeta? {
        let b = [UInt8](data)
        guard b.count >= 24, Array(b[0..<4]) == magic, b[4] == 1 || b[4] == 2 else { return nil }
        // Version 2 puts the header revision between the size and the range count.
        let countAt = b[4] == 2 ? 24 : 16
        guard b.count >= countAt + 8 else { return nil }
        let count = Int(read32(b, countAt))
        guard count <= (b.count - countAt - 8) / 16, b.count == countAt + 4 + count * 16 + 4 else { return nil }
        let crc = read32(b, b.count - 4)
        guard CRC32.checksum(Array(b[0..<(b.count - 4)])) == crc else { return nil }
        let size = Int64(bitPattern: read64(b, 8))
        var ranges: [Range<Int64>] = []
        for i in 0..<count {
            let lo = Int64(bitPattern: read64(b, countAt + 4 + i * 16))
            let hi = Int64(bitPattern: read64(b, countAt + 12 + i * 16))
            guard lo >= 0, hi >= lo else { return nil }
            ranges.append(lo..<hi)
        }
        let revision = b[4] == 2 ? Int64(bitPattern: read64(b, 16)) : nil
        return PartialFileMeta(totalSize: size >= 0 ? size : nil, ranges: ranges, headerRevision: revision)
    }

    static func append(_ out: inout [UInt8], _ v: UInt64) { for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) } }
    static func append32(_ out: inout [UInt8], _ v: UInt32) { for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) } }
    static func read64(_ b: [UInt8], _ o: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[o + $1]) << (8 * UInt64($1)) } }
    static func read32(_ b: [UInt8], _ o: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[o + $1]) << (8 * UInt32($1)) } }
}
