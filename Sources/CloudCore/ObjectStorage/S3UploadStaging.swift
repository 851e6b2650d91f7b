import CloudCrypto
import ConfinedFiles
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// Upload staging in an S3 bucket: `enqueue-upload` streams the file into the bucket with
/// ``S3FileUpload`` (multipart above its threshold, resumable through a journal in the uploads
/// directory), and `upload-queue` on any host fetches it back by ranged GETs before sending.
///
/// Object keys are `<prefix><32 random hex digits>`: the prefix names the account, the rest is
/// random — never the file's name or path.
public struct S3UploadStaging: UploadStageSource {
    public let upload: S3FileUpload
    /// Prefix of every object key (e.g. `jobrun/uploads/account-1/`).
    public let prefix: String
    /// Bytes per ranged GET when fetching (memory stays flat: each range is written to the file).
    public var fetchChunk: Int64

    public init(upload: S3FileUpload, prefix: String, fetchChunk: Int64 = S3FileUpload.defaultPartSize) {
        self.upload = upload
        self.prefix = prefix
        self.fetchChunk = max(1, fetchChunk)
    }

    var client: S3Client { upload.client }
    public func holds(_ item: UploadItem) -> Bool { item.staging?.bucketObject != nil }

    public func store(file fd: Int32, path: String, scratch: ConfinedDirectory) async throws -> StagedObject {
        // A repeated enqueue of the same unchanged file resumes the multipart upload its journal
        // describes (the journal is named by a digest of the file's identity, not its name).
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw MultipartUploadError.fileUnreadable(path: path, reason: UploadIO.describe(errno)) }
        let identity = "\(path)\u{0}\(st.st_dev)\u{0}\(st.st_ino)\u{0}\(st.st_size)\u{0}\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
        let journalName = ".s3-enqueue-" + CloudCrypto.SHA256.hash(Data(identity.utf8)).hexString.prefix(32) + ".journal"
        let journal = S3UploadJournal.Location(String(journalName), in: scratch)
        let key: String
        if let previous = S3UploadJournal.load(journal), previous.key.hasPrefix(prefix) {
            key = previous.key
        } else {
            key = prefix + SecureRandom.bytes(16).hexString
        }
        let result = try await upload.upload(descriptor: fd, to: key, journal: journal)
        return StagedObject(
            size: result.size, sha256: result.sha256.hexString,
            location: .bucket(S3StagedObject(key: key, bucket: client.bucket.name)))
    }

    public func fetch(_ item: UploadItem, to name: String, in directory: ConfinedDirectory) async throws {
        let path = directory.display(name)
        guard let key = item.staging?.bucketObject?.key else { throw MultipartUploadError.stagedFileMissing(item: item.id, path: path) }
        let place = "the object \(key) in bucket \(client.bucket.name)"
        let info: S3ObjectInfo?
        do { info = try await client.headObject(key) } catch { throw Self.mapped(error, item: item.id, place: place) }
        guard let info else { throw MultipartUploadError.stagedFileMissing(item: item.id, path: "s3://\(client.bucket.name)/\(key)") }
        guard info.size == item.stagedByteCount else {
            throw MultipartUploadError.fileChanged(item: item.id, reason: "\(place) is \(info.size) bytes, the item recorded \(item.stagedByteCount)")
        }
        let temporary = name + ".fetching"
        let fd: Int32
        do { fd = try directory.openFile(temporary, .rewrite) } catch {
            throw MultipartUploadError.staging(path: directory.display(temporary), reason: "cannot create: \(error.description)")
        }
        var kept = false
        defer {
            close(fd)
            if !kept { _ = try? directory.removeFile(temporary) }
        }
        var offset: Int64 = 0
        while offset < item.stagedByteCount {
            let length = min(fetchChunk, item.stagedByteCount - offset)
            do {
                _ = try await client.getObject(
                    key, range: HTTPRange(first: offset, last: offset + length - 1),
                    to: .fileDescriptor(fd, offset: offset, maxLength: length))
            } catch {
                throw Self.mapped(error, item: item.id, place: place)
            }
            offset += length
        }
        let (size, sha) = try await UploadIO.run { () throws -> (Int64, String) in
            let st = try UploadIO.stat(fd: fd)
            return (st.size, try UploadIO.sha256(fd: fd, length: st.size))
        }
        guard size == item.stagedByteCount else {
            throw MultipartUploadError.fileChanged(item: item.id, reason: "\(place) gave \(size) bytes, the item recorded \(item.stagedByteCount)")
        }
        guard sha == item.stagedSHA256 else {
            throw MultipartUploadError.fileChanged(item: item.id, reason: "\(place) does not match the item's SHA-256")
        }
        // The copy is made durable under its final name off the cooperative pool.
        try await UploadIO.run {
            guard fsync(fd) == 0 else {
                throw MultipartUploadError.staging(path: path, reason: "cannot keep the fetched copy: \(UploadIO.describe(errno))")
            }
            do throws(ConfinedFileError) { try directory.rename(temporary, to: name) } catch {
                throw MultipartUploadError.staging(path: path, reason: "cannot keep the fetched copy: \(error.description)")
            }
        }
        kept = true
    }

    public func remove(_ item: UploadItem) async throws {
        guard let key = item.staging?.bucketObject?.key else { return }
        try await client.deleteObject(key)
    }

    public func sweep(keeping items: [UploadItem], olderThan cutoff: Date) async throws {
        let referenced = Set(items.compactMap { $0.staging?.bucketObject?.key })
        _ = try await S3StagingSweep(client: client, prefix: prefix).run(olderThan: cutoff, referenced: referenced)
    }

    /// An unreachable bucket is an outage (the item stays queued); refused credentials or a
    /// missing bucket are this host's configuration (the item stays queued, the run stops); any
    /// other refusal is the item's problem.
    static func mapped(_ error: any Error, item: Int64, place: String) -> any Error {
        guard let s3 = error as? S3Error else { return error }
        if s3.isRetryable { return MultipartUploadError.cloudUnavailable(item: item, reason: "cannot fetch \(place): \(s3)") }
        if s3.isConfigurationError { return MultipartUploadError.misconfigured(item: item, reason: "cannot fetch \(place): \(s3)") }
        if s3.code == "NoSuchKey" { return MultipartUploadError.stagedFileMissing(item: item, path: place) }
        return MultipartUploadError.transient(item: item, reason: "cannot fetch \(place): \(s3)")
    }
}
