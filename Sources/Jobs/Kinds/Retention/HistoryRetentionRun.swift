import Foundation
import Postbox

/// One account's history-retention run: the in-use rule from its MediaBox and upload queue,
/// the engine off the cooperative pool, the staged files of pruned upload items, and the report.
enum HistoryRetentionRun {
    static func run(_ policy: HistoryRetentionPolicy, account: AccountContext) async throws -> JobReport {
        let inUse = try await RetentionInUse.predicate(mediaBox: account.mediaBox, postbox: account.postbox)
        let engine = HistoryRetention(postbox: account.postbox, policy: policy, inUse: inUse)
        let report = try await engine.runDetached()

        // Staged copies of pruned items: only inside this account's uploads directory.
        let uploads = account.paths.uploads.path + "/"
        var stagedRemoved: Int64 = 0
        for path in report.prunedStagedFiles where path.hasPrefix(uploads) && unlink(path) == 0 { stagedRemoved += 1 }

        var counters = RetentionReporting.counters(report)
        counters["staged_files_removed"] = stagedRemoved
        return JobReport(
            counters: counters, samples: RetentionReporting.samples(report),
            summary: RetentionReporting.summary(report), details: RetentionReporting.details(report, listLimit: policy.listLimit))
    }
}
