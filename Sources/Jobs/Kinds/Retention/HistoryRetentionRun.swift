import Foundation
import Postbox

/// One account's history-retention run: the in-use rule from its MediaBox and upload queue,
/// the engine off the cooperative pool, the staged files of pruned upload items, and the report.
enum HistoryRetentionRun {
    static func run(_ policy: HistoryRetentionPolicy, account: AccountContext) async throws -> JobReport {
        let inUse = try await RetentionInUse.predicate(mediaBox: account.mediaBox, postbox: account.postbox)
        let engine = HistoryRetention(postbox: account.postbox, policy: policy, inUse: inUse)
        let report = try await engine.runDetached()

        // Staged copies of pruned items: only files directly in this account's uploads
        // directory, removed beneath its descriptor (a link there is removed, never followed).
        let prefix = account.paths.uploads.path + "/"
        var stagedRemoved: Int64 = 0
        let staged = report.prunedStagedFiles.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        if !staged.isEmpty, let uploads = try? account.paths.uploadsDirectory(create: false) {
            for name in staged where !name.contains("/") && (try? uploads.removeFile(name)) == true { stagedRemoved += 1 }
        }

        var counters = RetentionReporting.counters(report)
        counters["staged_files_removed"] = stagedRemoved
        return JobReport(
            counters: counters, samples: RetentionReporting.samples(report),
            summary: RetentionReporting.summary(report), details: RetentionReporting.details(report, listLimit: policy.listLimit))
    }
}
