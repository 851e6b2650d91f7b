import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An open complete resource holding a shared lock, so cleanup (in any process) skips it until
/// `close()`. Obtain one from `MediaBox.openForReading`.
public final class MediaResourceReader: @unchecked Sendable {
    // @unchecked Sendable: `fd` is set once and cleared by `close()` under `lock`.
    public let path: String
    public let size: Int64
    private var fd: Int32
    private let lock = NSLock()

    init(path: String, fd: Int32, size: Int64) {
        self.path = path
        self.fd = fd
        self.size = size
    }

    deinit { close() }

    /// Reads up to `count` bytes at `offset`.
    public func read(offset: Int64, count: Int) throws -> Data {
        lock.lock()
        defer { lock.unlock() }
        guard fd >= 0 else { throw MediaBoxError.io(path: path, operation: "read", errno: EBADF) }
        return try PosixFile.preadAll(fd, count: count, offset: offset, path: path)
    }

    /// The whole file.
    public func readAll() throws -> Data { try read(offset: 0, count: Int(size)) }

    /// The open descriptor, for a reader that needs it (an upload with `pread`). It stays this
    /// reader's: valid until `close()`, never to be closed by the caller.
    public var descriptor: Int32 {
        lock.lock()
        defer { lock.unlock() }
        return fd
    }

    public var data: MediaResourceData { MediaResourceData(path: path, offset: 0, size: size, complete: true) }

    /// Releases the lock.
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }
}
