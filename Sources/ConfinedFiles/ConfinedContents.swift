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

    /// Replaces `relative` with `bytes` (mode `mode`, whatever the umask): written to a new file
    /// `.<name>.tmp-<random>` beside it (`<name>.tmp-<random>` for a name that is hidden already) (created exclusively, so nothing planted there is
    /// written through), synced, then renamed over the name, which replaces whatever is there (a
    /// link included) without following it. A reader sees the old contents or the new, never a
    /// mix. Without `syncDirectory` the rename is atomic but not yet durable: a power loss may
    /// leave the previous file (never a partial one).
    public func replaceContents(_ relative: String, with bytes: [UInt8], mode: mode_t = 0o600, syncDirectory: Bool = true) throws(ConfinedFileError) {
        let (folder, name) = try split(relative)
        var fd: Int32 = -1
        var temporary = ""
        let hidden = name.hasPrefix(".") ? name : "." + name
        for attempt in 0..<16 {
            temporary = "\(hidden).tmp-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
            do {
                fd = try folder.openFile(temporary, .createNew, mode: 0o600)
                break
            } catch {
                if case .system(_, _, EEXIST) = error, attempt < 15 { continue }
                throw error
            }
        }
        var failure: ConfinedFileError?
        bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .system(path: folder.display(temporary), operation: "write", errno: errno)
                    return
                }
                done += n
            }
        }
        fchmod(fd, mode)
        if failure == nil, fsync(fd) != 0 { failure = .system(path: folder.display(temporary), operation: "fsync", errno: errno) }
        close(fd)
        if failure == nil, renameat(folder.descriptor, temporary, folder.descriptor, name) != 0 {
            failure = .system(path: folder.display(name), operation: "rename \(Printable.path(temporary)) to", errno: errno)
        }
        if let failure {
            _ = try? folder.removeFile(temporary)
            throw failure
        }
        if syncDirectory { fsync(folder.descriptor) }
    }
}
