import ArgumentParser
import Foundation
import Postbox

/// `jobrun demo`: shows what the product does end to end on a temporary data root.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the product end to end on an embedded default (temporary root unless --root)."
    )

    @Option(help: "Data root to use (default: a temporary directory, removed afterwards).")
    var root: String?

    func run() async throws {
        let rootPath = root ?? (NSTemporaryDirectory() + "jobrun-demo-\(getpid())")
        defer { if root == nil { try? FileManager.default.removeItem(atPath: rootPath) } }
        let dbPath = rootPath + "/account-0/postbox/db/db.sqlite"
        let postbox = try Postbox(path: dbPath)
        let peers = 20
        let perPeer = 500
        let start = Date()
        try await postbox.transaction { tx in
            for p in 1...peers {
                let peer = PeerId(Int64(p))
                try tx.peers.set(Peer(id: peer, category: PeerCategory.allCases[p % PeerCategory.allCases.count], title: "chat \(p)"))
                try tx.messages.add((1...perPeer).map { Message(id: MessageId(peerId: peer, id: Int32($0)), timestamp: Int32(1_700_000_000 + $0 * 60), text: "message \($0)") })
                try tx.syncStates.set(peer, PeerSyncState(maxSyncedId: Int32(perPeer), lastSyncAt: Int64(Date().timeIntervalSince1970), totalFetched: Int64(perPeer)))
            }
        }
        let elapsed = Date().timeIntervalSince(start)
        let (peerCount, messageCount) = try await postbox.read { tx in
            (try tx.peers.count(), try (1...peers).reduce(0) { $0 + (try tx.messages.count(peer: PeerId(Int64($1)))) })
        }
        print("jobrun demo — Postbox storage engine (the jobs arrive with their issues)")
        print("  root:       \(rootPath)")
        print("  database:   \(dbPath) (\(postbox.fileSize()) bytes)")
        print("  stored:     \(peerCount) peers, \(messageCount) messages in one transaction, \(String(format: "%.0f", elapsed * 1000)) ms")
        print("  integrity:  \(try postbox.integrityCheck().joined(separator: ", "))")
    }
}
