import Foundation

/// Per-peer sync state (`PeerSyncState`) by peer id.
public final class PeerSyncStateTable: Table {
    public func get(_ peer: PeerId) throws -> PeerSyncState? {
        try checkRead()
        return try valueBox.get(table, key: ValueBoxKey(peer.rawValue)).map { try PostboxDecoder.decode(PeerSyncState.self, from: $0) }
    }

    public func set(_ peer: PeerId, _ value: PeerSyncState) throws {
        try checkWrite()
        try valueBox.set(table, key: ValueBoxKey(peer.rawValue), value: PostboxEncoder.encode(value))
        state.record { $0.updatedSyncStates.insert(peer) }
    }
}
