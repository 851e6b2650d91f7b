import CloudCrypto
import ConfinedFiles
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Blocking file work of uploads (open, stat, hash, copy, read), run on a dedicated concurrent
/// queue so it never occupies Swift's cooperative pool.
enum UploadIO {
    private static let queue = DispatchQueue(label: "MultipartUpload.io", qos: .utility, attributes: .concurrent)

    /// Runs `body` on the I/O queue and returns its result.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// `strerror` text of `code`.
    static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// What `fstat` says of an open descriptor that the upload checks.
    struct FileStatus {
        var size: Int64
        /// Modification time (ns).
        var mtimeNs: Int64
        /// Change time (ns): moved on by every write and every change of the inode's metadata.
        var ctimeNs: Int64
        var inode: UInt64
        var isRegular: Bool
        var links: UInt64
    }

    /// Size, times and identity of an open descriptor.
    static func stat(fd: Int32) throws -> FileStatus {
        var st = Glibc.stat()
        guard fstat(fd, &st) == 0 else { throw POSIXFailure(errno) }
        return FileStatus(
            size: Int64(st.st_size), mtimeNs: nanoseconds(st.st_mtim), ctimeNs: nanoseconds(st.st_ctim), inode: UInt64(st.st_ino),
            isRegular: (st.st_mode & S_IFMT) == S_IFREG, links: UInt64(st.st_nlink))
    }

    /// A `stat` time in nanoseconds.
    static func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }

    /// SHA-256 (hex) of `length` bytes of `fd` from offset 0 (`SHA256.hash(fd:length:)`).
    static func sha256(fd: Int32, length: Int64) throws -> String {
        do { return try SHA256.hash(fd: fd, length: length).hexString } catch { throw POSIXFailure(error.code) }
    }

    /// Runs `body` with an uninitialized buffer for reading a file of `length` bytes: the file's
    /// size up to 1 MiB. A small file neither allocates nor zeroes a whole megabyte, which for
    /// thousands of small files enqueued at once was a measurable share of the enqueue.
    static func withReadBuffer<T>(forLength length: Int64, _ body: (UnsafeMutableRawBufferPointer) throws -> T) rethrows -> T {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(min(max(length, 1), 1 << 20)), alignment: 64)
        defer { buffer.deallocate() }
        return try body(buffer)
    }

    /// Reads exactly `count` bytes at `offset` into `buffer` (short only at end of file).
    static func readFully(fd: Int32, into buffer: UnsafeMutableRawBufferPointer, offset: Int64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let r = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + Int64(done)))
            if r < 0 {
                if errno == EINTR { continue }
                throw POSIXFailure(errno)
            }
            if r == 0 { break }
            done += r
        }
        return done
    }
}

/// An `errno` from a file call.
struct POSIXFailure: Error, CustomStringConvertible {
    let code: Int32
    init(_ code: Int32) { self.code = code }
    var description: String { UploadIO.describe(code) }
}

/// The staged file of a queue item, open for the length of one upload attempt.
final class StagedFile: Sendable {
    let fd: Int32
    let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Opens the item's staged file and checks it against the size and fingerprint recorded at
    /// enqueue time. A different modification time alone triggers a re-hash (a `touch` is no
    /// change); the returned flag says whether the stored mtime should be refreshed.
    ///
    /// The file is opened once, beneath its folder's descriptor (`ConfinedDirectory`: a link or
    /// FIFO at the name is refused at once), and everything after — the checks and every byte
    /// sent — goes through that descriptor, so a name swapped after the open changes nothing.
    /// A file staged in `uploads` (the staging folder the caller holds open beneath the data
    /// root) is opened through that folder's descriptor, so a folder swapped for a link after
    /// the run checked the root changes nothing either; a file staged elsewhere (a tool's own
    /// folder) has its folder opened by path.
    /// A file with several links (staged by `link`, or a hard link planted in its place) is
    /// re-hashed unless it is the inode staged with the change time recorded then: equal size
    /// and mtime alone do not prove it is the file that was staged, or that it was not written
    /// through another of its names (a modification time can be set back; a change time cannot).
    static func open(_ item: UploadItemView, below uploads: ConfinedDirectory? = nil) throws -> (StagedFile, refreshedMtime: Int64?) {
        let folder = (item.path as NSString).deletingLastPathComponent
        let name = (item.path as NSString).lastPathComponent
        let fd: Int32
        do {
            // Owners and modes are the data root's check (the run checks the layout first); a
            // staged hard link keeps its source's owner and mode.
            let lenient = ConfinementPolicy(allowInsecure: true)
            let directory =
                if let uploads, uploads.path == folder { try uploads.under(lenient) } else {
                    try ConfinedDirectory.open(path: folder, policy: lenient)
                }
            fd = try directory.openFile(name, .read)
        } catch {
            if case .system(_, _, ENOENT) = error { throw MultipartUploadError.stagedFileMissing(item: item.id, path: item.path) }
            throw MultipartUploadError.fileUnreadable(path: item.path, reason: error.description)
        }
        let file = StagedFile(fd: fd, path: item.path)
        let st: UploadIO.FileStatus
        do { st = try UploadIO.stat(fd: fd) } catch {
            throw MultipartUploadError.fileUnreadable(path: item.path, reason: "\(error)")
        }
        guard st.isRegular else { throw MultipartUploadError.fileUnreadable(path: item.path, reason: "not a regular file") }
        guard st.size == item.size else {
            throw MultipartUploadError.fileChanged(item: item.id, reason: "size was \(item.size) bytes at enqueue, now \(st.size)")
        }
        if let recorded = item.mtimeNs, recorded == st.mtimeNs, st.links == 1 || item.isStagedInode(st) { return (file, nil) }
        let now: String
        do { now = try UploadIO.sha256(fd: fd, length: st.size) } catch {
            throw MultipartUploadError.fileUnreadable(path: item.path, reason: "\(error)")
        }
        guard now == item.sha256 else {
            throw MultipartUploadError.fileChanged(item: item.id, reason: "content differs from enqueue (SHA-256 mismatch)")
        }
        return (file, st.mtimeNs)
    }

    /// True if size and mtime still match `item` (cheap check before the final send).
    func unchanged(_ item: UploadItemView, mtimeNs: Int64?) -> Bool {
        guard let st = try? UploadIO.stat(fd: fd) else { return false }
        return st.size == item.size && (mtimeNs == nil || mtimeNs == st.mtimeNs)
    }
}

/// The fields of an `UploadItem` the file checks need (a value copy, safe to send across tasks).
struct UploadItemView: Sendable {
    var id: Int64
    var path: String
    var size: Int64
    var sha256: String
    var mtimeNs: Int64?
    /// The staged inode and its change time, recorded for a hard-linked file.
    var inode: UInt64? = nil
    var ctimeNs: Int64? = nil

    /// Whether `st` is the inode recorded at staging, unchanged since (same change time).
    func isStagedInode(_ st: UploadIO.FileStatus) -> Bool {
        guard let inode, let ctimeNs else { return false }
        return inode == st.inode && ctimeNs == st.ctimeNs
    }
}
