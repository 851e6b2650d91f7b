import Foundation
import Postbox

/// Postbox child-process commands (`<db>`: a file path or a `pg:` store, see `openPostbox`):
/// - `write-transactions <db> <firstPeerId> <count>`: `count` write transactions of one peer each.
/// - `open-write-close <db> <firstPeerId> <count>`: `count` times opens the store, writes one
///   peer and closes it again, as `count` short-lived processes (cron runs) would.
/// - `big-transaction <db> <rows>`: commits a marker peer (id 1), then adds `rows` messages in
///   one transaction, printing `midway` halfway through and then stalling, so the test can
///   SIGKILL it with the transaction open.
/// - `convert-legacy-messages <db> <batchSize> <stallAtBatch>`: opens a store holding legacy
///   message rows, rewriting them in batches of `batchSize`; inside batch `stallAtBatch` (0-based,
///   the earlier ones committed) prints `midway` and stalls with the batch open until killed.
let postboxCommands: [String: TestkitCommand] = [
    "write-transactions": { args in
        guard args.count == 3, let first = Int64(args[1]), let count = Int(args[2]) else {
            throw TestkitError.usage("write-transactions <db> <firstPeerId> <count>")
        }
        let postbox = try openPostbox(args[0])
        for i in 0..<count {
            try postbox.transactionSync { tx in
                try tx.peers.set(Peer(id: PeerId(first + Int64(i)), category: .group, title: "peer \(first + Int64(i))"))
            }
        }
        emit("done \(count)")
    },
    "open-write-close": { args in
        guard args.count == 3, let first = Int64(args[1]), let count = Int(args[2]) else {
            throw TestkitError.usage("open-write-close <db> <firstPeerId> <count>")
        }
        for i in 0..<count {
            let id = first + Int64(i)
            // The store closes when its last reference goes, at the end of each iteration.
            let postbox = try openPostbox(args[0])
            try postbox.transactionSync { tx in try tx.peers.set(Peer(id: PeerId(id), category: .group, title: "peer \(id)")) }
        }
        emit("done \(count)")
    },
    "big-transaction": { args in
        guard args.count == 2, let rows = Int(args[1]) else { throw TestkitError.usage("big-transaction <db> <rows>") }
        let postbox = try openPostbox(args[0])
        try postbox.transactionSync { tx in
            try tx.peers.set(Peer(id: PeerId(1), category: .contact, title: "committed before"))
        }
        try postbox.transactionSync { tx in
            for i in 0..<rows {
                try tx.messages.add([Message(id: MessageId(peerId: PeerId(2), id: Int32(i + 1)), timestamp: Int32(i), text: "row \(i)")])
                if i == rows / 2 {
                    // A read of the table: a store that holds writes back (PostgreSQL) sends
                    // them now, so the server holds half a transaction when the kill comes.
                    _ = try tx.messages.count(peer: PeerId(2))
                    emit("midway")
                    // Stall with the transaction open until killed.
                    while true { sleep(1) }
                }
            }
        }
    },
    "convert-legacy-messages": { args in
        guard args.count == 3, let batchSize = Int(args[1]), let stallAt = Int(args[2]) else {
            throw TestkitError.usage("convert-legacy-messages <db> <batchSize> <stallAtBatch>")
        }
        let conversion = MessageRecordConversion(batchSize: batchSize) { committed in
            guard committed == stallAt else { return }
            emit("midway")
            while true { sleep(1) }
        }
        _ = try openPostbox(args[0], conversion: conversion)
        emit("converted")
    },
]
