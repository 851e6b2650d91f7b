import CloudCore
import CloudProtocol
import Foundation
import Postbox

/// History-retention child-process commands (SIGKILL-midway retention tests):
/// - `retention-fixture <db> <peers> <perPeer>`: a synced-looking store — messages one hour
///   apart, peers interleaved in time, every other message with a cloud photo and its file
///   reference (parent: the message).
/// - `retention-run <db> <maxPerPeer> <keepNewest> <batchSize> [sizeLimit]`: one retention run,
///   printing `done <messagesRemoved>`. A parent SIGKILLs it at a random point.
let retentionCommands: [String: TestkitCommand] = [
    "retention-fixture": { args in
        guard args.count == 3, let peers = Int(args[1]), let perPeer = Int(args[2]) else {
            throw TestkitError.usage("retention-fixture <db> <peers> <perPeer>")
        }
        CloudCoreTypes.registerAll()
        let postbox = try Postbox(path: args[0])
        let base: Int64 = 1_600_000_000
        for p in 0..<peers {
            try postbox.transactionSync { tx in
                let peer = PeerId(Int64(1000 + p))
                try tx.peers.set(PostboxPeer(id: peer, category: [.privateChat, .group, .channel][p % 3], title: "peer \(p)"))
                var messages: [PostboxMessage] = []
                for i in 1...perPeer {
                    let ts = base + Int64(i) * 3600 + Int64(p)
                    var media: [any Media] = []
                    if i % 2 == 0 {
                        let fileId = Int64(p) * 1_000_000 + Int64(i)
                        let location = FileLocation(type: .photo, id: fileId, accessHash: fileId &* 31, dcId: 1, thumbSize: "m")
                        let file = CloudFileDescriptor(
                            resourceId: location.stableKey, location: location, size: 50_000, contentType: .photo,
                            mimeType: "image/jpeg", fileReference: FileReference(Data(repeating: 9, count: 24)), referenceObtainedAt: ts)
                        media = [
                            CloudPhotoMedia(
                                photoId: fileId, accessHash: fileId, dcId: 1, date: ts, sizes: [CloudPhotoSize(type: "m", width: 800, height: 600, file: file)])
                        ]
                    }
                    messages.append(
                        PostboxMessage(id: MessageId(peerId: peer, id: Int32(i)), timestamp: Int32(ts), text: "message \(i) of peer \(p)", media: media))
                }
                try tx.messages.add(messages)
                for m in messages {
                    for record in CloudMediaConversion.referenceRecords(of: m) { try tx.mediaReferences.set(record) }
                }
            }
        }
        emit("done \(peers * perPeer)")
    },
    "retention-run": { args in
        guard args.count >= 4, let maxPerPeer = Int(args[1]), let keep = Int(args[2]), let batch = Int(args[3]) else {
            throw TestkitError.usage("retention-run <db> <maxPerPeer> <keepNewest> <batchSize> [sizeLimit]")
        }
        CloudCoreTypes.registerAll()
        let postbox = try Postbox(path: args[0])
        var policy = HistoryRetentionPolicy(keepNewest: keep, batchSize: batch, vacuumStepBytes: 256 << 10, walSizeLimit: 64 << 20)
        policy.maxMessagesPerPeer = maxPerPeer > 0 ? maxPerPeer : nil
        policy.sizeLimit = args.count > 4 ? Int64(args[4]) : nil
        let report = try HistoryRetention(postbox: postbox, policy: policy).run()
        emit("done \(report.messagesRemoved)")
    },
]
