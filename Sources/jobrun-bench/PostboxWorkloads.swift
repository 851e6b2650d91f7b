import Foundation
import Postbox
import ServerFixtures

/// A Postbox benchmark's peer: the same four workloads written by hand against the storage
/// engine, with the same schema and statements (`RawStore` on SQLite, `RawPostgres` through
/// postgres-nio).
protocol RawPostboxPeer {
    func bulkInsert(messages: Int, peers: Int) throws
    func smallTransactions(_ n: Int) throws
    /// Reads each (peer, id) and returns how many were found.
    func pointReads(_ ids: [(Int64, Int32)]) throws -> Int
    /// Scans one peer's messages and returns how many rows it saw.
    func scan(peer: Int64) throws -> Int
}

extension RawStore: RawPostboxPeer {}
extension RawPostgres: RawPostboxPeer {}

/// The Postbox workloads, each timed on the peer and on Postbox over whatever `ValueBox` it was
/// opened on, in the order asked for: one bulk transaction, many single-row transactions, point
/// reads by message id, and a range scan of one peer.
struct PostboxWorkloads {
    var messages: Int
    var smallTransactions: Int
    var reads: Int
    var peers: Int

    struct Timing {
        var name: String
        var ops: Int
        var raw: Double
        var postbox: Double
    }

    /// Each workload's faster time on each side, of the rounds `earlier` (none yet when empty)
    /// and `round`.
    static func faster(_ earlier: [Timing], _ round: [Timing]) -> [Timing] {
        earlier.isEmpty ? round : zip(earlier, round).map { .init(name: $0.name, ops: $0.ops, raw: min($0.raw, $1.raw), postbox: min($0.postbox, $1.postbox)) }
    }

    func run(raw: some RawPostboxPeer, postbox: Postbox, peerFirst: Bool = true) throws -> [Timing] {
        try run(raw: raw, product: PostboxSide(postbox: postbox), peerFirst: peerFirst)
    }

    /// The workloads on two sides, `raw` the peer and `product` the side measured against it
    /// (Postbox against raw SQLite, or an encrypted Postbox against a plain one).
    func run(raw: some RawPostboxPeer, product: some RawPostboxPeer, peerFirst: Bool = true) throws -> [Timing] {
        let perPeer = messages / peers
        var timings: [Timing] = []
        /// Times both sides of one workload, the peer first unless asked otherwise.
        func pair(_ peer: () throws -> Void, _ product: () throws -> Void) throws -> (raw: Double, postbox: Double) {
            if peerFirst {
                let r = try measure(peer)
                return (r, try measure(product))
            }
            let b = try measure(product)
            return (try measure(peer), b)
        }

        let bulk = try pair {
            try raw.bulkInsert(messages: messages, peers: peers)
        } _: {
            try product.bulkInsert(messages: messages, peers: peers)
        }
        timings.append(Timing(name: "bulk insert \(messages) messages, 1 transaction", ops: messages, raw: bulk.raw, postbox: bulk.postbox))

        let small = try pair {
            try raw.smallTransactions(smallTransactions)
        } _: {
            try product.smallTransactions(smallTransactions)
        }
        timings.append(Timing(name: "\(smallTransactions) single-row transactions", ops: smallTransactions, raw: small.raw, postbox: small.postbox))

        var rng = SeededGenerator(seed: 42)
        let ids = (0..<reads).map { _ in (Int64(rng.next() % UInt64(peers)) + 1, Int32(rng.next() % UInt64(perPeer)) + 1) }
        var rawFound = 0
        var boxFound = 0
        let pointReads = try pair {
            rawFound = try raw.pointReads(ids)
        } _: {
            boxFound = try product.pointReads(ids)
        }
        guard rawFound == reads && boxFound == reads else {
            throw BenchError("every read must find its message (peer \(rawFound), measured \(boxFound))")
        }
        timings.append(Timing(name: "\(reads) point reads by message id", ops: reads, raw: pointReads.raw, postbox: pointReads.postbox))

        var rawRows = 0
        var boxRows = 0
        let scan = try pair {
            rawRows = try raw.scan(peer: 1)
        } _: {
            boxRows = try product.scan(peer: 1)
        }
        guard rawRows == perPeer && boxRows == perPeer else { throw BenchError("scans must see every row (peer \(rawRows), measured \(boxRows))") }
        timings.append(Timing(name: "range scan of \(perPeer) rows", ops: perPeer, raw: scan.raw, postbox: scan.postbox))
        return timings
    }
}

/// The Postbox side of the workloads, on whatever store it was opened on.
struct PostboxSide: RawPostboxPeer {
    var postbox: Postbox

    func bulkInsert(messages: Int, peers: Int) throws {
        try postbox.transactionSync { tx in
            let table = try tx.messages
            for i in 0..<messages {
                let (peer, id) = (Int64(i % peers + 1), Int32(i / peers + 1))
                try table.add([Message(id: MessageId(peerId: PeerId(peer), id: id), timestamp: 1_600_000_000 + id, text: benchText(i))])
            }
        }
    }

    func smallTransactions(_ n: Int) throws {
        for i in 0..<n {
            try postbox.transactionSync { tx in
                try tx.peers.set(Peer(id: PeerId(Int64(i)), category: .group, title: "peer \(i)"))
            }
        }
    }

    func pointReads(_ ids: [(Int64, Int32)]) throws -> Int {
        try postbox.readSync { tx in
            var found = 0
            let table = try tx.messages
            for (peer, id) in ids {
                if let m = try table.get(MessageId(peerId: PeerId(peer), id: id)), !m.text.isEmpty { found += 1 }
            }
            return found
        }
    }

    func scan(peer: Int64) throws -> Int {
        try postbox.readSync { tx in
            var n = 0
            try tx.messages.scan(peer: PeerId(peer), newestFirst: false) { m in
                if m.timestamp > 0 { n += 1 }
                return true
            }
            return n
        }
    }
}
