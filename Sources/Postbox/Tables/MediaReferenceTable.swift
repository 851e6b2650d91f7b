import Foundation

/// File references by resource id, with two indexes kept in step: by the time each was obtained
/// (to find references about to expire without a full scan) and by parent entity (to find every
/// resource one revalidation refreshes).
public final class MediaReferenceTable: Table {
    let byObtainedAt = PostboxTableId.mediaReferencesByObtainedAt.table
    let byParent = PostboxTableId.mediaReferencesByParent.table

    init(valueBox: ValueBox, state: TransactionState) {
        super.init(valueBox: valueBox, table: PostboxTableId.mediaReferences.table, state: state)
    }

    private func timeKey(_ obtainedAt: Int64, _ resourceId: String) -> ValueBoxKey {
        var k = ValueBoxKey(length: 8)
        k.setInt64(0, value: obtainedAt)
        return k + ValueBoxKey(string: resourceId)
    }

    public func get(_ resourceId: String) throws -> MediaReferenceRecord? {
        try checkRead()
        return try valueBox.get(table, key: ValueBoxKey(string: resourceId)).map { try PostboxDecoder.decode(MediaReferenceRecord.self, from: $0) }
    }

    /// The stored records of those of `resourceIds` that have one, read together (one round trip
    /// on a server).
    public func get(_ resourceIds: [String]) throws -> [String: MediaReferenceRecord] {
        try checkRead()
        let stored = try valueBox.get(table, keys: resourceIds.map { ValueBoxKey(string: $0) })
        var out: [String: MediaReferenceRecord] = [:]
        for id in resourceIds {
            if let value = stored[ValueBoxKey(string: id)] { out[id] = try PostboxDecoder.decode(MediaReferenceRecord.self, from: value) }
        }
        return out
    }

    /// Stores or replaces the record of `record.resourceId`, keeping both indexes consistent.
    public func set(_ record: MediaReferenceRecord) throws {
        try checkWrite()
        try set(record, replacing: try get(record.resourceId))
    }

    /// `set(_:)` for a caller that has read the stored record already in this transaction
    /// (`previous`, nil when there is none), so the write reads nothing.
    public func set(_ record: MediaReferenceRecord, replacing previous: MediaReferenceRecord?) throws {
        try checkWrite()
        if let old = previous {
            try valueBox.remove(byObtainedAt, key: timeKey(old.obtainedAt, old.resourceId))
            try valueBox.remove(byParent, key: old.parent.key + ValueBoxKey(string: old.resourceId))
        }
        try valueBox.set(table, key: ValueBoxKey(string: record.resourceId), value: PostboxEncoder.encode(record))
        try valueBox.set(byObtainedAt, key: timeKey(record.obtainedAt, record.resourceId), value: Data())
        try valueBox.set(byParent, key: record.parent.key + ValueBoxKey(string: record.resourceId), value: Data())
        state.record { $0.updatedMediaReferences.insert(record.resourceId) }
    }

    public func remove(_ resourceId: String) throws {
        try checkWrite()
        guard let old = try get(resourceId) else { return }
        try valueBox.remove(table, key: ValueBoxKey(string: resourceId))
        try valueBox.remove(byObtainedAt, key: timeKey(old.obtainedAt, old.resourceId))
        try valueBox.remove(byParent, key: old.parent.key + ValueBoxKey(string: old.resourceId))
        state.record { $0.updatedMediaReferences.insert(resourceId) }
    }

    /// Records read together while walking the time index (one round trip each on a server).
    static let obtainedReadChunk = 256

    /// Records obtained before `cutoff` (Unix seconds), oldest first. The records are read
    /// `obtainedReadChunk` at a time, so a selection over a server costs a round trip per chunk,
    /// not one per record.
    public func obtained(before cutoff: Int64, limit: Int = .max, visit: (MediaReferenceRecord) throws -> Bool) throws {
        try checkRead()
        var upper = ValueBoxKey(length: 8)
        upper.setInt64(0, value: cutoff)
        let range = ValueBoxRange(lower: nil, lowerInclusive: true, upper: upper, upperInclusive: false)
        var ids: [String] = []
        var stopped = false
        func visitChunk() throws {
            let records = try get(ids)
            for id in ids {
                guard let record = records[id] else { continue }
                if try !visit(record) {
                    stopped = true
                    break
                }
            }
            ids.removeAll(keepingCapacity: true)
        }
        try valueBox.rangeKeys(byObtainedAt, range, limit: limit) { key in
            ids.append(key.string(from: 8))
            if ids.count >= Self.obtainedReadChunk { try visitChunk() }
            return !stopped
        }
        if !stopped, !ids.isEmpty { try visitChunk() }
    }

    /// The resource ids held by `parent`.
    public func resources(of parent: MediaParent) throws -> [String] {
        try checkRead()
        let prefix = parent.key
        var out: [String] = []
        try valueBox.rangeKeys(byParent, .prefix(prefix), limit: .max) { key in
            out.append(key.string(from: prefix.length))
            return true
        }
        return out
    }

    /// The resource ids held by each of `parents`, read together (one round trip on a server).
    public func resources(of parents: [MediaParent]) throws -> [MediaParent: [String]] {
        try checkRead()
        let keys = try valueBox.keys(byParent, prefixes: parents.map(\.key))
        var out: [MediaParent: [String]] = [:]
        for parent in parents {
            let prefix = parent.key
            out[parent] = (keys[prefix] ?? []).map { $0.string(from: prefix.length) }
        }
        return out
    }

    public func count() throws -> Int {
        try checkRead()
        return try valueBox.count(table)
    }
}
