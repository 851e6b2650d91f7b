import Foundation
import Postbox

/// The `history-retention` kind: keeps the account's Postbox bounded — history older than an
/// age, beyond a count per peer, or (oldest first across peers) whatever brings the database
/// under a size limit, always keeping the newest messages of every peer — and prunes finished
/// upload items. Trimmed ranges become holes `sync-history` can fetch again on request. The
/// work is `HistoryRetention` (Postbox); this type only reads the parameters.
public struct HistoryRetentionJob: JobKindRunner {
    public init() {}

    private static let day: Int64 = 86_400
    private static let MiB: Int64 = 1 << 20

    /// The `params:` this kind accepts.
    public static let schema = JobParamsSchema(kind: "history-retention", params: [
        ParamSpec("maxAge", .duration, range: 3600...(36_500 * 86_400),
                  doc: "drop messages older than this (default: no age limit)"),
        ParamSpec("maxMessagesPerPeer", .int, range: 1...1_000_000_000,
                  doc: "keep at most this many messages per peer (default: no count limit)"),
        ParamSpec("maxSize", .byteSize, range: 65_536...1e15,
                  doc: "drop the oldest messages across peers until the database is under this size (default: no size limit)"),
        ParamSpec("keepNewest", .int, default: .int(100), range: 0...1_000_000,
                  doc: "messages of every peer never dropped, newest first"),
        ParamSpec("excludePeers", .list(.int), default: .list([]),
                  doc: "peer ids whose history is never dropped"),
        ParamSpec("excludePeerCategories", .list(.oneOf(ParamWords.peerCategories)), default: .list([]),
                  doc: "peer categories whose history is never dropped (private, group, channel)"),
        ParamSpec("uploadRetention", .duration, default: .duration(.seconds(30 * day)), range: 0...(3650 * 86_400),
                  doc: "sent and failed upload items (and their parts) older than this are removed"),
        ParamSpec("batchSize", .int, default: .int(2_000), range: 10...100_000,
                  doc: "messages per write transaction (bounds how long other writers wait)"),
        ParamSpec("vacuumStep", .byteSize, default: .bytes(8 * MiB), range: 4096...1e10,
                  doc: "free space returned to the file system per step (one short transaction each)"),
        ParamSpec("walLimit", .byteSize, default: .bytes(64 * MiB), range: 0...1e11,
                  doc: "the WAL file is cut back to this size after checkpoints"),
        ParamSpec("dryRun", .bool, default: .bool(false),
                  doc: "report what would be dropped and why, change nothing"),
    ])

    public func run(_ context: JobContext) async throws -> JobReport {
        let p = context.params
        var policy = HistoryRetentionPolicy()
        policy.maxAge = p.duration("maxAge").map { $0.components.seconds }
        policy.maxMessagesPerPeer = p.int("maxMessagesPerPeer").map(Int.init)
        policy.sizeLimit = p.bytes("maxSize")
        guard policy.maxAge != nil || policy.maxMessagesPerPeer != nil || policy.sizeLimit != nil else {
            throw JobError.config("job \(context.job.name): history-retention needs at least one of maxAge, maxMessagesPerPeer, maxSize")
        }
        policy.keepNewest = Int(p.int("keepNewest") ?? 100)
        policy.excludedPeers = Set((p.ints("excludePeers") ?? []).map(PeerId.init))
        let classes = p.strings("excludePeerCategories") ?? []
        policy.excludedCategories = Set(PeerCategory.allCases.filter { classes.contains($0.storageClass) })
        policy.uploadRetention = p.duration("uploadRetention").map { $0.components.seconds }
        policy.batchSize = Int(p.int("batchSize") ?? 2_000)
        policy.vacuumStepBytes = p.bytes("vacuumStep") ?? 8 * Self.MiB
        policy.walSizeLimit = p.bytes("walLimit") ?? 64 * Self.MiB
        policy.dryRun = context.dryRun || (p.bool("dryRun") ?? false)
        try Task.checkCancellation()
        return try await HistoryRetentionRun.run(policy, account: context.account, logger: context.logger)
    }
}
