import Foundation

/// The shared media tier's index, keyed by resource id: what the bucket holds, who wrote it,
/// its size, SHA-256 and last use. Lives in the cluster's tier store, not in an account's.
public final class SharedMediaTierTable: Table {
    private func key(_ resourceId: String) -> ValueBoxKey { ValueBoxKey(string: resourceId) }

    public func get(_ resourceId: String) throws -> SharedMediaTierEntry? {
        try checkRead()
        return try valueBox.get(table, key: key(resourceId)).map { try PostboxDecoder.decode(SharedMediaTierEntry.self, from: $0) }
    }

    /// Inserts or replaces the entry of its resource.
    public func set(_ entry: SharedMediaTierEntry) throws {
        try checkWrite()
        try valueBox.set(table, key: key(entry.resourceId), value: PostboxEncoder.encode(entry))
    }

    public func remove(_ resourceId: String) throws {
        try checkWrite()
        try valueBox.remove(table, key: key(resourceId))
    }

    /// Moves the last use of each listed resource that is still indexed forward to `time`
    /// (never backwards).
    public func touch(_ resourceIds: some Sequence<String>, at time: Int64) throws {
        try checkWrite()
        for id in resourceIds {
            guard var entry = try get(id), entry.lastUsedAt < time else { continue }
            entry.lastUsedAt = time
            try set(entry)
        }
    }

    /// Every entry, in resource id order.
    public func all() throws -> [SharedMediaTierEntry] {
        try checkRead()
        var out: [SharedMediaTierEntry] = []
        try valueBox.range(table, .all, limit: .max) { _, data in
            out.append(try PostboxDecoder.decode(SharedMediaTierEntry.self, from: data))
            return true
        }
        return out
    }
}
