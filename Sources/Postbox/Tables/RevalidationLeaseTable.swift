import Foundation

/// Revalidation leases by parent entity (`MediaParent.key`).
public final class RevalidationLeaseTable: Table {
    public func get(_ parent: MediaParent) throws -> RevalidationLease? {
        try checkRead()
        return try valueBox.get(table, key: parent.key).map { try PostboxDecoder.decode(RevalidationLease.self, from: $0) }
    }

    /// The leases of those of `parents` that have one, read together (one round trip on a server).
    public func get(_ parents: [MediaParent]) throws -> [MediaParent: RevalidationLease] {
        try checkRead()
        let stored = try valueBox.get(table, keys: parents.map(\.key))
        var out: [MediaParent: RevalidationLease] = [:]
        for p in parents {
            if let value = stored[p.key] { out[p] = try PostboxDecoder.decode(RevalidationLease.self, from: value) }
        }
        return out
    }

    public func set(_ parent: MediaParent, _ lease: RevalidationLease) throws {
        try checkWrite()
        try valueBox.set(table, key: parent.key, value: PostboxEncoder.encode(lease))
        state.record { $0.updatedRevalidationParents.insert(parent) }
    }

    /// Takes the lease for `holder` unless someone else holds an unexpired one. Returns the
    /// current lease either way; it is ours when `holder` matches.
    public func acquire(_ parent: MediaParent, holder: String, nowMs: Int64, durationMs: Int64) throws -> RevalidationLease {
        try checkWrite()
        return try acquire(parent, current: try get(parent), holder: holder, nowMs: nowMs, durationMs: durationMs)
    }

    /// `acquire` for a caller that has read the parent's lease already in this transaction
    /// (`current`, nil when there is none), so taking it reads nothing.
    public func acquire(
        _ parent: MediaParent, current: RevalidationLease?, holder: String, nowMs: Int64, durationMs: Int64
    ) throws -> RevalidationLease {
        try checkWrite()
        var lease = current ?? RevalidationLease()
        if lease.holder.isEmpty || lease.holder == holder || lease.leaseUntil <= nowMs {
            lease.holder = holder
            lease.leaseUntil = nowMs + durationMs
            try set(parent, lease)
        }
        return lease
    }
}
