import CloudCrypto
import ConfinedFiles
import Foundation
import MediaBox
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// The shared media tier of a cluster: complete, verified resources in an S3-compatible bucket,
/// indexed in the cluster's tier store (a Postbox: PostgreSQL for a fleet, SQLite on one host),
/// so that a resource one host downloaded from the cloud is read from the bucket by the others.
///
/// Object keys are `<prefix>media/<64 hex digits>`, the SHA-256 of a domain tag and the resource
/// id. A resource id carries no file reference, access hash or key (`telegram-cloud-document-2-…`),
/// and the digest does not even show it; objects carry no metadata. Only resources fetched from
/// the cloud with a file reference are shared (``isShareable(_:)``); secret-chat files and plain
/// URLs never are.
public struct SharedMediaTier: Sendable {
    public let client: S3Client
    /// The tier's index (table `sharedMediaTier`).
    public let store: Postbox
    /// Prefix of every object of the tier (e.g. `jobrun/media/`).
    public let objectPrefix: String
    /// Written into the index as the publisher of an object.
    public let host: String
    /// Where objects are verified before a byte reaches MediaBox, and multipart journals live:
    /// opened for each use, so a folder removed meanwhile (a temp sweep) is made again.
    public let scratch: @Sendable () throws -> ConfinedDirectory
    /// Bytes per ranged GET, and the part size of multipart publishes.
    public var partSize: Int64

    /// A tier whose scratch folder `scratch` opens beneath the data root's descriptor.
    public init(
        client: S3Client, store: Postbox, prefix: String, host: String,
        scratch: @escaping @Sendable () throws -> ConfinedDirectory, partSize: Int64 = S3FileUpload.defaultPartSize
    ) {
        self.client = client
        self.store = store
        self.objectPrefix = prefix + "media/"
        self.host = host
        self.scratch = scratch
        self.partSize = max(S3FileUpload.partSizeRange.lowerBound, partSize)
    }

    /// A tier whose scratch folder is `scratchDirectory`, a place the caller chose outside any
    /// data root (a benchmark's or a test's working folder), created 0700 when missing.
    public init(client: S3Client, store: Postbox, prefix: String, host: String, scratchDirectory: String, partSize: Int64 = S3FileUpload.defaultPartSize) {
        self.init(
            client: client, store: store, prefix: prefix, host: host,
            scratch: { try ConfinedDirectory.open(path: scratchDirectory, create: true) }, partSize: partSize)
    }

    /// The scratch folder, held open.
    private func scratchFolder() throws -> ConfinedDirectory {
        do { return try scratch() } catch { throw SharedMediaTierReadError.local("cannot open the scratch folder: \(error)") }
    }

    /// Only resources whose bytes are the cloud's own file for every account that can see it:
    /// never a secret-chat file (its plaintext is end-to-end content of one chat; a bucket is
    /// readable by every host and operator of the fleet) and never a plain URL (any server,
    /// possibly private to one account).
    public static func isShareable(_ resource: any MediaResource) -> Bool {
        guard let cloud = resource as? any CloudFetchableResource, case .cloud = cloud.fetchSource else { return false }
        return true
    }

    /// The object key of a resource id.
    public func objectKey(_ id: MediaResourceId) -> String {
        objectPrefix + CloudCrypto.SHA256.hash(Data("jobrun-shared-media\u{0}\(id.stringRepresentation)".utf8)).hexString
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    // MARK: reading

    /// The index entry of `id`, its last use moved to now (so cleanup's grace protects the read
    /// that follows); nil when the tier does not hold it.
    func claim(_ id: MediaResourceId) async throws -> SharedMediaTierEntry? {
        let now = Self.now()
        return try await store.transaction { tx in
            let table = try tx.sharedMediaTier
            guard var entry = try table.get(id.stringRepresentation) else { return nil }
            if entry.lastUsedAt < now {
                entry.lastUsedAt = now
                try table.set(entry)
            }
            return entry
        }
    }

    /// Drops the index entry of an object that is missing or does not match it, unless it was
    /// replaced meanwhile (another host published the resource again).
    func forget(_ entry: SharedMediaTierEntry) async throws {
        try await store.transaction { tx in
            let table = try tx.sharedMediaTier
            if let current = try table.get(entry.resourceId), current.sha256 == entry.sha256, current.createdAt == entry.createdAt {
                try table.remove(entry.resourceId)
            }
        }
    }

    /// Downloads the object of `entry` by ranged GETs into a new unlinked scratch file and checks
    /// its size and SHA-256 against the entry. Returns the open descriptor (the caller closes it),
    /// or throws ``SharedMediaTierReadError``.
    func download(_ entry: SharedMediaTierEntry) async throws -> Int32 {
        let fd = try await UploadIO.run { () throws -> Int32 in
            let folder = try self.scratchFolder()
            do throws(ConfinedFileError) {
                if let unnamed = try folder.createUnnamedFile() { return unnamed }
                // A file system without unnamed files: a named one, removed at once.
                let name = ".tier-read-" + SecureRandom.bytes(8).hexString
                let named = try folder.openFile(name, .createNew)
                _ = try? folder.removeFile(name)
                return named
            } catch {
                throw SharedMediaTierReadError.local("cannot create a scratch file: \(error)")
            }
        }
        var kept = false
        defer { if !kept { close(fd) } }
        var offset: Int64 = 0
        while offset < entry.size {
            let length = min(partSize, entry.size - offset)
            do {
                _ = try await client.getObject(
                    entry.objectKey, range: HTTPRange(first: offset, last: offset + length - 1),
                    to: .fileDescriptor(fd, offset: offset, maxLength: length))
            } catch let error as S3Error where error.code == "NoSuchKey" || error.code == "InvalidRange" {
                throw SharedMediaTierReadError.mismatch("the object is missing or shorter than indexed (\(error.code ?? ""))")
            }
            offset += length
        }
        let (size, sha) = try await UploadIO.run { () throws -> (Int64, String) in
            let st = try UploadIO.stat(fd: fd)
            return (st.size, try UploadIO.sha256(fd: fd, length: st.size))
        }
        guard size == entry.size else { throw SharedMediaTierReadError.mismatch("the object gave \(size) bytes, the index says \(entry.size)") }
        guard sha == entry.sha256 else { throw SharedMediaTierReadError.mismatch("the object's SHA-256 differs from the one recorded at publish") }
        kept = true
        return fd
    }

    // MARK: publishing

    /// Uploads the complete file of `id`, read through the open `file` MediaBox handed over (one
    /// PUT below the multipart threshold, a resumable multipart upload above it), and then
    /// indexes it. No name is opened again, so a link planted at the cache's name changes
    /// nothing. Returns the entry written.
    @discardableResult
    public func publish(_ id: MediaResourceId, file: MediaResourceReader) async throws -> SharedMediaTierEntry {
        let key = objectKey(id)
        let journal = S3UploadJournal.Location(".tier-publish-" + String(key.suffix(32)) + ".journal", in: try scratchFolder())
        let upload = S3FileUpload(client: client, partSize: partSize, multipartThreshold: partSize * 2)
        let result = try await upload.upload(descriptor: file.descriptor, to: key, journal: journal)
        guard result.size == file.size else {
            throw SharedMediaTierReadError.local("the file changed while it was published (\(result.size) bytes, expected \(file.size))")
        }
        let now = Self.now()
        let entry = SharedMediaTierEntry(
            resourceId: id.stringRepresentation, objectKey: key, size: result.size, sha256: result.sha256.hexString, writerHost: host,
            createdAt: now, lastUsedAt: now)
        try await store.transaction { try $0.sharedMediaTier.set(entry) }
        return entry
    }
}

/// Why an object of the tier was not used.
public enum SharedMediaTierReadError: Error, CustomStringConvertible {
    /// The object is missing or its bytes are not the ones indexed: the entry is dropped.
    case mismatch(String)
    /// A problem on this host (scratch file).
    case local(String)

    public var description: String {
        switch self {
        case .mismatch(let why), .local(let why): return why
        }
    }
}
