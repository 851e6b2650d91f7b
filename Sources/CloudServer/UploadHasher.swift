import CloudCrypto
import CloudProtocol
import Foundation
import NIOCore

/// The running SHA-256 of one upload, so `sendMedia` need not read the whole file: the contiguous
/// prefix of stored parts is hashed as it grows (parts arriving in order right after they are
/// stored; a part that arrived early once the gap before it is filled), each part read back once
/// from the upload's file (`UploadPartsFile`, page cache) on a dispatch queue, never on the
/// cooperative pool or an event loop. A part that is the next in order when it arrives is hashed
/// from the request's own buffers instead (`offer`), while they are in memory: no read-back, and
/// `sendMedia` finds the digest ready. Re-sending a part that was already hashed restarts from
/// part 0 (rare: a retry whose answer was lost).
final class UploadHasher: @unchecked Sendable {
    // @unchecked Sendable: the fields below are guarded by `lock`, except `sha`, only touched
    // by whoever set `busy` (one worker at a time; the lock hand-off orders the accesses).
    private static let queue = DispatchQueue(label: "cloudd.upload-hash", attributes: .concurrent)

    private typealias Waiter = (parts: Int, continuation: CheckedContinuation<String?, Never>)

    let file: UploadPartsFile
    private let lock = NSLock()
    /// Generation of each stored part (a new one every time the part is stored).
    private var stored: [Int: Int] = [:]
    /// Generations of the parts `0..<hashed.count` fed into `sha`.
    private var hashed: [Int] = []
    /// A hashed part changed (or a read failed mid-part): `sha` must restart.
    private var stale = false
    /// A part file could not be read; no hashing until a part is stored again.
    private var blocked = false
    private var busy = false
    private var cancelled = false
    /// The last finalized digest and the part generations it covers.
    private var result: (generations: [Int], hex: String)?
    private var waiters: [Waiter] = []
    private var sha = SHA256()

    init(file: UploadPartsFile) { self.file = file }

    /// A part was stored (written in full) with `generation`; `nil`: the part is gone again.
    /// With `startWorker: false` the caller follows up with `offer` (no background read-back of
    /// a part it can hash from its own buffers).
    func stored(part: Int, generation: Int?, startWorker: Bool = true) {
        lock.lock()
        stored[part] = generation
        if part < hashed.count { stale = true }
        if let r = result, part < r.generations.count { result = nil }
        blocked = false
        let start = startWorker && claimWorker()
        lock.unlock()
        if start { Self.queue.async { self.run() } }
    }

    /// The bytes of a part just stored with `generation`, still in the request's buffers: if it
    /// is the next part to hash and no worker runs, it is hashed here, without reading it back;
    /// then (either way) the worker continues with whatever is waiting.
    func offer(part: Int, generation: Int, chunks: [ByteBuffer]) {
        lock.lock()
        if !busy, !cancelled, !stale, !blocked, result == nil, hashed.count == part, stored[part] == generation {
            busy = true
            lock.unlock()
            for chunk in chunks { chunk.withUnsafeReadableBytes { sha.update($0) } }
            lock.lock()
            if !stale, stored[part] == generation, hashed.count == part {
                hashed.append(generation)
            } else {
                stale = true
            }
            busy = false
        }
        let start = claimWorker()
        lock.unlock()
        if start { Self.queue.async { self.run() } }
    }

    /// The parts are gone (forgotten or consumed): stop, answer waiters `nil`.
    func cancel() {
        lock.lock()
        cancelled = true
        let ws = waiters
        waiters = []
        lock.unlock()
        for w in ws { w.continuation.resume(returning: nil) }
    }

    /// Lowercase hex SHA-256 of parts `0..<parts` as stored now, waiting for the hashing to
    /// catch up; `nil` if a part is missing or the upload was cancelled.
    func digest(parts: Int) async -> String? {
        await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            lock.lock()
            if cancelled {
                lock.unlock()
                c.resume(returning: nil)
                return
            }
            waiters.append((parts, c))
            let start = claimWorker()
            lock.unlock()
            if start { Self.queue.async { self.run() } }
        }
    }

    // MARK: Worker

    private enum Action {
        case stop
        case reset
        case finalize(generations: [Int])
        case hash(part: Int, generation: Int)
    }

    /// Sets `busy` if no worker runs (lock held); the caller then starts `run()`.
    private func claimWorker() -> Bool {
        guard !busy, !cancelled else { return false }
        busy = true
        return true
    }

    /// Generations of parts `0..<n`, `nil` if one is missing (lock held).
    private func prefix(_ n: Int) -> [Int]? {
        var g: [Int] = []
        g.reserveCapacity(n)
        for p in 0..<n {
            guard let x = stored[p] else { return nil }
            g.append(x)
        }
        return g
    }

    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: UploadPartRules.maxPartSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            var answers: [(CheckedContinuation<String?, Never>, String?)] = []
            lock.lock()
            let action = nextAction(&answers)
            lock.unlock()
            for (c, v) in answers { c.resume(returning: v) }
            switch action {
            case .stop:
                return
            case .reset:
                sha = SHA256()
            case .finalize(let generations):
                let hex = finalizeSHA()
                lock.lock()
                result = (generations, hex)
                hashed = []
                lock.unlock()
            case .hash(let part, let generation):
                var ok = true
                do {
                    let n = try file.read(part: part, into: buffer)
                    sha.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                } catch {
                    ok = false
                }
                lock.lock()
                if ok, !stale, stored[part] == generation, hashed.count == part {
                    hashed.append(generation)
                } else {
                    stale = true
                    if !ok, stored[part] == generation { blocked = true }
                }
                lock.unlock()
            }
        }
    }

    /// What the worker does next (lock held); waiters to answer go to `answers`. Clears `busy`
    /// when it answers `.stop`.
    private func nextAction(_ answers: inout [(CheckedContinuation<String?, Never>, String?)]) -> Action {
        if cancelled {
            for w in waiters { answers.append((w.continuation, nil)) }
            waiters = []
            busy = false
            return .stop
        }
        if stale {
            stale = false
            hashed = []
            return .reset
        }
        // Answer what the cached digest or a missing part settles.
        waiters.removeAll { w in
            guard let want = prefix(w.parts) else {
                answers.append((w.continuation, nil))
                return true
            }
            if let r = result, r.generations == want {
                answers.append((w.continuation, r.hex))
                return true
            }
            if blocked {
                answers.append((w.continuation, nil))
                return true
            }
            return false
        }
        if waiters.contains(where: { $0.parts < hashed.count }) {
            // Hashed past what a waiter needs: start over (it stops at the waiter's count).
            hashed = []
            return .reset
        }
        if waiters.contains(where: { $0.parts == hashed.count }) { return .finalize(generations: hashed) }
        if !blocked, let generation = stored[hashed.count], result == nil || !waiters.isEmpty {
            return .hash(part: hashed.count, generation: generation)
        }
        busy = false
        return .stop
    }

    /// Finalizes `sha` and starts a new one (caller holds `busy`).
    private func finalizeSHA() -> String {
        var done = SHA256()
        swap(&done, &sha)
        return done.finalize().hexString
    }
}
