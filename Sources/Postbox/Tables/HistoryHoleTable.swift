import Foundation

/// Gaps in a peer's stored history: ranges of message ids known to exist on the server but not
/// fetched yet. Keyed `peer(8) namespace(4) upperId(4)` → lowerId, ranges never overlap.
public final class HistoryHoleTable: Table {
    private func key(_ peer: PeerId, _ namespace: Int32, upper: Int32) -> ValueBoxKey {
        var k = ValueBoxKey(length: 16)
        k.setInt64(0, value: peer.rawValue)
        k.setInt32(8, value: namespace)
        k.setInt32(12, value: upper)
        return k
    }

    /// The holes of a peer, ascending.
    public func holes(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace) throws -> [ClosedRange<Int32>] {
        try checkRead()
        var out: [ClosedRange<Int32>] = []
        try valueBox.range(table, .prefix(MessageHistoryTable.peerKey(peer, namespace: namespace)), limit: .max) { key, data in
            let lower = data.withUnsafeBytes { Int32(littleEndian: $0.loadUnaligned(as: Int32.self)) }
            out.append(lower...key.getInt32(12))
            return true
        }
        return out
    }

    private func replace(peer: PeerId, namespace: Int32, with holes: [ClosedRange<Int32>]) throws {
        let prefix = MessageHistoryTable.peerKey(peer, namespace: namespace)
        try valueBox.removeRange(table, .prefix(prefix))
        for h in holes {
            try valueBox.set(table, key: key(peer, namespace, upper: h.upperBound), value: withUnsafeBytes(of: h.lowerBound.littleEndian) { Data($0) })
        }
        state.record { $0.updatedHoles.insert(peer) }
    }

    /// Marks `range` as missing (merging with adjacent or overlapping holes).
    public func add(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, range: ClosedRange<Int32>) throws {
        try checkWrite()
        var all = try holes(peer: peer, namespace: namespace) + [range]
        all.sort { $0.lowerBound < $1.lowerBound }
        var merged: [ClosedRange<Int32>] = []
        for h in all {
            if let last = merged.last, Int64(h.lowerBound) <= Int64(last.upperBound) + 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, h.upperBound)
            } else {
                merged.append(h)
            }
        }
        try replace(peer: peer, namespace: namespace, with: merged)
    }

    /// Marks `range` as fetched (splitting holes that it cuts).
    public func fill(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, range: ClosedRange<Int32>) throws {
        try checkWrite()
        var out: [ClosedRange<Int32>] = []
        for h in try holes(peer: peer, namespace: namespace) {
            if h.upperBound < range.lowerBound || h.lowerBound > range.upperBound { out.append(h); continue }
            if h.lowerBound < range.lowerBound { out.append(h.lowerBound...(range.lowerBound - 1)) }
            if h.upperBound > range.upperBound { out.append((range.upperBound + 1)...h.upperBound) }
        }
        try replace(peer: peer, namespace: namespace, with: out)
    }
}
