import Foundation

/// What one trimming step removed from a peer's history.
public struct MessageTrimBatch: Sendable {
    /// Ids of the removed messages, ascending.
    public var removedIds: [Int32] = []
    /// Timestamps of the oldest and newest removed message.
    public var oldestTimestamp: Int32 = .max
    public var newestTimestamp: Int32 = .min
    /// Key and value bytes of the removed rows (messages and their index entries).
    public var bytes: Int64 = 0
    /// Key and value bytes of the removed message rows and their id index rows alone.
    public var rowBytes: Int64 = 0
    /// Messages left in place because they are in use.
    public var keptInUse: Int = 0
    /// The id ranges that are now missing: the removed ids, split around every message still
    /// stored between them. These become history holes.
    public var missingRanges: [ClosedRange<Int32>] = []
    /// Where the next step starts (exclusive), or nil when nothing removable is left below the bound.
    public var resumeAfter: ValueBoxKey?
}

extension MessageHistoryTable {
    /// The key of the first message of `peer` at or after `timestamp`: an exclusive upper bound
    /// for "messages older than `timestamp`".
    public static func boundKey(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, timestamp: Int32) -> ValueBoxKey {
        var k = ValueBoxKey(length: 20)
        k.setInt64(0, value: peer.rawValue)
        k.setInt32(8, value: namespace)
        k.setInt32(12, value: timestamp)
        k.setInt32(16, value: Int32.min)
        return k
    }

    /// The message key of `index` (peer, namespace, timestamp, id): ordered by time within a peer.
    public static func messageKey(_ index: MessageIndex) -> ValueBoxKey { key(index) }

    private func idIndexKey(_ peer: PeerId, _ namespace: Int32, _ id: Int32) -> ValueBoxKey {
        var k = ValueBoxKey(length: 16)
        k.setInt64(0, value: peer.rawValue)
        k.setInt32(8, value: namespace)
        k.setInt32(12, value: id)
        return k
    }

    /// Removes the oldest messages of one peer, in time order, that sort below `upper` (an
    /// exclusive message key), visiting at most `limit` messages: each removed message goes
    /// with its id index and media index entries, in this transaction. A message for which
    /// `inUse` returns true stays; without `inUse` no message is decoded whole (rows that list
    /// their media ids are read only up to them). Start with `after == nil`, then pass the
    /// batch's `resumeAfter` until it is nil.
    public func trimOldest(
        peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, after: ValueBoxKey?, upper: ValueBoxKey,
        limit: Int, inUse: ((Message) throws -> Bool)? = nil
    ) throws -> MessageTrimBatch {
        try checkWrite()
        let prefix = Self.peerKey(peer, namespace: namespace)
        let range = ValueBoxRange(
            lower: after ?? prefix, lowerInclusive: after == nil, upper: min(upper, prefix.prefixUpperBound ?? upper), upperInclusive: false)
        var batch = MessageTrimBatch()
        // Collected first (at most `limit`), removed after: never delete under a running scan.
        var victims: [(key: ValueBoxKey, index: MessageIndex, mediaIds: [MediaId], size: Int)] = []
        var visited = 0
        var lastKey: ValueBoxKey?
        var anyKept = false
        var decoder = MessageRecord.Reader()
        try valueBox.range(table, range, limit: limit) { key, value in
            visited += 1
            lastKey = key
            // Nil: the message stays, in use.
            let entries = try value.withUnsafeBytes { buffer -> (index: MessageIndex, mediaIds: [MediaId])? in
                if inUse == nil, let entries = try MessageRecord.indexEntries(buffer) { return entries }
                let message = try decoder.decode(buffer)
                if let inUse, try inUse(message) { return nil }
                return (message.index, message.media.compactMap(\.id))
            }
            if let entries {
                victims.append((key, entries.index, entries.mediaIds, key.length + value.count))
            } else {
                batch.keptInUse += 1
                anyKept = true
            }
            return true
        }
        batch.resumeAfter = visited == limit ? lastKey : nil
        guard !victims.isEmpty else { return batch }

        // Message rows: one range delete when every visited row goes, otherwise one by one.
        if !anyKept, let last = victims.last?.key {
            try valueBox.removeRange(table, ValueBoxRange(lower: after ?? prefix, lowerInclusive: after == nil, upper: last, upperInclusive: true))
        } else {
            for v in victims { try valueBox.remove(table, key: v.key) }
        }
        var ids: [Int32] = []
        ids.reserveCapacity(victims.count)
        for v in victims {
            ids.append(v.index.id.id)
            batch.bytes += Int64(v.size) + 20  // + the id index row
            batch.rowBytes += Int64(v.size) + 20
            batch.oldestTimestamp = min(batch.oldestTimestamp, v.index.timestamp)
            batch.newestTimestamp = max(batch.newestTimestamp, v.index.timestamp)
            for mid in v.mediaIds {
                try valueBox.remove(mediaIndex, key: mediaIndexKey(mid, v.index.id))
                batch.bytes += 28
            }
        }
        ids.sort()
        batch.removedIds = ids

        // Id index: a range delete when no other message of the peer has an id in between.
        let lo = ids.first!, hi = ids.last!
        let idRange = ValueBoxRange(
            lower: idIndexKey(peer, namespace, lo), lowerInclusive: true,
            upper: idIndexKey(peer, namespace, hi), upperInclusive: true)
        if try valueBox.count(idIndex, idRange) == ids.count {
            try valueBox.removeRange(idIndex, idRange)
            batch.missingRanges = [lo...hi]
        } else {
            for id in ids { try valueBox.remove(idIndex, key: idIndexKey(peer, namespace, id)) }
            // What is still stored between `lo` and `hi` splits the missing range.
            var cursor = Int64(lo)
            try valueBox.rangeKeys(idIndex, idRange, limit: .max) { key in
                let kept = Int64(key.getInt32(12))
                if kept > cursor { batch.missingRanges.append(Int32(cursor)...Int32(kept - 1)) }
                cursor = kept + 1
                return true
            }
            if cursor <= Int64(hi) { batch.missingRanges.append(Int32(cursor)...hi) }
        }
        state.record { $0.removedMessages[peer, default: 0] += victims.count }
        return batch
    }

    /// The peers that have messages in `namespace`, ascending, found by skipping from one peer's
    /// prefix to the next in the id index (a few seeks per peer, no full scan).
    public func peersWithMessages(namespace: Int32 = MessageId.cloudNamespace) throws -> [PeerId] {
        try checkRead()
        var out: [PeerId] = []
        var lower: ValueBoxKey?
        while true {
            var found: PeerId?
            try valueBox.rangeKeys(idIndex, ValueBoxRange(lower: lower, lowerInclusive: true, upper: nil, upperInclusive: true), limit: 1) { key in
                found = PeerId(key.getInt64(0))
                return false
            }
            guard let peer = found else { break }
            var inNamespace = false
            try valueBox.rangeKeys(idIndex, .prefix(Self.peerKey(peer, namespace: namespace)), limit: 1) { _ in
                inNamespace = true
                return false
            }
            if inNamespace { out.append(peer) }
            guard let next = ValueBoxKey(peer.rawValue).prefixUpperBound else { break }
            lower = next
        }
        return out
    }

    /// Message keys of one peer, newest first: (timestamp, id). Stops when `visit` returns false.
    public func scanIndexes(
        peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, newestFirst: Bool = true,
        visit: (MessageIndex, ValueBoxKey) throws -> Bool
    ) throws {
        try checkRead()
        try valueBox.rangeKeys(table, .prefix(Self.peerKey(peer, namespace: namespace), descending: newestFirst), limit: .max) { key in
            try visit(MessageIndex(id: MessageId(peerId: peer, namespace: namespace, id: key.getInt32(16)), timestamp: key.getInt32(12)), key)
        }
    }

    /// Like `scanIndexes`, with the stored size of each row (key + value bytes).
    public func scanSizes(
        peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, newestFirst: Bool = true,
        visit: (MessageIndex, ValueBoxKey, Int) throws -> Bool
    ) throws {
        try checkRead()
        try valueBox.range(table, .prefix(Self.peerKey(peer, namespace: namespace), descending: newestFirst), limit: .max) { key, value in
            try visit(
                MessageIndex(id: MessageId(peerId: peer, namespace: namespace, id: key.getInt32(16)), timestamp: key.getInt32(12)), key,
                key.length + value.count)
        }
    }
}
