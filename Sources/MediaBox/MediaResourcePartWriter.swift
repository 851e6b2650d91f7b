import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Lets a fetcher write a part's bytes straight into the partial file as they arrive (no part
/// buffer), without giving it the partial file itself: the fetcher writes, and only when the
/// part has verified does it report `MediaResourceFetchEvent.dataWritten`, after which MediaBox
/// records the range. Bytes written but never reported stay outside the recorded ranges, so they
/// count as missing and are fetched (and overwritten) again.
///
/// MediaBox revokes the writer before it releases the partial file's lock: a write still in
/// progress finishes first, later ones fail, so a transfer that outlives its fetch never touches
/// a file another fetch has taken over.
public final class MediaResourcePartWriter: Sendable {
    /// The partial file's path (for errors).
    public let path: String
    /// A descriptor of its own (a duplicate of the partial file's), -1 once revoked.
    private let descriptor: Mutex<Int32>

    init(duplicating fd: Int32, path: String) throws {
        let own = dup(fd)
        if own < 0 { throw PosixFile.fail(path, "dup") }
        self.path = path
        self.descriptor = Mutex(own)
    }

    deinit { revoke() }

    /// Writes `bytes` at `offset` of the partial file. Throws once the fetch has ended.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try descriptor.withLock { fd in
            guard fd >= 0 else { throw MediaBoxError.io(path: path, operation: "write after the fetch ended", errno: EBADF) }
            try PosixFile.pwriteAll(fd, bytes, offset: offset, path: path)
        }
    }

    /// Waits for a write in progress and refuses every later one.
    func revoke() {
        descriptor.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }
}
