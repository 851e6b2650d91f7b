import CloudCrypto
import CloudProtocol
import Foundation

/// Produces the served bytes of any file range: generated, secret container (IGE, cached) or
/// disk. Also hashes (CDN 128 KiB blocks, whole-file SHA-256), cached.
final class FileBytes: Sendable {
    let generator: ByteGenerator
    private let containers = Locked<[Int64: Data]>([:])
    private let blockHashes = Locked<[Int64: [Int: Data]]>([:])
    private let fileHashes = Locked<[Int64: (served: String, plain: String?)]>([:])
    /// Part hashes (`X-Part-SHA256`) by file/offset/length/encryption: every file is immutable,
    /// so a part's hash is computed once (a repeated benchmark pays no hashing).
    private let partHashes = Locked<[PartKey: String]>([:])

    struct PartKey: Hashable {
        let fileId: Int64
        let offset: Int64
        let count: Int
        let encrypted: Bool
    }

    /// The cached part hash, or `compute()` stored (the cache is dropped past 1M entries).
    func partHash(_ key: PartKey, compute: () -> String) -> String {
        if let h = partHashes.withLock({ $0[key] }) { return h }
        let h = compute()
        partHashes.withLock { c in
            if c.count > 1_000_000 { c.removeAll(keepingCapacity: true) }
            c[key] = h
        }
        return h
    }

    init(seed: UInt64) { generator = ByteGenerator(seed: seed) }

    /// How often each video's header was revised (0: never).
    private let headerRevisions = Locked<[Int64: Int]>([:])

    func headerRevision(_ fileId: Int64) -> Int { headerRevisions.withLock { $0[fileId] ?? 0 } }

    /// Gives a video a new header (same size, other bytes) and forgets every hash of its old one.
    func reviseHeader(_ file: ServerFile) -> Int {
        let revision = headerRevisions.withLock { r -> Int in
            r[file.id, default: 0] += 1
            return r[file.id]!
        }
        partHashes.withLock { c in c = c.filter { $0.key.fileId != file.id } }
        blockHashes.withLock { $0[file.id] = nil }
        fileHashes.withLock { $0[file.id] = nil }
        return revision
    }

    /// Photos drawn so far (a few hundred at most: any is drawn again identically).
    private let photos = Locked<[Int64: PhotoJPEG?]>([:])

    /// The JPEG a photo file serves, drawn once from the dataset seed (`--seed`) and the file id.
    func photo(_ file: ServerFile, width: Int, height: Int) -> PhotoJPEG? {
        if let cached = photos.withLock({ $0[file.id] }) { return cached }
        let jpeg = PhotoJPEG.make(width: width, height: height, generator: generator, fileId: file.id, size: file.size)
        photos.withLock { c in
            if c.count >= 512 { c.removeAll(keepingCapacity: true) }
            c[file.id] = jpeg
        }
        return jpeg
    }

    // MARK: part hashes kept with the files

    /// Files whose part hashes are still being computed in the background.
    private let hashingBacklog = Locked<Int>(0)
    /// Set by `stopPartHashes()`: the background pass ends before its next part.
    private let hashingStopped = Locked<Bool>(false)
    private let hashingQueue = DispatchQueue(label: "cloudd.part-hashes", qos: .utility)

    /// Files not yet through `computePartHashes` (0 once every file has its part hashes).
    var partHashesPending: Int { hashingBacklog.withLock { $0 } }

    /// The parts a client is told to use for a file (`FilePartRules.preferredPartSize`), whose
    /// hashes a server keeps with the file: one part for a file of at most 1 MiB (whatever power
    /// of two the client picks to cover it, the part holds the same bytes), 128 KiB parts below
    /// 10 MiB, 1 MiB parts above. Below 10 MiB the 1 MiB parts too: a client on a fast link
    /// takes whole 1 MiB blocks of such a file (a video's prefix) in one part.
    static func standardParts(size: Int64) -> [(offset: Int64, count: Int)] {
        guard size > 0 else { return [] }
        if size <= FilePartRules.maxPartSize { return [(0, Int(size))] }
        func parts(_ step: Int64) -> [(offset: Int64, count: Int)] {
            stride(from: Int64(0), to: size, by: Int(step)).map { ($0, Int(min(step, size - $0))) }
        }
        let step = FilePartRules.preferredPartSize(fileSize: size)
        return step < FilePartRules.maxPartSize ? parts(step) + parts(FilePartRules.maxPartSize) : parts(step)
    }

    /// Computes the part hashes of `files` (plain, not secret) on a background queue, one file after
    /// the other, smallest first, so answers to `upload.getFile` find them in memory instead of
    /// hashing the bytes they send (as a file server keeps its part hashes with the file). Parts
    /// already hashed by a request are skipped; a request for a part not hashed yet hashes it itself.
    func computePartHashes(_ files: [ServerFile]) {
        // CDN files are verified by block hashes; secret containers are built (and kept) only
        // when first served.
        let todo = files.filter { f in
            if case .secret = f.source { return false }
            return !f.cdn
        }.sorted { ($0.size, $0.id) < ($1.size, $1.id) }
        guard !todo.isEmpty else { return }
        hashingBacklog.withLock { $0 += todo.count }
        hashingQueue.async {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(FilePartRules.maxPartSize), alignment: 16)
            defer { buffer.deallocate() }
            for file in todo {
                for (offset, count) in Self.standardParts(size: file.size) {
                    if self.hashingStopped.withLock({ $0 }) { return }
                    let key = PartKey(fileId: file.id, offset: offset, count: count, encrypted: false)
                    if self.partHashes.withLock({ $0[key] }) != nil { continue }
                    let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                    guard (try? self.read(file, offset: offset, into: slice)) != nil else { break }
                    let h = SHA256.hash(bytes: UnsafeRawBufferPointer(slice)).hexString
                    self.partHashes.withLock { $0[key] = h }
                }
                self.hashingBacklog.withLock { $0 -= 1 }
            }
        }
    }

    /// Ends background part hashing and returns once no hashing work runs.
    func stopPartHashes() async {
        hashingStopped.withLock { $0 = true }
        // The queue is serial: once this block runs, every pass queued before it has ended.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in hashingQueue.async { done.resume() } }
    }

    /// Writes the served bytes `offset..<offset+buffer.count` of `file` into `buffer`
    /// (the caller clamps to the file size).
    func read(_ file: ServerFile, offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws {
        switch file.source {
        case .generated:
            generator.fill(buffer, fileId: file.id, offset: offset)
        case .video(let headerSize):
            VideoHeader.fill(buffer, file: file, offset: offset, headerSize: headerSize, revision: headerRevision(file.id), generator: generator)
        case let .photo(width, height):
            if let jpeg = photo(file, width: width, height: height) {
                jpeg.fill(buffer, offset: offset)
            } else {
                generator.fill(buffer, fileId: file.id, offset: offset)
            }
        case .secret:
            let c = try container(file)
            c.withUnsafeBytes { src in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[Int(offset)..<Int(offset) + buffer.count]))
            }
        case .disk(let path):
            guard let fh = FileHandle(forReadingAtPath: path) else { throw CocoaError(.fileNoSuchFile) }
            defer { try? fh.close() }
            try fh.seek(toOffset: UInt64(offset))
            var done = 0
            while done < buffer.count {
                guard let d = try fh.read(upToCount: buffer.count - done), !d.isEmpty else { throw CocoaError(.fileReadCorruptFile) }
                d.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[done..<done + d.count]).copyMemory(from: $0) }
                done += d.count
            }
        }
    }

    /// The served bytes of a range as `Data`.
    func data(_ file: ServerFile, offset: Int64, count: Int) throws -> Data {
        var d = Data(count: count)
        try d.withUnsafeMutableBytes { try read(file, offset: offset, into: $0) }
        return d
    }

    /// The plaintext bytes of a range (differs from served bytes only for secret files).
    func plaintext(_ file: ServerFile, offset: Int64, count: Int) throws -> Data {
        if case .secret = file.source {
            return generator.bytes(fileId: file.id, offset: offset, count: count)
        }
        return try data(file, offset: offset, count: count)
    }

    /// The IGE container of a secret file: generated plaintext padded with further generated
    /// bytes to a multiple of 16, encrypted once and cached.
    func container(_ file: ServerFile) throws -> Data {
        if let c = containers.withLock({ $0[file.id] }) { return c }
        guard case .secret(let key, let iv, _) = file.source else { return Data() }
        let padded = generator.bytes(fileId: file.id, offset: 0, count: Int(file.size))
        var ivCopy = iv
        let c = try AESIGE.encrypt(padded, key: key, iv: &ivCopy)
        containers.withLock { $0[file.id] = c }
        return c
    }

    /// SHA-256 of 128 KiB plaintext block `index` (CDN hashes).
    func blockHash(_ file: ServerFile, index: Int) throws -> Data {
        if let h = blockHashes.withLock({ $0[file.id]?[index] }) { return h }
        let bs = Int64(128 << 10)
        let start = Int64(index) * bs
        let n = Int(min(bs, file.size - start))
        let h = SHA256.hash(try plaintext(file, offset: start, count: max(0, n)))
        blockHashes.withLock { $0[file.id, default: [:]][index] = h }
        return h
    }

    /// Records the served-bytes SHA-256 of a file whose hash is already known (an upload hashed
    /// as its parts arrived), so `sha256(_:)` does not read it again.
    func knownSHA256(fileId: Int64, served: String) {
        fileHashes.withLock { $0[fileId] = (served, nil) }
    }

    /// Lowercase hex SHA-256 of the served bytes, and of the plaintext for secret files.
    func sha256(_ file: ServerFile) throws -> (served: String, plain: String?) {
        if let h = fileHashes.withLock({ $0[file.id] }) { return h }
        var hasher = SHA256()
        let chunk = 4 << 20
        var buf = [UInt8](repeating: 0, count: chunk)
        var off: Int64 = 0
        while off < file.size {
            let n = Int(min(Int64(chunk), file.size - off))
            try buf.withUnsafeMutableBytes { try read(file, offset: off, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<n])) }
            buf.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            off += Int64(n)
        }
        let served = hasher.finalize().hexString
        var plain: String?
        if case .secret(_, _, let plainSize) = file.source {
            plain = SHA256.hash(generator.bytes(fileId: file.id, offset: 0, count: Int(plainSize))).hexString
        }
        let r = (served, plain)
        fileHashes.withLock { $0[file.id] = r }
        return r
    }
}
