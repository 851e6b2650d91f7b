import Foundation

/// Revalidation leases by parent entity (`MediaParent.key`).
public final class RevalidationLeaseTable: Table {
    public func get(_ parent: MediaParent) throws -> RevalidationLease? {
        try checkRead()
        return try valueBox.get(table, key: parent.key).map { try PostboxDecoder.decode(RevalidationLease.self, from: $0) }
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
        var lease = try get(parent) ?? RevalidationLease()
        if lease.holder.isEmpty || lease.holder == holder || lease.leaseUntil <= nowMs {
            lease.holder = holder
            lease.leaseUntil = nowMs + durationMs
            try set(parent, lease)
        }
        return lease
    }
}
