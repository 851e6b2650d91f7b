import Foundation

/// Why a range of a peer's history is missing.
public enum HistoryHoleKind: UInt8, Sendable, CustomStringConvertible {
    /// Known to exist on the server, never fetched (an interrupted sync): filled by the next sync.
    case gap = 0
    /// Stored once and dropped by history retention: fetched again only on request.
    case trimmed = 1

    public var description: String { self == .gap ? "gap" : "trimmed" }
}

/// One missing id range of a peer's history and why it is missing.
public struct HistoryHole: Sendable, Equatable {
    public var range: ClosedRange<Int32>
    public var kind: HistoryHoleKind
    public init(_ range: ClosedRange<Int32>, kind: HistoryHoleKind) {
        self.range = range
        self.kind = kind
    }
}

/// Gaps in a peer's stored history: ranges of message ids known to exist on the server but not
/// stored. Keyed `peer(8) namespace(4) upperId(4)` → lowerId (Int32 LE), then a kind byte for
/// ranges dropped by retention (absent = `gap`, so older readers still read the range). Ranges
/// never overlap; adjacent ranges of the same kind are merged.
public final class HistoryHoleTable: Table {
    private func key(_ peer: PeerId, _ namespace: Int32, upper: Int32) -> ValueBoxKey {
        var k = ValueBoxKey(length: 16)
        k.setInt64(0, value: peer.rawValue)
        k.setInt32(8, value: namespace)
        k.setInt32(12, value: upper)
        return k
    }

    /// The holes of a peer, ascending, of every kind.
    public func holes(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace) throws -> [ClosedRange<Int32>] {
        try entries(peer: peer, namespace: namespace).map(\.range)
    }

    /// The holes of a peer with their kinds, ascending.
    public func entries(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace) throws -> [HistoryHole] {
        try checkRead()
        var out: [HistoryHole] = []
        try valueBox.range(table, .prefix(MessageHistoryTable.peerKey(peer, namespace: namespace)), limit: .max) { key, data in
            let (lower, kind) = data.withUnsafeBytes { raw -> (Int32, HistoryHoleKind) in
                let lower = Int32(littleEndian: raw.loadUnaligned(as: Int32.self))
                let kind = raw.count > 4 ? HistoryHoleKind(rawValue: raw[4]) ?? .gap : .gap
                return (lower, kind)
            }
            out.append(HistoryHole(lower...key.getInt32(12), kind: kind))
            return true
        }
        return out
    }

    private func replace(peer: PeerId, namespace: Int32, with holes: [HistoryHole]) throws {
        let prefix = MessageHistoryTable.peerKey(peer, namespace: namespace)
        try valueBox.removeRange(table, .prefix(prefix))
        for h in holes {
            var value = withUnsafeBytes(of: h.range.lowerBound.littleEndian) { Data($0) }
            if h.kind != .gap { value.append(h.kind.rawValue) }
            try valueBox.set(table, key: key(peer, namespace, upper: h.range.upperBound), value: value)
        }
        state.record { $0.updatedHoles.insert(peer) }
    }

    /// `holes` without the ids of `range` (splitting holes that it cuts).
    private static func subtracting(_ range: ClosedRange<Int32>, from holes: [HistoryHole]) -> [HistoryHole] {
        var out: [HistoryHole] = []
        for h in holes {
            if h.range.upperBound < range.lowerBound || h.range.lowerBound > range.upperBound { out.append(h); continue }
            if h.range.lowerBound < range.lowerBound { out.append(HistoryHole(h.range.lowerBound...(range.lowerBound - 1), kind: h.kind)) }
            if h.range.upperBound > range.upperBound { out.append(HistoryHole((range.upperBound + 1)...h.range.upperBound, kind: h.kind)) }
        }
        return out
    }

    /// Marks `range` as missing for the reason `kind`: the range takes that kind, adjacent holes
    /// of the same kind merge with it.
    public func add(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, range: ClosedRange<Int32>, kind: HistoryHoleKind = .gap) throws {
        try checkWrite()
        var all = Self.subtracting(range, from: try entries(peer: peer, namespace: namespace)) + [HistoryHole(range, kind: kind)]
        all.sort { $0.range.lowerBound < $1.range.lowerBound }
        var merged: [HistoryHole] = []
        for h in all {
            if let last = merged.last, last.kind == h.kind, Int64(h.range.lowerBound) <= Int64(last.range.upperBound) + 1 {
                merged[merged.count - 1] = HistoryHole(last.range.lowerBound...max(last.range.upperBound, h.range.upperBound), kind: last.kind)
            } else {
                merged.append(h)
            }
        }
        try replace(peer: peer, namespace: namespace, with: merged)
    }

    /// Marks `range` as fetched (splitting holes that it cuts; the pieces keep their kinds).
    public func fill(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, range: ClosedRange<Int32>) throws {
        try checkWrite()
        try replace(peer: peer, namespace: namespace, with: Self.subtracting(range, from: try entries(peer: peer, namespace: namespace)))
    }
}
