import Foundation

/// Peers by id, with the seed's write-behind cache: `set` stores in memory, `beforeCommit`
/// writes each changed peer once, and reads see the transaction's own writes.
public final class PeerTable: Table {
    private var cache: [PeerId: Peer] = [:]
    private var dirty: Set<PeerId> = []
    private let encoder = PostboxEncoder()

    public func get(_ id: PeerId) throws -> Peer? {
        try checkRead()
        if let peer = cache[id] { return peer }
        guard let data = try valueBox.get(table, key: ValueBoxKey(id.rawValue)) else { return nil }
        let peer = try PostboxDecoder.decode(Peer.self, from: data)
        cache[id] = peer
        return peer
    }

    public func set(_ peer: Peer) throws {
        try checkWrite()
        cache[peer.id] = peer
        dirty.insert(peer.id)
        state.record { $0.updatedPeers.insert(peer.id) }
    }

    /// Every stored peer, in id order (flushes pending writes first so they are included).
    public func all() throws -> [Peer] {
        try checkRead()
        if state.isWrite { try beforeCommit() }
        var out: [Peer] = []
        try valueBox.scan(table) { _, data in
            out.append(try PostboxDecoder.decode(Peer.self, from: data))
            return true
        }
        return out
    }

    public func count() throws -> Int {
        try checkRead()
        if state.isWrite { try beforeCommit() }
        return try valueBox.count(table)
    }

    public override func beforeCommit() throws {
        for id in dirty {
            guard let peer = cache[id] else { continue }
            encoder.reset()
            encoder.encodeRootObject(peer)
            try valueBox.set(table, key: ValueBoxKey(id.rawValue), value: encoder.makeData())
        }
        if !dirty.isEmpty { dirty.removeAll(keepingCapacity: true) }
        // A read cache, not a copy of the table: bound it for stores with millions of peers.
        if cache.count > Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
    }

    static let cacheLimit = 10_000

    public override func clearMemoryCache() {
        cache.removeAll()
        dirty.removeAll()
    }
}
