#if canImport(Glibc)
    import Glibc
#endif

/// Small files read and written whole below a `ConfinedDirectory` (journals, notes): opened
/// beneath its descriptor like every other name, and replaced atomically.
extension ConfinedDirectory {
    /// The bytes of the regular file `relative`, or nil when nothing is there. Refuses what
    /// `openFile` refuses, and a file larger than `limit` bytes (`EFBIG`).
    public func readContents(_ relative: String, limit: Int) throws(ConfinedFileError) -> [UInt8]? {
        guard let fd = try openFileIfExists(relative, .read) else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .system(path: display(relative), operation: "inspect", errno: errno) }
        guard st.st_size <= limit else { throw .system(path: display(relative), operation: "read", errno: EFBIG) }
        switch Self.readAll(descriptor: fd, limit: limit, expectedSize: Int(st.st_size)) {
        case .success(let bytes): return bytes
        case .failure(.errno(let code)): throw .system(path: display(relative), operation: "read", errno: code)
        case .failure(.tooLarge): throw .system(path: display(relative), operation: "read", errno: EFBIG)
        }
    }

    /// Why `readAll` stopped: a failed `read`, or more than the limit.
    public enum ReadFailure: Error, Equatable {
        case errno(Int32)
        case tooLarge
    }

    /// At most `limit` bytes of the open `fd` from its offset, read whole: usually one `read` of
    /// the expected size plus one byte (to see the end, or that the file grew), with no buffer
    /// zeroed first.
    public static func readAll(descriptor fd: Int32, limit: Int, expectedSize: Int? = nil) -> Result<[UInt8], ReadFailure> {
        var bytes = [UInt8]()
        var capacity = (expectedSize ?? 65_535) + 1
        while true {
            var failure: Int32 = 0
            let chunk = [UInt8](unsafeUninitializedCapacity: capacity - bytes.count) { buffer, count in
                count = 0
                while true {
                    let n = Glibc.read(fd, buffer.baseAddress!, buffer.count)
                    if n < 0, errno == EINTR { continue }
                    if n < 0 { failure = errno } else { count = n }
                    return
                }
            }
            if failure != 0 { return .failure(.errno(failure)) }
            if chunk.isEmpty { return .success(bytes) }
            if bytes.isEmpty { bytes = chunk } else { bytes += chunk }
            if bytes.count > limit { return .failure(.tooLarge) }
            if bytes.count == capacity { capacity *= 2 }
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
