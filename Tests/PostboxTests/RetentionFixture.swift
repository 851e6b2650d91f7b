import Foundation
import Postbox

/// A store shaped like a synced account: `peers` peers of every category, `perPeer` messages
/// each (ids 1…perPeer, one hour apart, peers interleaved in time), every other message with a
/// photo whose file reference is recorded with the message as parent.
enum RetentionFixture {
    static let base: Int32 = 1_600_000_000

    /// A policy with working limits of the tests' choosing; each test sets what it checks.
    static func policy() -> HistoryRetentionPolicy {
        HistoryRetentionPolicy(keepNewest: 100, batchSize: 2_000, vacuumStepBytes: 8 << 20, walSizeLimit: 64 << 20)
    }

    static func timestamp(peer: Int, message: Int) -> Int32 { base + Int32(message) * 3600 + Int32(peer) }
    static func peerId(_ p: Int) -> PeerId { PeerId(Int64(1000 + p)) }

    static func fill(_ postbox: Postbox, peers: Int, perPeer: Int, firstPeer: Int = 0) throws {
        PostboxTypeRegistry.register(TestPhoto.self)
        let text = String(repeating: "history ", count: 12)
        for p in firstPeer..<(firstPeer + peers) {
            try postbox.transactionSync { tx in
                let peer = peerId(p)
                let category: PeerCategory = [.privateChat, .group, .channel][p % 3]
                try tx.peers.set(Peer(id: peer, category: category, title: "peer \(p)"))
                var batch: [Message] = []
                for i in 1...perPeer {
                    let id = MessageId(peerId: peer, id: Int32(i))
                    var media: [any Media] = []
                    if i % 2 == 0 {
                        let resource = "photo-\(p)-\(i)"
                        media = [TestPhoto(id: Int64(p) << 32 | Int64(i), resourceIds: [resource])]
                        try tx.mediaReferences.set(
                            MediaReferenceRecord(
                                resourceId: resource, parent: .message(id), fileReference: Data(repeating: 7, count: 24),
                                obtainedAt: Int64(timestamp(peer: p, message: i))))
                    }
                    batch.append(Message(id: id, timestamp: timestamp(peer: p, message: i), text: text, media: media))
                }
                try tx.messages.add(batch)
            }
        }
    }

    /// The stored message ids of `peer`, ascending.
    static func ids(_ postbox: Postbox, _ peer: PeerId) throws -> [Int32] {
        try postbox.readSync { tx in
            var out: [Int32] = []
            try tx.messages.scanIndexes(peer: peer, newestFirst: false) { index, _ in
                out.append(index.id.id)
                return true
            }
            return out.sorted()
        }
    }
}
