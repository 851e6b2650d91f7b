import CloudCrypto
import CloudProtocol
import Foundation
import NIOCore

/// The running SHA-256 of one upload, so `sendMedia` need not read the whole file: the contiguous
/// prefix of stored parts is hashed as it grows (parts arriving in order right after they are
/// stored; a part that arrived early once the gap before it is filled) on a dispatch queue, never
/// on the cooperative pool or an event loop. A part that is the next in order when it arrives is
/// hashed from the request's own buffers (`offer`); one that arrives early keeps its buffers
/// until its turn (`earlyLimit` per upload, `earlyTotalLimit` over all), so with many parts in
/// flight hardly any part is read back from the upload's file (`UploadPartsFile`, page cache),
/// and `sendMedia` finds the digest ready. Re-sending a part that was already hashed restarts from
/// part 0 (rare: a retry whose answer was lost).
///
/// The hashing paces the upload (`pace`): a part's answer waits while the hashing is
/// `maxLagParts` parts or more behind it. Receiving costs less CPU than hashing, so without it a client with
/// many parts in flight runs far ahead: the kept buffers overflow, later parts are read back from
/// the file, and `sendMedia` waits for the whole backlog to be hashed on one core while the
/// other idles. Paced, the hashing runs alongside the receiving and the backlog at the end is
/// only the parts in flight.
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
    /// Part answers waiting for the hashing to come within `maxLagParts` of their part.
    private var paced: [(part: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var sha = SHA256()
    /// Request buffers of parts that arrived before the part they follow (several parts are in
    /// flight at once), kept so they are hashed from memory when their turn comes instead of
    /// read back from the file; at most `earlyLimit` bytes, beyond that parts are read back.
    private var early: [Int: (generation: Int, chunks: [ByteBuffer], size: Int)] = [:]
    private var earlyBytes = 0
    static let earlyLimit = 16 << 20
    static let earlyTotalLimit = 64 << 20
    /// How far (in parts) the hashing may fall behind a part before its answer waits: as many
    /// full parts as `earlyLimit` keeps, so a paced upload's parts are all hashed from memory.
    static let maxLagParts = earlyLimit / UploadPartRules.maxPartSize
    /// Bytes kept by every upload's hasher.
    private static let earlyTotal = Locked(0)

    init(file: UploadPartsFile) { self.file = file }

    /// A part was stored (written in full) with `generation`; `nil`: the part is gone again.
    /// With `startWorker: false` the caller follows up with `offer` (no background read-back of
    /// a part it can hash from its own buffers).
    func stored(part: Int, generation: Int?, startWorker: Bool = true) {
        lock.lock()
        stored[part] = generation
        dropEarly(part)
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
        let size = chunks.reduce(0) { $0 + $1.readableBytes }
        if !cancelled, part > hashed.count, stored[part] == generation, earlyBytes + size <= Self.earlyLimit,
            Self.earlyTotal.withLock({ total in
                guard total + size <= Self.earlyTotalLimit else { return false }
                total += size
                return true
            })
        {
            dropEarly(part)
            early[part] = (generation, chunks, size)
            earlyBytes += size
        } else if !busy, !cancelled, !stale, !blocked, result == nil, hashed.count == part, stored[part] == generation {
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
        let released = releasePaced(all: false)
        lock.unlock()
        for c in released { c.resume() }
        if start { Self.queue.async { self.run() } }
    }

    /// Returns once the hashing is within `maxLagParts` of `part` (the caller's part, stored and
    /// offered), or at once when waiting cannot help: the next part to hash is missing (the
    /// client must send it first), the hashing is blocked, or the upload is gone. While anyone
    /// waits, a worker runs; when it stops without catching up, every waiter is released.
    func pace(part: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            lock.lock()
            guard mustWait(part) else {
                lock.unlock()
                c.resume()
                return
            }
            paced.append((part, c))
            let start = claimWorker()
            lock.unlock()
            if start { Self.queue.async { self.run() } }
        }
    }

    /// Parts fed into the running hash so far: how far the hashing has come.
    var hashedParts: Int { lock.withLock { hashed.count } }

    /// Whether an answer for `part` waits for the hashing (lock held).
    private func mustWait(_ part: Int) -> Bool {
        !cancelled && !blocked && part - hashed.count >= Self.maxLagParts && stored[hashed.count] != nil
    }

    /// Takes the paced answers that no longer wait (`all`: every one) for the caller to resume
    /// once it has released the lock (lock held).
    private func releasePaced(all: Bool) -> [CheckedContinuation<Void, Never>] {
        guard !paced.isEmpty else { return [] }
        var released: [CheckedContinuation<Void, Never>] = []
        paced.removeAll { p in
            guard all || !mustWait(p.part) else { return false }
            released.append(p.continuation)
            return true
        }
        return released
    }

    /// The parts are gone (forgotten or consumed): stop, answer waiters `nil`.
    func cancel() {
        lock.lock()
        cancelled = true
        let freed = earlyBytes
        early = [:]
        earlyBytes = 0
        Self.earlyTotal.withLock { $0 -= freed }
        let ws = waiters
        waiters = []
        let released = releasePaced(all: true)
        lock.unlock()
        for w in ws { w.continuation.resume(returning: nil) }
        for c in released { c.resume() }
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
        case hash(part: Int, generation: Int, kept: [ByteBuffer]?)
    }

    /// Forgets the kept buffers of `part` (lock held).
    private func dropEarly(_ part: Int) {
        guard let old = early.removeValue(forKey: part) else { return }
        earlyBytes -= old.size
        Self.earlyTotal.withLock { $0 -= old.size }
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
            // A worker that stops cannot catch up with anyone still waiting.
            var stopping = false
            if case .stop = action { stopping = true }
            let released = releasePaced(all: stopping)
            lock.unlock()
            for (c, v) in answers { c.resume(returning: v) }
            for c in released { c.resume() }
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
            case .hash(let part, let generation, let kept):
                var ok = true
                if let kept {
                    for chunk in kept { chunk.withUnsafeReadableBytes { sha.update($0) } }
                } else {
                    do {
                        let n = try file.read(part: part, into: buffer)
                        sha.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    } catch {
                        ok = false
                    }
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
            let part = hashed.count
            var kept: [ByteBuffer]?
            if let e = early[part] {
                dropEarly(part)
                if e.generation == generation { kept = e.chunks }
            }
            return .hash(part: part, generation: generation, kept: kept)
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
