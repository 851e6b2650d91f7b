import CloudProtocol
import Foundation
import Postbox

/// Commits one page of history in one Postbox transaction: the messages, their file
/// references, the peer's sync state and hole changes together, so a crash loses at most the
/// page being fetched and the next run resumes from what was committed.
struct HistoryPageWriter: Sendable {
    let postbox: Postbox

    /// What one page changes besides its messages.
    struct Page: Sendable {
        var peerId: PeerId
        var messages: [PostboxMessage]
        /// New newest synced id (only raised, never lowered).
        var newestId: Int32?
        /// Messages received from the cloud for this page (stored or not).
        var fetched: Int
        var addHole: ClosedRange<Int32>?
        var fillHole: ClosedRange<Int32>?
        var now: Int64
    }

    /// Returns the number of reference records written.
    func commit(_ page: Page) async throws -> Int {
        try await postbox.transaction { tx in
            var references = 0
            if !page.messages.isEmpty {
                try tx.messages.add(page.messages)
                for message in page.messages {
                    for record in CloudMediaConversion.referenceRecords(of: message) {
                        try tx.mediaReferences.set(record)
                        references += 1
                    }
                }
            }
            var state = try tx.syncStates.get(page.peerId) ?? PeerSyncState()
            if let newest = page.newestId { state.maxSyncedId = max(state.maxSyncedId, newest) }
            state.lastSyncAt = page.now
            state.totalFetched += Int64(page.fetched)
            try tx.syncStates.set(page.peerId, state)
            if let hole = page.addHole { try tx.holes.add(peer: page.peerId, range: hole) }
            if let fill = page.fillHole { try tx.holes.fill(peer: page.peerId, range: fill) }
            return references
        }
    }

    /// Stores the peers of one chat-list page (fresh avatars and their references).
    func storePeers(_ peers: [PostboxPeer]) async throws -> Int {
        try await postbox.transaction { tx in
            var references = 0
            for peer in peers {
                try tx.peers.set(peer)
                for record in CloudMediaConversion.referenceRecords(of: peer) {
                    try tx.mediaReferences.set(record)
                    references += 1
                }
            }
            return references
        }
    }
}
