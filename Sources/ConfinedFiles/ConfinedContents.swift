#if canImport(Glibc)
    import Glibc
#endif

/// Small files read and written whole below a `ConfinedDirectory` (journals, notes): opened
/// beneath its descriptor like every other name, and replaced atomically.
extension ConfinedDirectory {
    /// The bytes of the regular file `relative`, or nil when nothing is there. Refuses what
    /// `openFile` refuses, and a file larger than `limit` bytes.
    public func readContents(_ relative: String, limit: Int) throws(ConfinedFileError) -> [UInt8]? {
        guard let fd = try openFileIfExists(relative, .read) else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .system(path: display(relative), operation: "read", errno: errno)
            }
            if n == 0 { return bytes }
            bytes += buffer[0..<n]
            if bytes.count > limit { throw .system(path: display(relative), operation: "read", errno: EFBIG) }
        }
    }

    /// Replaces `relative` with `bytes` (mode `mode`): written to a new file beside it, synced,
    /// then renamed over it, so a reader sees the old contents or the new, never a mix.
    public func replaceContents(_ relative: String, with bytes: [UInt8], mode: mode_t = 0o600) throws(ConfinedFileError) {
        let temporary = relative + ".tmp"
        let fd = try openFile(temporary, .replaceContents, mode: mode)
        var failure: ConfinedFileError?
        bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .system(path: display(temporary), operation: "write", errno: errno)
                    return
                }
                done += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = .system(path: display(temporary), operation: "fsync", errno: errno) }
        close(fd)
        if let failure {
            _ = try? removeFile(temporary)
            throw failure
        }
        try rename(temporary, to: relative)
    }
}
