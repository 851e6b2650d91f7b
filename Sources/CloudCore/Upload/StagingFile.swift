import ConfinedFiles

#if canImport(Glibc)
    import Glibc
#endif

/// A new 0600 file in the uploads directory being filled with a staged copy: created beneath the
/// directory's descriptor (never through a link), written in full, synced by `sync()`, and
/// removed again if it is released before `keep()`, so a failed staging leaves nothing behind.
final class StagingFile {
    private let uploads: ConfinedDirectory
    private let name: String
    /// The file that is being staged from, for messages.
    private let source: String
    private let descriptor: Int32
    private var kept = false

    /// Its path, for messages and the item's record.
    var path: String { uploads.display(name) }

    init(_ name: String, in uploads: ConfinedDirectory, for source: String) throws {
        do { descriptor = try uploads.openFile(name, .createNew) } catch {
            throw MultipartUploadError.staging(path: source, reason: "cannot create \(error.description)")
        }
        self.uploads = uploads
        self.name = name
        self.source = source
    }

    deinit {
        close(descriptor)
        if !kept { _ = try? uploads.removeFile(name) }
    }

    /// Appends every byte of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var written = 0
        while written < bytes.count {
            let w = Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if w < 0 {
                if errno == EINTR { continue }
                throw MultipartUploadError.staging(path: source, reason: "cannot write \(path): \(UploadIO.describe(errno))")
            }
            written += w
        }
    }

    /// Syncs the file; returns its size and modification time.
    func sync() throws -> (size: Int64, mtimeNs: Int64) {
        guard fsync(descriptor) == 0 else { throw MultipartUploadError.staging(path: source, reason: "fsync: \(UploadIO.describe(errno))") }
        let st = try UploadIO.stat(fd: descriptor)
        return (st.size, st.mtimeNs)
    }

    /// Keeps the file when this value is released.
    func keep() { kept = true }
}
