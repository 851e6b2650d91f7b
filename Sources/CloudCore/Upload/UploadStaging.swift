import CloudCrypto
import ConfinedFiles
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How `UploadQueue.enqueue` puts the file into the data root, so the source may vanish.
public enum UploadStaging: String, Sendable, CaseIterable {
    /// Hard link when the source is on the same file system and owned by this user, else copy.
    case auto
    /// Always a private copy (0600); for a secret chat, of the file's encrypted container.
    case copy
    /// Always a hard link (fails across file systems). The link shares the source's inode, so
    /// an in-place change of the source is detected as a change while queued; its permission
    /// bits are the source's (the uploads directory is 0700, so nobody else reaches it there).
    case link
}

/// A file staged into the uploads directory, with what was recorded about it.
struct StagedCopy: Sendable {
    var path: String
    var size: Int64
    var sha256: String
    var mtimeNs: Int64
    var linked: Bool
    /// For a linked file whose inode did not change while it was hashed: the inode and its
    /// change time then. The rename into the item's name moves the change time on, so the item
    /// records the one read after it (`UploadStager.changeTime`, `UploadItem.stagedInode`).
    var inode: UInt64? = nil
    var ctimeNs: Int64? = nil
    /// For a secret item staged as a copy: the container that was staged instead of the file
    /// (`size` and `sha256` are still the plaintext's).
    var container: SecretStagedContainer? = nil
}

/// Validation and staging of a file to enqueue (blocking; run via `UploadIO`).
enum UploadStager {
    /// Checks `source` (exists, regular, readable, not empty, not too large) and stages it as
    /// `temporary` inside the uploads directory `uploads` (the new name is created beneath its
    /// descriptor, never through a link). Returns what was staged. A `secret` file that is not
    /// hard-linked is staged as its encrypted container (`SecretStagedContainer`), never as a
    /// plaintext copy.
    ///
    /// A symbolic link is followed: what is staged (hard-linked or copied) is the file it points
    /// to, through the descriptor that was checked and hashed — never the link itself, which
    /// could dangle once staged (a relative link) or be pointed elsewhere later.
    static func stage(source: String, into uploads: ConfinedDirectory, temporary: String, mode: UploadStaging, secret: Bool) throws -> StagedCopy {
        let st = try validate(source: source, secret: secret)
        let size = Int64(st.st_size)
        let input = Glibc.open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw MultipartUploadError.fileUnreadable(path: source, reason: UploadIO.describe(errno)) }
        defer { close(input) }
        // The file opened must be the one checked (a link may have been repointed meanwhile).
        var opened = stat()
        guard fstat(input, &opened) == 0, opened.st_ino == st.st_ino, opened.st_dev == st.st_dev else {
            throw MultipartUploadError.fileChanged(item: 0, reason: "\(source) was replaced while being staged")
        }
        // A read probe: some files open but cannot be read (EIO, EISDIR on odd file systems).
        var probe: UInt8 = 0
        if pread(input, &probe, 1, 0) < 0 { throw MultipartUploadError.fileUnreadable(path: source, reason: UploadIO.describe(errno)) }

        let wantLink = mode == .link || (mode == .auto && st.st_uid == geteuid())
        if wantLink {
            // Link the opened file's inode (not the path, which may be a symbolic link).
            let linkFailure: String
            do {
                if try uploads.link(descriptor: input, to: temporary) {
                    do {
                        let before = try UploadIO.stat(fd: input)
                        let sha = try UploadIO.sha256(fd: input, length: size)
                        let after = try UploadIO.stat(fd: input)
                        guard after.size == size else { throw MultipartUploadError.fileChanged(item: 0, reason: "it changed while being staged") }
                        var staged = StagedCopy(path: uploads.display(temporary), size: size, sha256: sha, mtimeNs: after.mtimeNs, linked: true)
                        // Recorded only if nothing touched the inode while it was hashed: then the
                        // hash is of the bytes this change time stands for.
                        if before.ctimeNs == after.ctimeNs {
                            staged.inode = after.inode
                            staged.ctimeNs = after.ctimeNs
                        }
                        return staged
                    } catch {
                        _ = try? uploads.removeFile(temporary)
                        throw error
                    }
                }
                linkFailure = "\(uploads.display(temporary)) exists"
            } catch let error as ConfinedFileError {
                linkFailure = error.description
            }
            if mode == .link { throw MultipartUploadError.staging(path: source, reason: "cannot hard-link into the data root: \(linkFailure)") }
        }
        if secret {
            let container = try SecretStagedContainer.write(input: input, source: source, size: size, to: temporary, in: uploads)
            return StagedCopy(
                path: uploads.display(temporary), size: size, sha256: container.plaintextSHA256, mtimeNs: container.mtimeNs, linked: false,
                container: container)
        }
        return try copy(input: input, source: source, size: size, to: temporary, in: uploads)
    }

    /// Stages every request at its temporary path, on every core (`stage` each). If any is
    /// refused, the ones staged are removed and the first refusal in request order is thrown.
    static func stage(_ requests: [UploadRequest], into uploads: ConfinedDirectory, temporaries: [String]) throws -> [StagedCopy] {
        let results = Mutex([Result<StagedCopy, any Error>?](repeating: nil, count: requests.count))
        DispatchQueue.concurrentPerform(iterations: requests.count) { index in
            let r = requests[index]
            let outcome = Result { try stage(source: r.path, into: uploads, temporary: temporaries[index], mode: r.staging, secret: r.secret) }
            results.withLock { $0[index] = outcome }
        }
        let all = results.withLock { $0 }
        var staged: [StagedCopy] = []
        staged.reserveCapacity(all.count)
        for outcome in all {
            switch outcome {
            case .success(let copy)?:
                staged.append(copy)
            case .failure(let error)?:
                for (index, result) in all.enumerated() {
                    if case .success? = result { _ = try? uploads.removeFile(temporaries[index]) }
                }
                throw error
            case nil:
                preconditionFailure("concurrentPerform runs every iteration")
            }
        }
        return staged
    }

    /// The change time (ns) of `name` in `uploads`, if it is still the inode `inode`.
    static func changeTime(of name: String, in uploads: ConfinedDirectory, inode: UInt64?) -> Int64? {
        guard let inode, let st = try? uploads.status(name), UInt64(st.st_ino) == inode else { return nil }
        return UploadIO.nanoseconds(st.st_ctim)
    }

    /// Checks `source`: it exists, is a regular file, is not empty and not too large to send
    /// (`secret`: as an encrypted container). Returns its `stat`.
    static func validate(source: String, secret: Bool) throws -> stat {
        var st = stat()
        guard stat(source, &st) == 0 else {
            let e = errno
            if e == ENOENT || e == ENOTDIR { throw MultipartUploadError.fileNotFound(path: source) }
            throw MultipartUploadError.fileUnreadable(path: source, reason: UploadIO.describe(e))
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw MultipartUploadError.fileUnreadable(path: source, reason: (st.st_mode & S_IFMT) == S_IFDIR ? "it is a directory" : "not a regular file")
        }
        let size = Int64(st.st_size)
        if size == 0 { throw MultipartUploadError.emptyFile(path: source) }
        let sent = secret ? UploadPlan.secretContainerSize(plaintextSize: size) : size
        if UploadPlan(size: sent) == nil { throw MultipartUploadError.fileTooLarge(path: source, size: size) }
        return st
    }

    /// Copies `size` bytes into a new 0600 file, hashing as it goes, and fsyncs it.
    private static func copy(input: Int32, source: String, size: Int64, to name: String, in uploads: ConfinedDirectory) throws -> StagedCopy {
        let file = try StagingFile(name, in: uploads, for: source)
        var sha = SHA256()
        var offset: Int64 = 0
        try UploadIO.withReadBuffer(forLength: size) { raw in
            while true {
                let r = try UploadIO.readFully(fd: input, into: raw, offset: offset)
                let chunk = UnsafeRawBufferPointer(rebasing: raw[0..<r])
                sha.update(chunk)
                try file.write(chunk)
                offset += Int64(r)
                if r < raw.count { break }
            }
        }
        guard offset == size else { throw MultipartUploadError.fileChanged(item: 0, reason: "\(source) changed size while being copied") }
        let st = try file.sync()
        file.keep()
        let temporary = file.path
        return StagedCopy(path: temporary, size: size, sha256: sha.finalize().hexString, mtimeNs: st.mtimeNs, linked: false)
    }
}
