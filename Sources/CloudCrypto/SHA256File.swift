import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension SHA256 {
    /// A file that could not be read for hashing: the failed call's `errno`.
    public struct FileReadError: Error, Equatable, Sendable, CustomStringConvertible {
        public let code: Int32
        public init(code: Int32) { self.code = code }
        public var description: String { String(cString: strerror(code)) }
    }

    /// The digest of the first `length` bytes of `fd` (fewer if the file ends before), read
    /// from offset 0 with `pread`, so the descriptor's own offset does not move. The buffer is at
    /// most 1 MiB and no larger than the bytes to read: hashing thousands of small files neither
    /// allocates nor zeroes a megabyte for each.
    public static func hash(fd: Int32, length: Int64) throws(FileReadError) -> Data {
        var sha = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(min(max(length, 1), 1 << 20)), alignment: 64)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let want = Int(min(Int64(buffer.count), length - offset))
            let r = pread(fd, buffer.baseAddress, want, off_t(offset))
            if r < 0 {
                if errno == EINTR { continue }
                throw FileReadError(code: errno)
            }
            if r == 0 { break }
            sha.update(UnsafeRawBufferPointer(rebasing: buffer[0..<r]))
            offset += Int64(r)
        }
        return sha.finalize()
    }

    /// The digest of the file at `path`, as long as it was when opened.
    public static func hash(contentsOfFile path: String) throws(FileReadError) -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileReadError(code: errno) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FileReadError(code: errno) }
        return try hash(fd: fd, length: Int64(st.st_size))
    }
}
