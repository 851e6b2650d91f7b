import Foundation
import MediaBox
import Postbox

/// The `history-retention` kind: keeps the account's Postbox bounded — history older than an
/// age, beyond a count per peer, or (oldest first across peers) whatever brings the database
/// under a size limit, always keeping the newest messages of every peer — and prunes finished
/// upload items. Trimmed ranges become holes `sync-history` can fetch again on request. The
/// work is `HistoryRetention` (Postbox); this type only reads the parameters.
public struct HistoryRetentionJob: JobKind {
    public static let name = "history-retention"
    public static let summary = "keep the Postbox bounded: history past an age, a count per peer or a size limit becomes holes"
    public static let reportEvent = "retention.report"
    public static let usesCloud = false
    /// The demo cloud's chats hold 40 messages each: half of every chat's history is dropped.
    public static let demo = KindDemo(params: ["maxMessagesPerPeer: 20", "keepNewest: 10"])

    public static let maxAge = OptionalParam<Duration>(
        "maxAge", range: 3600...(36_500 * 86_400), doc: "drop messages older than this (default: no age limit)")
    public static let maxMessagesPerPeer = OptionalParam<Int>(
        "maxMessagesPerPeer", range: 1...1_000_000_000, doc: "keep at most this many messages per peer (default: no count limit)")
    public static let maxSize = OptionalParam<ByteCount>(
        "maxSize", range: 65_536...1e15,
        doc: "drop the oldest messages across peers until the database is under this size (default: no size limit)")
    public static let keepNewest = Param<Int>(
        "keepNewest", default: 100, range: 0...1_000_000, doc: "messages of every peer never dropped, newest first")
    public static let excludePeers = Param<[Int64]>("excludePeers", default: [], doc: "peer ids whose history is never dropped")
    public static let excludePeerCategories = Param<Set<PeerStorageClass>>(
        "excludePeerCategories", default: [], doc: "peer categories whose history is never dropped")
    public static let uploadRetention = Param<Duration>(
        "uploadRetention", default: .days(30), range: 0...(3650 * 86_400),
        doc: "sent and failed upload items (and their parts) older than this are removed")
    public static let batchSize = Param<Int>(
        "batchSize", default: 2_000, range: 10...100_000, doc: "messages per write transaction (bounds how long other writers wait)")
    public static let vacuumStep = Param<ByteCount>(
        "vacuumStep", default: .mebibytes(8), range: 4096...1e10,
        doc: "free space returned to the file system per step (one short transaction each)")
    public static let walLimit = Param<ByteCount>(
        "walLimit", default: .mebibytes(64), range: 0...1e11, doc: "the WAL file is cut back to this size after checkpoints")
    public static let dryRun = Param<Bool>("dryRun", default: false, doc: "report what would be dropped and why, change nothing")

    public static let parameters: [any JobParameter] = [
        maxAge, maxMessagesPerPeer, maxSize, keepNewest, excludePeers, excludePeerCategories, uploadRetention, batchSize,
        vacuumStep, walLimit, dryRun,
    ]

    public init() {}

    /// The policy of the parameters' defaults (no limit set): for benchmarks that set their own.
    public static var defaultPolicy: HistoryRetentionPolicy {
        policy(SectionSchema(HistoryRetentionJob()).validate(nil, fallback: SourcePosition(file: "", line: 1, column: 1)).0, dryRun: false)
    }

    /// Retention needs a limit: without one it would keep everything and only cost a pass.
    public static func check(_ p: JobParams) -> [JobFileError] {
        guard p[maxAge] == nil && p[maxMessagesPerPeer] == nil && p[maxSize] == nil else { return [] }
        return [
            JobFileError(
                p.fallback, "history-retention needs at least one of maxAge, maxMessagesPerPeer, maxSize",
                expected: "maxAge, maxMessagesPerPeer or maxSize")
        ]
    }

    /// The retention policy of validated parameters: every field set from a parameter.
    public static func policy(_ p: JobParams, dryRun forced: Bool) -> HistoryRetentionPolicy {
        var policy = HistoryRetentionPolicy(
            keepNewest: p[keepNewest], batchSize: p[batchSize], vacuumStepBytes: p[vacuumStep].bytes, walSizeLimit: p[walLimit].bytes)
        policy.maxAge = p[maxAge]?.wholeSeconds
        policy.maxMessagesPerPeer = p[maxMessagesPerPeer]
        policy.sizeLimit = p[maxSize]?.bytes
        policy.excludedPeers = Set(p[excludePeers].map(PeerId.init))
        let classes = p[excludePeerCategories]
        policy.excludedCategories = Set(PeerCategory.allCases.filter { classes.contains(PeerStorageClass($0)) })
        policy.uploadRetention = p[uploadRetention].wholeSeconds
        policy.dryRun = forced || p[dryRun]
        return policy
    }

    public func run(_ context: JobContext) async throws -> JobReport {
        let policy = Self.policy(context.params, dryRun: context.dryRun)
        try Task.checkCancellation()
        return try await HistoryRetentionRun.run(policy, account: context.account)
    }
}
