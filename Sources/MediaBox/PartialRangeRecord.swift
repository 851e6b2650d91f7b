import CLinux
import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where a partial file keeps the ranges it holds: a `PartialFileMeta` in the extended attribute
/// `user.mediabox` of `<name>_partial` itself, so a download costs one inode, not two.
///
/// Replacing an attribute's value is atomic (a reader sees the old value or the new one, never
/// a mix), so a record is never torn; its checksum still guards against a foreign value. The
/// value stays within `budget` bytes, so it always fits the inode or one block beside it: a map
/// with more ranges than fit is recorded in part (`bounded`). Recording fewer ranges than held
/// is always safe: the bytes left out are fetched again.
///
/// The media directory needs a file system with user extended attributes (ext4, XFS, btrfs,
/// tmpfs since Linux 6.6, overlayfs over those); elsewhere the first record of a partial fails
/// with `MediaBoxError.extendedAttributesUnsupported`.
enum PartialRangeRecord {
    /// Short on purpose: on ext4 (256-byte inodes) the name and a value of up to 64 bytes fit in
    /// the inode itself — a record of two ranges with a header revision. A longer value moves to
    /// a block of its own, and moving it there and back costs some 60 µs against 3 µs in place.
    static let attributeName = "user.mediabox"
    /// The largest value written, in bytes (ext4 keeps a value in the inode, or in one block).
    static let budget = 3072

    /// The record of the partial file open as `fd`: nil when it has none (or the file system
    /// keeps no attributes); `present` tells a value that failed its checks from no value.
    static func read(_ fd: Int32) -> (meta: PartialFileMeta?, present: Bool) {
        // One call: a value longer than any written here (ERANGE) is foreign.
        let capacity = 4096
        return withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 8) { buffer in
            let n = fgetxattr(fd, attributeName, buffer.baseAddress, capacity)
            if n < 0 { return (nil, errno == ERANGE) }
            return (PartialFileMeta.decode(Data(UnsafeRawBufferPointer(rebasing: buffer.prefix(n)))), true)
        }
    }

    /// The record of the partial file at `paths`, read without a lock: what another process's
    /// writer has recorded so far (nil when there is no partial file or no valid record).
    static func read(_ paths: ResourceStorePaths, in media: ConfinedDirectory) -> PartialFileMeta? {
        guard let fd = try? PosixFile.openIfExists(paths.relativePartial, in: media, .read) else { return nil }
        defer { close(fd) }
        return read(fd).meta
    }

    /// Replaces the record of the partial file open as `fd` (at most `budget` bytes of it).
    static func write(_ meta: PartialFileMeta, to fd: Int32, paths: ResourceStorePaths, in media: ConfinedDirectory) throws {
        let bytes = bounded(meta).encode()
        let status = bytes.withUnsafeBytes { fsetxattr(fd, attributeName, $0.baseAddress, $0.count, 0) }
        guard status != 0 else { return }
        if errno == ENOTSUP || errno == EOPNOTSUPP { throw MediaBoxError.extendedAttributesUnsupported(directory: media.path) }
        throw PosixFile.fail(paths.partial, "fsetxattr")
    }

    /// Removes the record from a file just completed (its complete name needs none). Best effort:
    /// a record left on a complete file is never read.
    static func remove(from fd: Int32) {
        _ = fremovexattr(fd, attributeName)
    }

    /// The ranges that fit `budget`: all of them when they fit, else the one from offset 0 (what
    /// readers serve first) and the largest others.
    static func bounded(_ meta: PartialFileMeta) -> PartialFileMeta {
        let fixed = PartialFileMeta(totalSize: meta.totalSize, ranges: [], headerRevision: meta.headerRevision).encode().count
        let fitting = (budget - fixed) / 16
        guard meta.ranges.count > fitting else { return meta }
        var kept: [Range<Int64>] = []
        var rest = meta.ranges[...]
        if let first = rest.first, first.lowerBound == 0 {
            kept.append(first)
            rest = rest.dropFirst()
        }
        kept += rest.sorted { $0.count > $1.count }.prefix(fitting - kept.count)
        var bounded = meta
        bounded.ranges = kept.sorted { $0.lowerBound < $1.lowerBound }
        return bounded
    }

    /// Moves the record a store written by an earlier version kept in `<name>_partial.meta`
    /// into the partial file open (and locked) as `fd`, when the file has no record yet and
    /// data: decoded as it always was, cut to the bytes the file holds, recorded (synced with
    /// `sync`), and the old file removed. An old file beside a partial that is empty or already
    /// recorded is a leftover and is removed. Without an old file this costs one failed open.
    static func importLegacy(into fd: Int32, paths: ResourceStorePaths, in media: ConfinedDirectory, sync: Bool) throws {
        guard let legacy = try? PosixFile.openIfExists(paths.relativeLegacyMeta, in: media, .read) else { return }
        defer { close(legacy) }
        let dataSize = Int64(try PosixFile.fstat(fd, path: paths.partial).st_size)
        if dataSize > 0, !read(fd).present,
            let size = try? PosixFile.fstat(legacy, path: paths.partial).st_size, size > 0,
            let bytes = try? PosixFile.preadAll(legacy, count: Int(size), offset: 0, path: paths.partial),
            var meta = PartialFileMeta.decode(bytes)
        {
            meta.ranges = meta.ranges.filter { $0.lowerBound < dataSize }.map { $0.lowerBound..<min($0.upperBound, dataSize) }
            try write(meta, to: fd, paths: paths, in: media)
            if sync { try PosixFile.fsync(fd, path: paths.partial) }
        }
        try PosixFile.unlinkIfExists(paths.relativeLegacyMeta, in: media)
    }
}
