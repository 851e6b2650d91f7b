import CloudCore
import Foundation
import Postbox

/// The `revalidate-references` kind: refreshes the file references that expired or expire
/// within `window`, one request per parent entity (messages of one peer batched into
/// `getMessages` of ≤ `batchSize` ids), through the account's shared `RevalidationContext` — so
/// a download or another `jobrun` process revalidating the same parent waits for or reuses this
/// run's answer instead of calling again.
///
/// Outcomes per parent kind are the report's counters (`refreshed_<kind>`, `gone_<kind>`,
/// `failed_<kind>`) and the `revalidation_parents{parent_kind,outcome}` samples. The cloud
/// failing is `JobError.cloudUnavailable` (exit 69); the next run retries. Logs carry parent
/// keys and counts only, never reference bytes.
public struct RevalidateReferencesJob: JobKindRunner {
    public init() {}

    /// Parameter words (`ParamWords.parentKinds`) → Postbox parent kinds.
    static let kinds: [String: MediaParent.Kind] = [
        "message": .message, "avatar": .peerAvatar, "stickerSet": .stickerSet, "wallpaper": .wallpaper, "story": .story,
    ]

    public func run(_ context: JobContext) async throws -> JobReport {
        let log = context.logger
        let client = try context.account.cloudClient()
        let options = Self.options(context.params, referenceTTL: client.config.referenceTTL, dryRun: context.dryRun)
        if options.window >= options.referenceTTL {
            log.warning("revalidate.window_covers_lifetime", ["window_s": .double(options.window), "reference_ttl_s": .double(options.referenceTTL),
                                                              "hint": .string("every reference is due on every run; make window shorter than referenceTTL")])
        }
        let revalidation = try context.account.revalidation()
        let pass = ReferenceRevalidationPass(context: revalidation, postbox: context.account.postbox, options: options)
        let report = try await pass.run()
        try Task.checkCancellation()

        var counters: [String: Int64] = [
            "references_scanned": Int64(report.referencesScanned), "references_selected": Int64(report.referencesSelected),
            "parents_selected": Int64(report.parentsSelected), "parents_refreshed": Int64(report.refreshed),
            "parents_gone": Int64(report.gone), "parents_failed": Int64(report.failed),
            "references_refreshed": Int64(report.referencesRefreshed), "revalidation_calls": Int64(report.calls),
            "parents_reused": Int64(report.reusedFromOtherProcess),
        ]
        var samples: [MetricSample] = []
        for kind in MediaParent.Kind.allCases where options.parentKinds.contains(kind) {
            let c = report.byKind[kind] ?? ReferenceRevalidationPass.KindCounts()
            counters["refreshed_\(kind)"] = Int64(c.refreshed)
            counters["gone_\(kind)"] = Int64(c.gone)
            counters["failed_\(kind)"] = Int64(c.failed)
            for (outcome, value) in [("refreshed", c.refreshed), ("gone", c.gone), ("failed", c.failed)] {
                samples.append(MetricSample("revalidation_parents", labels: ["parent_kind": "\(kind)", "outcome": outcome], value: Double(value),
                                            help: "Parent entities revalidated in the last run, by kind and outcome"))
            }
            if c.parents > 0 {
                var fields: [String: LogValue] = ["parent_kind": .string("\(kind)")]
                fields["parents"] = .int(Int64(c.parents))
                fields["refreshed"] = .int(Int64(c.refreshed))
                fields["gone"] = .int(Int64(c.gone))
                fields["failed"] = .int(Int64(c.failed))
                fields["references_refreshed"] = .int(Int64(c.referencesRefreshed))
                log.info("revalidate.kind", fields)
            }
        }
        for f in report.failures { log.warning("revalidate.parent_failed", ["parent": .string(f.parent), "error": .string(f.reason)]) }
        log.info("revalidate.report", counters.mapValues { .int($0) }.merging(["dry_run": .bool(options.dryRun)]) { a, _ in a })

        let summary = options.dryRun
            ? ["would revalidate \(report.parentsSelected) parents holding \(report.referencesSelected) references (dry run: nothing sent)"]
            : ["revalidated \(report.parentsSelected) parents in \(report.calls) call\(report.calls == 1 ? "" : "s"): \(report.refreshed) refreshed (\(report.referencesRefreshed) references), \(report.gone) gone, \(report.failed) failed"
               + (report.reusedFromOtherProcess > 0 ? "; \(report.reusedFromOtherProcess) reused from another process" : "")]
        let jobReport = JobReport(counters: counters, samples: samples, summary: summary,
                                  details: ["failed_parents": .array(report.failures.map { .object(["parent": .string($0.parent), "reason": .string($0.reason)]) })])
        if let failure = report.cloudFailure {
            throw JobError.cloudUnavailable("account \(context.account.id): cloud unavailable: \(failure) (\(report.refreshed) of \(report.parentsSelected) parents refreshed before it)",
                                            report: jobReport)
        }
        if report.parentsSelected > 0, report.failed == report.parentsSelected {
            throw JobError("account \(context.account.id): every revalidation failed; first: \(report.failures.first?.reason ?? "?")", report: jobReport)
        }
        return jobReport
    }

    /// The job's `params` as pass options.
    static func options(_ p: JobParams, referenceTTL: Double, dryRun: Bool) -> ReferenceRevalidationPass.Options {
        var o = ReferenceRevalidationPass.Options()
        o.window = p.duration("window").map(Self.seconds) ?? 2400
        o.referenceTTL = referenceTTL
        o.parentKinds = Set((p.strings("parentKinds") ?? ParamWords.parentKinds).compactMap { kinds[$0] })
        o.batchSize = Int(p.int("batchSize") ?? 100)
        o.requestRate = p.double("requestRate")
        o.concurrency = Int(p.int("concurrency") ?? 4)
        o.maxParents = Int(p.int("maxParents") ?? 10_000)
        o.requestTimeout = p.duration("requestTimeout").map(Self.seconds) ?? 30
        o.dryRun = dryRun
        return o
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
