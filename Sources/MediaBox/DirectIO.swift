#if canImport(Glibc)
    import Glibc
#endif

/// Direct I/O (`O_DIRECT`): writes that go from the caller's memory to the device, bypassing the
/// page cache.
///
/// A download whose completion syncs the file pays for every byte twice through the page cache:
/// the copy in, then the kernel's write-back, page by page, which on ext4 costs several times the
/// copy (docs/media-storage.md, "Direct writes", has the measurements). Direct writes need the
/// buffer's address, the file offset and the length to be multiples of the device's block size;
/// `alignment` covers every common device.
public enum DirectIO {
    /// Offsets, lengths and buffer addresses of direct writes are multiples of this.
    public static let alignment = 4096

    /// `O_DIRECT`, from the kernel headers: Glibc's Swift module does not export it, and its value
    /// differs between architectures. Nil where it is not known (direct I/O is then never used).
    public static let openFlag: Int32? = {
        #if arch(x86_64) || arch(i386)
            return 0o40000
        #elseif arch(arm64) || arch(arm)
            return 0o200000
        #else
            return nil
        #endif
    }()

    /// A second descriptor of the open file `fd`, for direct writes (reopened through
    /// `/proc/self/fd`, so it is the same file whatever happened to its name), or nil when the
    /// file system or the platform has no direct I/O.
    static func reopenForWriting(_ fd: Int32) -> Int32? {
        guard let flag = openFlag else { return nil }
        while true {
            let direct = open("/proc/self/fd/\(fd)", O_WRONLY | O_CLOEXEC | flag)
            if direct >= 0 { return direct }
            if errno != EINTR { return nil }
        }
    }

    /// Writes `bytes` at `offset` through the direct descriptor `fd`. Returns how many bytes it
    /// wrote: all of them, or fewer when the file system refuses direct writes (`EINVAL`) or
    /// wrote a short count; the caller writes the rest through the page cache.
    static func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64, path: String) throws -> Int {
        var done = 0
        while done < bytes.count {
            let n = Glibc.pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EINVAL { return done }
                throw PosixFile.fail(path, "pwrite (O_DIRECT)")
            }
            done += n
            if n == 0 || n % alignment != 0 { return done }
        }
        return done
    }
}
