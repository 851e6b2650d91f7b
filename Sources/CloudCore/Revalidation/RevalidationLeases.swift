import Foundation
import Postbox

/// The fresh references of one parent, as the context hands them to waiters: resource id →
/// reference and file (location) id → reference, or `gone`.
public struct ParentReferences: Sendable {
    /// Where the answer came from.
    public enum Source: Sendable { case cloud, otherProcess, cache }

    public var parent: MediaParent
    public var gone: Bool
    var references: [String: FileReference]
    var byLocation: [Int64: FileReference]
    public var source: Source
    /// Unix milliseconds the answer was obtained.
    public var obtainedAtMs: Int64

    /// Resource ids the parent holds now.
    public var resourceIds: Set<String> { Set(references.keys) }

    /// The fresh reference of `resourceId` (or of the file `locationId`), nil if not held.
    public func reference(resourceId: String, locationId: Int64? = nil) -> FileReference? {
        references[resourceId] ?? locationId.flatMap { byLocation[$0] }
    }
}

/// Cross-process coordination in Postbox: one lease per parent (`tx.revalidationLeases`), the
/// outcome other processes reuse, and the fresh references in `tx.mediaReferences`.
struct RevalidationLeases: Sendable {
    let postbox: Postbox
    let options: RevalidationOptions

    /// How a parent stands for this process.
    enum Claim: Sendable {
        /// We hold the lease: call the cloud.
        case mine
        /// Someone (maybe another process) produced a usable outcome: read it from Postbox.
        case reuse(RevalidationLease)
        /// A recent failure whose backoff has not elapsed.
        case backoff(RevalidationLease, retryInMs: Int64)
        /// Another live process holds the lease: wait and look again.
        case held(RevalidationLease)
    }

    static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Classifies `parents` and takes the lease of those nobody is working on, in one write
    /// transaction that reads the leases together. `reuseSinceMs[p]`: an outcome at or after it
    /// is reused.
    func claim(_ parents: [MediaParent], reuseSinceMs: [MediaParent: Int64]) async throws -> [MediaParent: Claim] {
        let holder = options.holder
        let durationMs = Int64(options.leaseDuration * 1000)
        let options = self.options
        return try await postbox.transaction { tx in
            let table = try tx.revalidationLeases
            let now = Self.nowMs()
            var out: [MediaParent: Claim] = [:]
            let stored = try table.get(parents)
            for p in parents {
                let lease = stored[p] ?? RevalidationLease()
                let since = reuseSinceMs[p] ?? (now - Int64(options.cacheTTL * 1000))
                if Self.reusable(lease, since: since) {
                    out[p] = .reuse(lease)
                } else if Self.held(lease, elsewhereThan: holder, nowMs: now) {
                    out[p] = .held(lease)
                } else if lease.lastOutcome == .failed,
                    case let retryAt = lease.lastOutcomeAt + Int64(options.backoff(failures: lease.failures) * 1000), retryAt > now
                {
                    out[p] = .backoff(lease, retryInMs: retryAt - now)
                } else {
                    let taken = try table.acquire(p, current: stored[p], holder: holder, nowMs: now, durationMs: durationMs)
                    out[p] = taken.holder == holder ? .mine : .held(taken)
                }
            }
            return out
        }
    }

    /// An outcome another process (or this one) stored that answers a pass asking since
    /// `since`: gone, or refreshed at or after it.
    static func reusable(_ lease: RevalidationLease, since: Int64) -> Bool {
        lease.lastOutcome == .gone || (lease.lastOutcome == .refreshed && lease.lastOutcomeAt >= since)
    }

    /// Whether a holder other than `holder` holds `lease` and it has not run out.
    static func held(_ lease: RevalidationLease, elsewhereThan holder: String, nowMs now: Int64) -> Bool {
        !lease.holder.isEmpty && lease.holder != holder && lease.leaseUntil > now
    }

    /// The outcome stored for `parents` (after `claim` said reuse), from the reference table.
    func stored(_ parents: [MediaParent]) async throws -> [MediaParent: ParentReferences] {
        try await postbox.read { tx in try Self.snapshots(parents, leases: try tx.revalidationLeases.get(parents), in: tx) }
    }

    /// How a unit of parents stands, found with one read and no lease taken (so without the
    /// store's writer lock): every parent already answered since `reuseSinceMs` (their stored
    /// outcomes, read in the same snapshot), one held by another process now, or open to claim.
    func look(_ parents: [MediaParent], reuseSinceMs since: Int64) async throws -> Look {
        let holder = options.holder
        return try await postbox.read { tx in
            let now = Self.nowMs()
            let leases = try tx.revalidationLeases.get(parents)
            if parents.allSatisfy({ leases[$0].map { Self.reusable($0, since: since) } ?? false }) {
                return .answered(try Self.snapshots(parents, leases: leases, in: tx))
            }
            return leases.values.contains { Self.held($0, elsewhereThan: holder, nowMs: now) } ? .held : .open
        }
    }

    /// What `look` found.
    enum Look: Sendable {
        case answered([MediaParent: ParentReferences])
        case held
        case open
    }

    /// The stored outcome of each of `parents` under its `leases`: the valid references it holds
    /// (its resources and their records read together), or gone.
    private static func snapshots(_ parents: [MediaParent], leases: [MediaParent: RevalidationLease], in tx: Transaction) throws -> [MediaParent:
        ParentReferences]
    {
        let refs = try tx.mediaReferences
        let held = try refs.resources(of: parents.filter { leases[$0]?.lastOutcome != .gone })
        let records = try refs.get(held.values.flatMap { $0 })
        var out: [MediaParent: ParentReferences] = [:]
        for p in parents {
            let lease = leases[p] ?? RevalidationLease()
            var snapshot = ParentReferences(
                parent: p, gone: lease.lastOutcome == .gone, references: [:], byLocation: [:],
                source: .otherProcess, obtainedAtMs: lease.lastOutcomeAt)
            for id in held[p] ?? [] {
                if let r = records[id], r.status == .valid, !r.fileReference.isEmpty { snapshot.references[id] = FileReference(r.fileReference) }
            }
            out[p] = snapshot
        }
        return out
    }

    /// Stores what the cloud answered: fresh records (resources the parent no longer holds
    /// become gone), stored messages and peers replaced, leases released with the outcome. The
    /// transaction holds the store's writer lock, so everything it reads is read first and
    /// together (one round trip per table), then written in one batch at commit.
    func commit(_ results: [RefetchedParent], atMs now: Int64) async throws -> [MediaParent: ParentReferences] {
        try await postbox.transaction { tx in
            let refs = try tx.mediaReferences
            let leaseTable = try tx.revalidationLeases
            let parents = results.map(\.parent)
            let held = try refs.resources(of: parents)
            let records = try refs.get(Array(Set(held.values.flatMap { $0 } + results.flatMap { $0.records.map(\.resourceId) })))
            var written: [String: MediaReferenceRecord] = [:]
            var out: [MediaParent: ParentReferences] = [:]
            for r in results {
                let fresh = Set(r.records.map(\.resourceId))
                for id in held[r.parent] ?? [] where !fresh.contains(id) {
                    let previous = written[id] ?? records[id]
                    if var old = previous, old.status != .gone {
                        old.status = .gone
                        try refs.set(old, replacing: previous)
                        written[id] = old
                    }
                }
                for record in r.records {
                    try refs.set(record, replacing: written[record.resourceId] ?? records[record.resourceId])
                    written[record.resourceId] = record
                }
                if let p = r.peer, try tx.peers.get(p.id) != nil { try tx.peers.set(p) }
                // Every field of the lease is set anew (released, the outcome, no failures), so
                // the stored one is not read.
                try leaseTable.set(r.parent, RevalidationLease(lastOutcome: r.gone ? .gone : .refreshed, lastOutcomeAt: now))
                var snapshot = ParentReferences(parent: r.parent, gone: r.gone, references: [:], byLocation: [:], source: .cloud, obtainedAtMs: now)
                for record in r.records { snapshot.references[record.resourceId] = FileReference(record.fileReference) }
                for (location, id) in r.locations { snapshot.byLocation[location] = snapshot.references[id] }
                out[r.parent] = snapshot
            }
            try tx.messages.replaceStored(results.compactMap(\.message))
            return out
        }
    }

    /// Records a failed call: lease released with the failure count (the backoff), the
    /// parent's records marked failed. Returns the failures in a row per parent.
    func commitFailure(_ parents: [MediaParent], reason: String, atMs now: Int64) async throws -> [MediaParent: Int32] {
        try await postbox.transaction { tx in
            let refs = try tx.mediaReferences
            let leases = try tx.revalidationLeases
            var out: [MediaParent: Int32] = [:]
            let stored = try leases.get(parents)
            let held = try refs.resources(of: parents)
            let records = try refs.get(Array(Set(held.values.flatMap { $0 })))
            var written: [String: MediaReferenceRecord] = [:]
            for p in parents {
                var lease = stored[p] ?? RevalidationLease()
                lease.holder = ""
                lease.leaseUntil = 0
                lease.lastOutcome = .failed
                lease.lastOutcomeAt = now
                lease.failures += 1
                lease.lastError = reason
                try leases.set(p, lease)
                out[p] = lease.failures
                for id in held[p] ?? [] {
                    let previous = written[id] ?? records[id]
                    if var r = previous, r.status != .gone {
                        r.status = .failed
                        r.failures += 1
                        try refs.set(r, replacing: previous)
                        written[id] = r
                    }
                }
            }
            return out
        }
    }

    /// Marks one resource gone (its parent no longer holds it), creating the record if needed.
    func markGone(resourceId: String, parent: MediaParent) async throws {
        try await postbox.transaction { tx in
            let refs = try tx.mediaReferences
            var record =
                try refs.get(resourceId)
                ?? MediaReferenceRecord(resourceId: resourceId, parent: parent, fileReference: Data(), obtainedAt: Int64(Date().timeIntervalSince1970))
            guard record.status != .gone else { return }
            record.status = .gone
            try refs.set(record)
        }
    }

    /// Whether another process holds a live lease on any of `parents` (it is calling the cloud
    /// for them now): one read, no lease taken.
    func heldElsewhere(_ parents: [MediaParent]) async throws -> Bool {
        let holder = options.holder
        return try await postbox.read { tx in
            let now = Self.nowMs()
            return try tx.revalidationLeases.get(parents).values.contains { Self.held($0, elsewhereThan: holder, nowMs: now) }
        }
    }

    /// The stored status of a resource's reference, if any.
    func status(_ resourceId: String) async throws -> MediaReferenceRecord.Status? {
        try await postbox.read { try $0.mediaReferences.get(resourceId)?.status }
    }
}
