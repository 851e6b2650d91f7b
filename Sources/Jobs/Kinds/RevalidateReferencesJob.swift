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
public struct RevalidateReferencesJob: JobKind {
    public static let name = "revalidate-references"
    public static let summary = "refresh file references that expired or expire soon, one request per parent entity"
    public static let reportEvent = "revalidate.report"
    public static let usesCloud = true
    /// The window is shorter than the demo cloud's one-hour reference lifetime (a longer one is
    /// clamped); the set-up moves the stored references an hour into the past, so every one of
    /// them is due.
    public static let demo = KindDemo(params: ["window: 40m"], setup: .expireReferences)

    public static let window = Param<Duration>(
        "window", default: .minutes(40), range: 0...(30 * 86_400),
        doc: "refresh references that expire within this window (or already have)")
    public static let parentKinds = Param<Set<MediaParent.Kind>>(
        "parentKinds", default: Set(MediaParent.Kind.allCases), doc: "parent entities refreshed")
    public static let batchSize = Param<Int>(
        "batchSize", default: 100, range: 1...100, doc: "messages of one peer per call (protocol limit 100)")
    public static let requestRate = Param<Double>(
        "requestRate", default: 10, range: 0.1...1000, doc: "revalidation calls per second, at most")
    public static let concurrency = Param<Int>("concurrency", default: 4, range: 1...64, doc: "revalidation calls in flight")
    public static let maxParents = Param<Int>(
        "maxParents", default: 10_000, range: 1...10_000_000, doc: "parent entities refreshed per run, at most")
    public static let requestTimeout = Param<Duration>(
        "requestTimeout", default: .seconds(30), range: 1...3600, doc: "a waiter gets an error after this long, never stalls")

    public static let parameters: [any JobParameter] = [
        window, parentKinds, batchSize, requestRate, concurrency, maxParents, requestTimeout,
    ]

    public init() {}

    public func run(_ context: JobContext) async throws -> JobReport {
        let log = context.logger
        let client = try context.account.cloudClient()
        let options = Self.options(context.params, referenceTTL: client.config.referenceTTL, dryRun: context.dryRun)
        if options.window >= options.referenceTTL {
            log.warning(
                "revalidate.window_covers_lifetime",
                [
                    "window_s": .double(options.window), "reference_ttl_s": .double(options.referenceTTL),
                    "hint": .string("every reference is due on every run; make window shorter than referenceTTL"),
                ])
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
        var sampled: Set<String> = []
        for kind in MediaParent.Kind.allCases where options.parentKinds.contains(kind) {
            let c = report.byKind[kind] ?? ReferenceRevalidationPass.KindCounts()
            counters["refreshed_\(kind)"] = Int64(c.refreshed)
            counters["gone_\(kind)"] = Int64(c.gone)
            counters["failed_\(kind)"] = Int64(c.failed)
            sampled.formUnion(["refreshed_\(kind)", "gone_\(kind)", "failed_\(kind)"])
            for (outcome, value) in [("refreshed", c.refreshed), ("gone", c.gone), ("failed", c.failed)] {
                samples.append(
                    MetricSample(
                        "revalidation_parents", labels: ["parent_kind": "\(kind)", "outcome": outcome], value: Double(value),
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

        let summary =
            options.dryRun
            ? ["would revalidate \(report.parentsSelected) parents holding \(report.referencesSelected) references (dry run: nothing sent)"]
            : [
                "revalidated \(report.parentsSelected) parents in \(report.calls) call\(report.calls == 1 ? "" : "s"): \(report.refreshed) refreshed (\(report.referencesRefreshed) references), \(report.gone) gone, \(report.failed) failed"
                    + (report.reusedFromOtherProcess > 0 ? "; \(report.reusedFromOtherProcess) reused from another process" : "")
            ]
        var jobReport = JobReport(
            counters: counters, samples: samples, summary: summary,
            details: [
                "dry_run": .bool(options.dryRun),
                "failed_parents": .array(report.failures.map { .object(["parent": .string($0.parent), "reason": .string($0.reason)]) }),
                "time_ms": .object(Self.timeBreakdown(report)),
            ])
        jobReport.sampledCounters = sampled
        if let failure = report.cloudFailure {
            throw JobError.cloudUnavailable(
                "account \(context.account.id): cloud unavailable: \(failure) (\(report.refreshed) of \(report.parentsSelected) parents refreshed before it)",
                report: jobReport)
        }
        if report.parentsSelected > 0, report.failed == report.parentsSelected {
            throw JobError("account \(context.account.id): every revalidation failed; first: \(report.failures.first?.reason ?? "?")", report: jobReport)
        }
        return jobReport
    }

    /// Where the pass's time went, in milliseconds: the whole pass, choosing the due parents,
    /// each step of the units (`RevalidationTimes`), and the tail spent on units put aside
    /// because another process was calling for them (with how many there were).
    static func timeBreakdown(_ report: ReferenceRevalidationPass.Report) -> [String: LogValue] {
        func ms(_ seconds: Double) -> LogValue { .int(Int64((seconds * 1000).rounded())) }
        var out: [String: LogValue] = ["pass": ms(report.seconds), "select": ms(report.selectSeconds), "set_aside_tail": ms(report.setAsideSeconds)]
        for step in report.times.steps { out[step.name] = ms(step.seconds) }
        out["units_set_aside"] = .int(Int64(report.setAside))
        return out
    }

    /// The job's `params` as pass options: every field set from a parameter.
    static func options(_ p: JobParams, referenceTTL: Double, dryRun: Bool) -> ReferenceRevalidationPass.Options {
        ReferenceRevalidationPass.Options(
            window: seconds(p[window]), referenceTTL: referenceTTL, parentKinds: p[parentKinds], batchSize: p[batchSize],
            requestRate: p[requestRate], concurrency: p[concurrency], maxParents: p[maxParents],
            requestTimeout: seconds(p[requestTimeout]), dryRun: dryRun)
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
