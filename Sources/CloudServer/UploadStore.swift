import CloudCrypto
import CloudProtocol
import Foundation

/// Uploaded parts on disk (one file per upload, `<dir>/parts/<fileId>`, each part at its offset:
/// `UploadPartsFile`), sent files (`<dir>/files/<id>`: that file renamed there by `sendMedia`, no
/// second copy), plain uploads (`<dir>/plain/<name>`), per-part receipt counts, each upload's
/// running SHA-256 (`UploadHasher`) and the random-id → message map that makes `sendMedia`
/// idempotent. Nothing big is held in memory (a part only while its request is read).
final class UploadStore: Sendable {
    struct Entry: Sendable {
        var partSizes: [Int: Int] = [:]
        var receipts: [Int: Int] = [:]
        var totalParts: Int?
        var big: Bool?
        var forgotten = false
    }

    private struct State {
        var entries: [Int64: Entry] = [:]
        var sent: [Int64: (peerId: Int64, messageId: Int32)] = [:]
        var sending: Set<Int64> = []
        var plain: [String: PlainUploadInfo] = [:]
        var hashers: [Int64: UploadHasher] = [:]
        var files: [Int64: UploadPartsFile] = [:]
        var nextGeneration = 0
    }

    let directory: URL
    private let state = Locked(State())

    init(directory: String) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true)
        for sub in ["parts", "files", "plain"] {
            try FileManager.default.createDirectory(at: self.directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
    }

    func partsPath(_ fileId: Int64) -> String { directory.appendingPathComponent("parts/\(fileId)").path }

    /// The file the parts of `fileId` are written to (a new one after a send or forget).
    func partsFile(_ fileId: Int64) -> UploadPartsFile {
        state.withLock { s in
            if let f = s.files[fileId], !f.isClosed { return f }
            let f = UploadPartsFile(path: partsPath(fileId))
            s.files[fileId] = f
            return f
        }
    }

    /// Refuses a part that does not fit the parts stored before it (mode, `totalParts`).
    func check(fileId: Int64, totalParts: Int?, big: Bool) throws {
        try state.withLock { s in try Self.check(s.entries[fileId], totalParts: totalParts, big: big) }
    }

    private static func check(_ entry: Entry?, totalParts: Int?, big: Bool) throws {
        guard let e = entry, !e.partSizes.isEmpty else { return }
        if let b = e.big, b != big { throw CloudError(.filePartsInvalid, message: "mixed small and big parts") }
        if let t = totalParts, let old = e.totalParts, old != t { throw CloudError(.filePartsInvalid, message: "totalParts changed") }
    }

    /// A part was written to `file`: it is stored now (replacing an earlier copy). Throws (and
    /// drops the part, whose earlier copy was overwritten) if it no longer fits the upload.
    /// Records a stored part; returns the upload's hasher and the part's generation, for the
    /// caller to `offer` the part's bytes to (the hasher's worker is not started for it).
    @discardableResult
    func record(fileId: Int64, part: Int, size: Int, totalParts: Int?, big: Bool, file: UploadPartsFile) throws -> (UploadHasher, Int) {
        try state.withLock { s in
            guard s.files[fileId] === file else {
                // Sent or forgotten while the part was written: its bytes went with the old file.
                throw CloudError(.internalError, message: "the upload changed while the part was stored; send it again")
            }
            // Taken out of the map while it changes, so its dictionaries are changed in place
            // instead of copied (a copy per part made a big upload's bookkeeping quadratic).
            var e = Entry()
            var existed = false
            if let stored = s.entries.removeValue(forKey: fileId) {
                e = stored
                existed = true
            }
            do {
                try Self.check(e, totalParts: totalParts, big: big)
            } catch {
                if e.partSizes.removeValue(forKey: part) != nil { s.hashers[fileId]?.stored(part: part, generation: nil) }
                if existed { s.entries[fileId] = e }
                throw error
            }
            e.big = big
            e.totalParts = totalParts ?? e.totalParts
            e.partSizes[part] = size
            e.receipts[part, default: 0] += 1
            e.forgotten = false
            s.entries[fileId] = e
            s.nextGeneration += 1
            let hasher = s.hashers[fileId] ?? UploadHasher(file: file)
            s.hashers[fileId] = hasher
            hasher.stored(part: part, generation: s.nextGeneration, startWorker: false)
            return (hasher, s.nextGeneration)
        }
    }

    /// The running SHA-256 of an upload with stored parts.
    func hasher(_ fileId: Int64) -> UploadHasher? { state.withLock { $0.hashers[fileId] } }

    func entry(_ fileId: Int64) -> Entry? { state.withLock { $0.entries[fileId] } }

    /// Waits until parts `0..<count` of `fileId` are all stored, or `limit` has passed (for a
    /// pipelined `sendMedia`, sent while its parts were still on their way).
    func waitForParts(_ fileId: Int64, count: Int, upTo limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let stored = state.withLock { s in s.entries[fileId].map { e in (0..<count).allSatisfy { e.partSizes[$0] != nil } } ?? false }
            if stored { return }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    func info(_ fileId: Int64) -> UploadInfo? {
        guard let e = entry(fileId) else { return nil }
        return UploadInfo(
            fileId: fileId, partReceipts: Dictionary(uniqueKeysWithValues: e.receipts.map { (String($0.key), $0.value) }),
            storedParts: e.partSizes.count, totalParts: e.totalParts,
            bytes: Int64(e.partSizes.values.reduce(0, +)), forgotten: e.forgotten)
    }

    /// Drops the stored parts (receipts stay, `forgotten` set).
    func forget(_ fileId: Int64) {
        state.withLock { s in
            var e = s.entries[fileId] ?? Entry()
            e.partSizes = [:]
            e.forgotten = true
            s.entries[fileId] = e
            s.hashers.removeValue(forKey: fileId)?.cancel()
            s.files.removeValue(forKey: fileId)?.discard()
        }
    }

    /// Parts consumed by a sent message (their file already renamed into `files/`), receipts kept.
    func consumed(_ fileId: Int64) {
        state.withLock { s in
            s.entries[fileId]?.partSizes = [:]
            s.hashers.removeValue(forKey: fileId)?.cancel()
            s.files.removeValue(forKey: fileId)?.discard()
        }
    }

    // MARK: Idempotent send

    /// The message already created for `randomId`, waiting if a send with it is in flight;
    /// otherwise claims the random id (the caller must `finishSend` or `abandonSend`).
    func claim(randomId: Int64) async -> (peerId: Int64, messageId: Int32)? {
        while true {
            let r: (done: (Int64, Int32)?, claimed: Bool) = state.withLock { s in
                if let m = s.sent[randomId] { return (m, false) }
                if s.sending.contains(randomId) { return (nil, false) }
                s.sending.insert(randomId)
                return (nil, true)
            }
            if let d = r.done { return d }
            if r.claimed { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func finishSend(randomId: Int64, peerId: Int64, messageId: Int32) {
        state.withLock { s in
            s.sent[randomId] = (peerId, messageId)
            s.sending.remove(randomId)
        }
    }

    func abandonSend(randomId: Int64) { _ = state.withLock { $0.sending.remove(randomId) } }

    // MARK: Plain uploads

    func recordPlain(_ info: PlainUploadInfo) { state.withLock { $0.plain[info.name] = info } }
    func plainInfo(_ name: String) -> PlainUploadInfo? { state.withLock { $0.plain[name] } }
}
