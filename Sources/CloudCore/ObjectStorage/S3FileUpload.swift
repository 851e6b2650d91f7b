import CloudCrypto
import ConfinedFiles
import Foundation

/// Streams a local file into an S3 object: one PUT below ``multipartThreshold``, a multipart
/// upload above it, resumable from its acknowledged parts through an ``S3UploadJournal``.
///
/// Memory stays flat in the file's size: a part's bytes are hashed in 1 MiB blocks and sent
/// from the file (`pread` while libcurl sends), never loaded whole. How many parts are in flight
/// follows the measured throughput (`AdaptiveConcurrency`, from ``initialParts`` up to
/// ``concurrentParts``): a far service needs more than a near one. Every part carries its SHA-256, so the service
/// verifies what it stores, and as its S3 checksum, so the service keeps it with the object
/// (a single PUT's SHA-256, or a multipart upload's checksum of its parts' SHA-256s).
public struct S3FileUpload: Sendable {
    public let client: S3Client
    /// The part sizes S3 accepts: 5 MiB … 5 GiB.
    public static let partSizeRange: ClosedRange<Int64> = (5 << 20)...(5 << 30)
    /// The part size when none is configured: 8 MiB, as `aws s3 cp` uses.
    public static let defaultPartSize: Int64 = 8 << 20
    /// Size of each part but the last (within ``partSizeRange``).
    public var partSize: Int64 = defaultPartSize
    /// Files this large or larger go multipart.
    public var multipartThreshold: Int64 = 16 << 20
    /// Most parts sent at the same time; how many are follows the measured throughput.
    public var concurrentParts = 16
    /// Parts in flight before anything was measured.
    public var initialParts = 4

    public init(client: S3Client, partSize: Int64 = defaultPartSize, multipartThreshold: Int64 = 16 << 20, concurrentParts: Int = 16) {
        self.client = client
        self.partSize = min(max(partSize, Self.partSizeRange.lowerBound), Self.partSizeRange.upperBound)
        self.multipartThreshold = max(1, multipartThreshold)
        self.concurrentParts = max(1, concurrentParts)
        self.initialParts = min(4, self.concurrentParts)
    }

    /// What an upload did.
    public struct Result: Sendable, Equatable {
        public var key: String
        public var size: Int64
        /// SHA-256 of the whole file.
        public var sha256: Data
        /// Requests that carried file bytes in this run (parts, or 1 for a single PUT).
        public var partsSent: Int
        /// Parts a previous run had sent that were kept.
        public var partsReused: Int
        /// The parts in flight the upload settled on (nil for a single `PUT`).
        public var partsInFlight: AdaptiveConcurrency.Snapshot?
    }

    /// Uploads the file at `path` to `key`, with the journal at `journalPath`, both places the
    /// caller chose outside any data root (a tool's arguments).
    public func upload(
        file path: String, to key: String, journalPath: String,
        onPartSent: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Result {
        let journal: S3UploadJournal.Location
        do { journal = try S3UploadJournal.Location(path: journalPath) } catch {
            throw local(key, "cannot open the folder of the upload journal \(journalPath): \(error)")
        }
        return try await upload(file: path, to: key, journal: journal, onPartSent: onPartSent)
    }

    /// Uploads the file at `path` to `key`; see ``upload(descriptor:to:journal:onPartSent:)``.
    /// The file is opened once, without blocking on a FIFO, and must be a regular file.
    public func upload(
        file path: String, to key: String, journal: S3UploadJournal.Location,
        onPartSent: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Result {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw local(key, "cannot open \(path): \(UploadIO.describe(errno))") }
        defer { close(fd) }
        return try await upload(descriptor: fd, to: key, journal: journal, onPartSent: onPartSent)
    }

    /// Uploads the open regular file `fd` (read with `pread`; the caller closes it) to `key`.
    /// `journal` records a multipart upload's progress (removed when it completes);
    /// `onPartSent` is told each part number the service acknowledged.
    public func upload(
        descriptor fd: Int32, to key: String, journal: S3UploadJournal.Location,
        onPartSent: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Result {
        let info = try UploadIO.stat(fd: fd)
        guard info.isRegular else { throw local(key, "the file to upload is not a regular file") }
        let size = info.size
        if size < multipartThreshold {
            let digest = try await UploadIO.run { try Data(hexString: UploadIO.sha256(fd: fd, length: size))! }
            try await client.putObject(key, body: .fileRegion(fd: fd, offset: 0, length: size), sha256: digest)
            onPartSent(1)
            return Result(key: key, size: size, sha256: digest, partsSent: 1, partsReused: 0, partsInFlight: nil)
        }
        return try await uploadMultipart(fd: fd, size: size, key: key, journalPath: journal, onPartSent: onPartSent)
    }

    private func uploadMultipart(
        fd: Int32, size: Int64, key: String, journalPath: S3UploadJournal.Location, onPartSent: @escaping @Sendable (Int) -> Void
    ) async throws -> Result {
        // Resume when the journal describes this same upload and the service still has it.
        var journal: S3UploadJournal
        var listed: [Int: S3UploadedPart] = [:]
        if let previous = S3UploadJournal.load(journalPath), previous.key == key, previous.fileSize == size,
            previous.partSize == partSize,
            let parts = try await existingParts(key: key, uploadId: previous.uploadId)
        {
            journal = previous
            for p in parts { listed[p.partNumber] = p }
        } else {
            let uploadId = try await client.createMultipartUpload(key, sha256Checksums: true)
            journal = S3UploadJournal(key: key, uploadId: uploadId, fileSize: size, partSize: partSize, parts: [:], sha256Checksums: true)
            try await saveJournal(journal, journalPath, key)
        }

        let partCount = Int((size + partSize - 1) / partSize)
        let whole = RunningSHA256()
        var completed: [S3CompletedPart] = []
        var sent = 0
        var reused = 0
        let client = self.client
        let uploadId = journal.uploadId
        let checksums = journal.sha256Checksums ?? false
        let window = AdaptiveConcurrency(initial: initialParts, ceiling: concurrentParts)
        // Each sent part comes back as its journal record and its entry in the completion.
        try await withThrowingTaskGroup(of: (S3UploadJournal.Part, S3CompletedPart).self) { group in
            var inFlight = 0
            func record(_ part: S3UploadJournal.Part, _ done: S3CompletedPart, windowFull: Bool) async throws {
                window.completed(bytes: part.size, windowFull: windowFull)
                journal.parts[done.partNumber] = part
                try await saveJournal(journal, journalPath, key)
                completed.append(done)
                sent += 1
                onPartSent(done.partNumber)
            }
            for number in 1...partCount {
                let offset = Int64(number - 1) * partSize
                let length = min(partSize, size - offset)
                let digest = try await UploadIO.run { try whole.hashPart(fd: fd, offset: offset, length: length) }
                let hex = digest.hexString
                let checksum = checksums ? digest : nil
                if let kept = journal.parts[number], kept.sha256 == hex, kept.size == length,
                    let there = listed[number], there.size == length
                {
                    completed.append(S3CompletedPart(partNumber: number, eTag: there.eTag, sha256: checksum))
                    reused += 1
                    continue
                }
                while inFlight >= window.limit, let (part, done) = try await group.next() {
                    inFlight -= 1
                    try await record(part, done, windowFull: true)
                }
                group.addTask {
                    let eTag = try await client.uploadPart(
                        key, uploadId: uploadId, partNumber: number,
                        body: .fileRegion(fd: fd, offset: offset, length: length), sha256: digest, checksum: checksums)
                    return (S3UploadJournal.Part(size: length, sha256: hex, eTag: eTag), S3CompletedPart(partNumber: number, eTag: eTag, sha256: checksum))
                }
                inFlight += 1
            }
            while let (part, done) = try await group.next() { try await record(part, done, windowFull: false) }
        }
        try await client.completeMultipartUpload(key, uploadId: uploadId, parts: completed)
        S3UploadJournal.remove(journalPath)
        return Result(
            key: key, size: size, sha256: whole.finish(), partsSent: sent, partsReused: reused, partsInFlight: window.snapshot)
    }

    /// The parts the service holds for `uploadId`, or `nil` when the upload is gone.
    private func existingParts(key: String, uploadId: String) async throws -> [S3UploadedPart]? {
        do {
            return try await client.listParts(key, uploadId: uploadId)
        } catch let error as S3Error where error.code == "NoSuchUpload" || error.status == 404 {
            return nil
        }
    }

    /// Writes the journal (it ends with an `fsync`) on the upload's I/O queue, not on a thread
    /// of the cooperative pool.
    private func saveJournal(_ journal: S3UploadJournal, _ location: S3UploadJournal.Location, _ key: String) async throws {
        do {
            try await UploadIO.run { try journal.save(location) }
        } catch {
            throw local(key, "cannot write the upload journal \(location.path): \(error)")
        }
    }

    private func local(_ key: String, _ why: String) -> S3Error {
        S3Error(bucket: client.bucket.name, operation: "Upload", key: key, reason: .local(why))
    }
}

/// The whole file's SHA-256, fed part by part in order while each part's own digest is taken.
///
/// `@unchecked Sendable`: used by one upload at a time, strictly sequentially (each part is
/// hashed before the next one starts).
private final class RunningSHA256: @unchecked Sendable {
    private var hasher: CloudCrypto.SHA256? = CloudCrypto.SHA256()

    /// Reads `length` bytes of `fd` at `offset` in 1 MiB blocks; returns their SHA-256 and
    /// feeds them to the whole-file hash.
    func hashPart(fd: Int32, offset: Int64, length: Int64) throws -> Data {
        var part = CloudCrypto.SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(buffer.count), length - done))
            let n = try buffer.withUnsafeMutableBytes { raw -> Int in
                let r = try UploadIO.readFully(
                    fd: fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<want]), offset: offset + done)
                let bytes = UnsafeRawBufferPointer(rebasing: raw[0..<r])
                part.update(bytes)
                hasher!.update(bytes)
                return r
            }
            guard n == want else { throw POSIXFailure(EIO) }
            done += Int64(n)
        }
        return part.finalize()
    }

    func finish() -> Data {
        let h = hasher.take()!
        return h.finalize()
    }
}
