import CloudCrypto
import CloudProtocol
import Foundation

/// Uploaded parts on disk (`<dir>/parts/<fileId>/<part>`), sent files (`<dir>/files/<id>/`:
/// the parts directory moved there by `sendMedia`, no second copy), plain uploads
/// (`<dir>/plain/<name>`), per-part receipt counts, each upload's running SHA-256
/// (`UploadHasher`) and the random-id → message map that makes `sendMedia` idempotent.
/// Nothing big is held in memory.
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

    func partsDirectory(_ fileId: Int64) -> URL { directory.appendingPathComponent("parts/\(fileId)", isDirectory: true) }
    func partURL(_ fileId: Int64, _ part: Int) -> URL { partsDirectory(fileId).appendingPathComponent("\(part)") }

    func record(fileId: Int64, part: Int, size: Int, totalParts: Int?, big: Bool) throws {
        try state.withLock { s in
            var e = s.entries[fileId] ?? Entry()
            if let b = e.big, b != big, !e.partSizes.isEmpty { throw CloudError(.filePartsInvalid, message: "mixed small and big parts") }
            if let t = totalParts, let old = e.totalParts, old != t, !e.partSizes.isEmpty {
                throw CloudError(.filePartsInvalid, message: "totalParts changed")
            }
            e.big = big
            e.totalParts = totalParts ?? e.totalParts
            e.partSizes[part] = size
            e.receipts[part, default: 0] += 1
            e.forgotten = false
            s.entries[fileId] = e
            s.nextGeneration += 1
            let hasher = s.hashers[fileId] ?? UploadHasher(directory: partsDirectory(fileId).path)
            s.hashers[fileId] = hasher
            hasher.stored(part: part, generation: s.nextGeneration)
        }
    }

    /// The running SHA-256 of an upload with stored parts.
    func hasher(_ fileId: Int64) -> UploadHasher? { state.withLock { $0.hashers[fileId] } }

    func entry(_ fileId: Int64) -> Entry? { state.withLock { $0.entries[fileId] } }

    func info(_ fileId: Int64) -> UploadInfo? {
        guard let e = entry(fileId) else { return nil }
        return UploadInfo(fileId: fileId, partReceipts: Dictionary(uniqueKeysWithValues: e.receipts.map { (String($0.key), $0.value) }),
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
        }
        try? FileManager.default.removeItem(at: partsDirectory(fileId))
    }

    /// Parts consumed by a sent message (their directory already moved to `files/`, or
    /// removed here), receipts kept.
    func consumed(_ fileId: Int64) {
        state.withLock { s in
            s.entries[fileId]?.partSizes = [:]
            s.hashers.removeValue(forKey: fileId)?.cancel()
        }
        try? FileManager.default.removeItem(at: partsDirectory(fileId))
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
