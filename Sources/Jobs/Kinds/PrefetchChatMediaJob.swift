import CloudCore
import CloudProtocol
import Foundation
import MediaBox
import Postbox
import Synchronization

/// The `prefetch-chat-media` kind: downloads the media of recent messages before
/// anyone asks for it, as the mobile clients' auto-download does, within limits an operator
/// sets (see docs/prefetch.md).
///
/// 1. Selection (`PrefetchSelection`, pure over one Postbox read): chosen peer categories,
///    messages inside the lookback window newest first, chosen media types within their size
///    caps, chats' avatars; what is complete in the MediaBox already is counted, not fetched.
/// 2. Admission (`PrefetchBudget`), per file when it would start: run budget, free-space floor,
///    cache limit — each counted with the files in flight.
/// 3. Download: `concurrency` files at a time through the MediaBox (partial files, so a
///    cancelled run resumes) and the account's MultipartFetch with its revalidation; each file
///    is recorded in StorageBox with its peer, message and content type.
///
/// A file that fails is counted and logged with its resource id; the rest proceed. The run
/// exits 0 when every admitted file arrived, 1 (`jobFailed`, after the counters are logged in
/// `prefetch.report`) when some failed, 69 when nothing could be fetched because the cloud is
/// unreachable. Reruns are idempotent: a second run downloads nothing new.
public struct PrefetchChatMediaJob: JobKind {
    public static let name = "prefetch-chat-media"
    public static let summary = "download media of recent messages by chat category, media type and size caps, within budgets"
    public static let reportEvent = "prefetch.report"
    public static let usesCloud = true
    public static let demo = KindDemo(params: ["budget: 64MiB", "videoPrefix: 512KiB"])

    public static let peerCategories = Param<Set<PrefetchPeerCategory>>(
        "peerCategories", default: Set(PrefetchPeerCategory.allCases), doc: "chats whose media is prefetched")
    public static let mediaTypes = Param<Set<MediaContentType>>(
        "mediaTypes", default: Set(MediaContentType.downloadable), allowed: MediaContentType.downloadable, doc: "media types prefetched")
    public static let sizeCaps = Param<[MediaContentType: ByteCount]>(
        "sizeCaps",
        default: [
            .photo: .mebibytes(1), .video: .mebibytes(10), .file: .mebibytes(3), .voice: .mebibytes(1), .sticker: .mebibytes(1),
            .avatar: .mebibytes(1),
        ],
        allowed: MediaContentType.downloadable, range: 0...1e13,
        doc: "largest file prefetched per media type; keys not given keep their default")
    public static let lookback = Param<Duration>(
        "lookback", default: .days(7), range: 60...(3650 * 86_400), doc: "only messages newer than this")
    public static let budget = Param<ByteCount>(
        "budget", default: .mebibytes(512), range: 1...1e13, doc: "bytes downloaded per run, at most")
    public static let freeSpaceFloor = Param<ByteCount>(
        "freeSpaceFloor", default: .gibibytes(1), range: 0...1e14,
        doc: "stop when the file system's free space would drop below this")
    public static let cacheLimit = OptionalParam<ByteCount>(
        "cacheLimit", range: 1...1e14,
        doc: "never grow the media cache past this (use the cleanup job's maxSize); default: no extra limit")
    public static let concurrency = Param<Int>("concurrency", default: 4, range: 1...64, doc: "files downloaded in parallel")
    public static let bandwidthLimit = OptionalParam<ByteCount>(
        "bandwidthLimit", range: 1024...1e12, doc: "bytes per second over all downloads; default unlimited")
    public static let videoPrefix = OptionalParam<ByteCount>(
        "videoPrefix", range: 65536...1e12,
        doc:
            "for streamable videos larger than this: fetch their header, then only this many bytes from the start (whatever the size cap), as the clients preload large videos; default: whole videos within the cap"
    )

    public static let parameters: [any JobParameter] = [
        peerCategories, mediaTypes, sizeCaps, lookback, budget, freeSpaceFloor, cacheLimit, concurrency, bandwidthLimit, videoPrefix,
    ]

    public init() {}

    /// Counters shared by the workers.
    struct Tally {
        var downloaded = 0, prefixes = 0, failed = 0, gone = 0, unavailable = 0, unavailableStreak = 0
        var bytes: Int64 = 0
        var skips = PrefetchSkips()
        var bytesByType: [MediaContentType: Int64] = [:]
        var filesByType: [MediaContentType: Int] = [:]
        var failures: [(String, String)] = []
        var next = 0
        var cloudDown = false
    }

    /// The state the workers share: counters and the admission budget, each behind its lock.
    final class Shared: Sendable {
        let tally: Mutex<Tally>
        let budget: Mutex<PrefetchBudget>
        init(_ tally: Tally, _ budget: PrefetchBudget) {
            self.tally = Mutex(tally)
            self.budget = Mutex(budget)
        }
    }

    public func run(_ context: JobContext) async throws -> JobReport {
        let policy = PrefetchPolicy(params: context.params)
        let log = context.logger
        let account = context.account
        let now = Int64(Date().timeIntervalSince1970)
        let scanned = try await account.postbox.read { try PrefetchSelection.scan($0, policy: policy, now: now) }
        let cache = account.mediaBox
        let selection = scanned.removingCached { $0.isHeld(in: cache) }
        log.info(
            "prefetch.selected",
            [
                "candidates": .int(Int64(selection.candidates.count)), "already_cached": .int(Int64(selection.alreadyCached)),
                "messages_scanned": .int(Int64(selection.messagesScanned)), "gone": .int(Int64(selection.gone)),
            ])

        if context.dryRun {
            return try Self.dryRun(selection, policy: policy, mediaBox: cache)
        }
        let tier = PrefetchTierTally()
        var tally = Tally()
        tally.skips = selection.skips
        tally.gone = selection.gone
        if !selection.candidates.isEmpty {
            let cloud = try PrefetchDownloads.fetcher(account: account, policy: policy)
            let fetcher = try account.mediaFetcher(over: cloud, observer: { tier.record($0, log: log) })
            tally = try await Self.download(selection.candidates, into: account.mediaBox, fetcher: fetcher, policy: policy, tally: tally, log: log)
        }
        return try Self.report(selection, tally: tally, policy: policy, account: account.id, log: log, extraCounters: tier.counters)
    }

    /// Runs the downloads, `policy.concurrency` at a time, newest first.
    static func download(
        _ candidates: [PrefetchCandidate], into box: MediaBox, fetcher: any MediaResourceFetcher, policy: PrefetchPolicy,
        tally initial: Tally, log: JobLogger
    ) async throws -> Tally {
        let shared = Shared(initial, PrefetchBudget(policy: policy))
        let progress = TransferProgress(
            label: "prefetch", totalFiles: candidates.count, totalBytes: candidates.reduce(0) { $0 + $1.wantedBytes }, log: log)
        try await progress.during {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<max(1, policy.concurrency) {
                    group.addTask {
                        while true {
                            try Task.checkCancellation()
                            let index: Int? = shared.tally.withLock {
                                guard !$0.cloudDown, $0.next < candidates.count else { return nil }
                                $0.next += 1
                                return $0.next - 1
                            }
                            guard let index else { return }
                            try await fetchOne(candidates[index], box: box, fetcher: fetcher, shared: shared, progress: progress, log: log)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        return shared.tally.withLock { $0 }
    }

    /// Admits and downloads one file, settling the counters whatever happens.
    static func fetchOne(
        _ c: PrefetchCandidate, box: MediaBox, fetcher: any MediaResourceFetcher, shared: Shared, progress: TransferProgress,
        log: JobLogger
    ) async throws {
        let id = c.resource.id
        if c.isHeld(in: box) {  // fetched by another run since the selection
            progress.fileDone()
            return
        }
        let needed = c.missingBytes(in: box)
        let cacheTotal = (try? box.stats().total.bytes) ?? 0
        let free = PrefetchBudget.freeSpace(atPath: box.basePath)
        let decision = shared.budget.withLock { $0.admit(size: c.wantedBytes, needed: needed, cacheTotal: cacheTotal, freeSpace: free) }
        guard decision == .start else {
            shared.tally.withLock {
                switch decision {
                case .budget: $0.skips.budget += 1
                case .freeSpace: $0.skips.freeSpace += 1
                case .cacheLimit: $0.skips.cacheLimit += 1
                case .start: break
                }
            }
            log.debug("prefetch.skipped", ["resource": .string(id.stringRepresentation), "bytes": .int(c.size), "rule": .string("\(decision)")])
            progress.fileDone()
            return
        }
        let counting = ProgressCountingFetcher(fetcher, progress: progress)
        do {
            try await Failpoints.hit("prefetch-before-file")
            // A prefix: the header first (the resource declares it), then the first bytes.
            _ = try await box.fetch(c.resource, info: c.info, ranges: c.prefix.map { [0..<$0] }, priority: .default, fetcher: counting)
            shared.budget.withLock { $0.finish(size: c.wantedBytes, needed: needed, completed: true) }
            shared.tally.withLock {
                $0.downloaded += 1
                if c.prefix != nil { $0.prefixes += 1 }
                $0.bytes += needed
                $0.bytesByType[c.contentType, default: 0] += needed
                $0.filesByType[c.contentType, default: 0] += 1
                $0.unavailableStreak = 0
            }
            var logged: [String: LogValue] = ["bytes": .int(needed), "resumed": .bool(needed < c.wantedBytes)]
            if let prefix = c.prefix { logged["prefix"] = .int(prefix) }
            log.debug("prefetch.downloaded", fields(c, logged))
            progress.fileDone(uncounted: needed - counting.counted)
        } catch {
            shared.budget.withLock { $0.finish(size: c.wantedBytes, needed: needed, completed: false) }
            if error is CancellationError || Task.isCancelled { throw CancellationError() }
            let outcome = classify(error)
            let reason = "\(error)"
            shared.tally.withLock {
                switch outcome {
                case .gone:
                    $0.gone += 1
                case .unavailable:
                    $0.failed += 1
                    $0.unavailable += 1
                    $0.unavailableStreak += 1
                    $0.failures.append((id.stringRepresentation, reason))
                    // Several files in a row could not reach the cloud at all: an outage.
                    if $0.downloaded == 0, $0.unavailableStreak >= 3 { $0.cloudDown = true }
                case .failed:
                    $0.failed += 1
                    $0.unavailableStreak = 0
                    $0.failures.append((id.stringRepresentation, reason))
                }
            }
            if outcome == .gone {
                log.notice("prefetch.gone", fields(c, ["error": .string(reason)]))
            } else {
                log.error("prefetch.failed", fields(c, ["error": .string(reason)]))
            }
            progress.fileDone()
        }
    }

    enum Outcome { case gone, unavailable, failed }

    /// A file whose parent or location no longer exists is gone (not a failure); transport
    /// failures on every attempt are unavailability; anything else failed.
    static func classify(_ error: any Error) -> Outcome {
        guard let e = error as? MultipartFetchError else { return .failed }
        switch e {
        case let .server(_, name, _):
            switch name {
            case .messageIdInvalid, .fileIdInvalid, .locationInvalid, .peerIdInvalid, .stickerSetInvalid, .storyIdInvalid: return .gone
            default: return .failed
            }
        case .unavailable: return .unavailable
        default: return .failed
        }
    }

    /// The log fields of a file: ids and sizes only, never its reference.
    static func fields(_ c: PrefetchCandidate, _ extra: [String: LogValue]) -> [String: LogValue] {
        var f: [String: LogValue] = [
            "resource": .string(c.resourceId), "peer": .int(c.info.peerId.rawValue),
            "content_type": .string(c.contentType.description), "size": .int(c.size),
        ]
        if let m = c.info.messageId { f["message"] = .int(Int64(m.id)) }
        return f.merging(extra) { _, b in b }
    }

    /// `--dry-run`: what would start now under the budget, floor and limit (as if every file
    /// arrived), nothing fetched.
    static func dryRun(_ selection: PrefetchSelection, policy: PrefetchPolicy, mediaBox: MediaBox) throws -> JobReport {
        var budget = PrefetchBudget(policy: policy)
        var skips = selection.skips
        var files = 0
        var bytes: Int64 = 0
        let cacheTotal = try mediaBox.stats().total.bytes
        let free = PrefetchBudget.freeSpace(atPath: mediaBox.basePath)
        for c in selection.candidates {
            let needed = c.missingBytes(in: mediaBox)
            switch budget.admit(size: c.wantedBytes, needed: needed, cacheTotal: cacheTotal, freeSpace: free) {
            case .start: files += 1; bytes += needed
            case .budget: skips.budget += 1
            case .freeSpace: skips.freeSpace += 1
            case .cacheLimit: skips.cacheLimit += 1
            }
        }
        var counters = skipCounters(skips)
        counters["selected"] = Int64(selection.selected)
        counters["already_cached"] = Int64(selection.alreadyCached)
        counters["files_pending"] = Int64(files)
        counters["bytes_pending"] = bytes
        counters["gone"] = Int64(selection.gone)
        return JobReport(
            counters: counters,
            summary: [
                "would download \(files) of \(selection.selected) selected files, \(ByteSize.human(bytes)) (\(selection.alreadyCached) already cached; dry run: nothing fetched)"
            ])
    }

    static func skipCounters(_ s: PrefetchSkips) -> [String: Int64] {
        [
            "skipped_category": Int64(s.category), "skipped_media_type": Int64(s.mediaType), "skipped_size_cap": Int64(s.sizeCap),
            "skipped_lookback": Int64(s.lookback), "skipped_budget": Int64(s.budget), "skipped_free_space": Int64(s.freeSpace),
            "skipped_cache_limit": Int64(s.cacheLimit),
        ]
    }

    /// Counters, samples and summary; throws for a partial failure or an outage after logging
    /// the counters (`prefetch.report`), so the exit code says what happened.
    /// `extraCounters` (the shared tier's) join the kind's own.
    static func report(
        _ selection: PrefetchSelection, tally t: Tally, policy: PrefetchPolicy, account: Int64, log: JobLogger,
        extraCounters: [String: Int64] = [:]
    ) throws -> JobReport {
        var counters = skipCounters(t.skips).merging(extraCounters) { a, _ in a }
        counters["selected"] = Int64(selection.selected)
        counters["already_cached"] = Int64(selection.alreadyCached)
        counters["downloaded"] = Int64(t.downloaded)
        counters["video_prefixes"] = Int64(t.prefixes)
        counters["bytes"] = t.bytes
        counters["failed"] = Int64(t.failed)
        counters["gone"] = Int64(t.gone)
        counters["messages_scanned"] = Int64(selection.messagesScanned)
        var samples: [MetricSample] = []
        for type in MediaContentType.allCases where t.filesByType[type] != nil {
            samples.append(
                MetricSample(
                    "prefetch_bytes_by_type", labels: ["content_type": type.description], value: Double(t.bytesByType[type] ?? 0),
                    help: "bytes downloaded by the last prefetch run, per content type"))
            samples.append(
                MetricSample(
                    "prefetch_files_by_type", labels: ["content_type": type.description], value: Double(t.filesByType[type] ?? 0),
                    help: "files downloaded by the last prefetch run, per content type"))
        }
        let s = t.skips
        var summary = [
            "prefetched \(t.downloaded) files (\(ByteSize.human(t.bytes)); \(t.prefixes) of them video prefixes) of \(selection.selected) selected; \(selection.alreadyCached) already cached, \(t.failed) failed, \(t.gone) gone"
        ]
        summary.append(
            "skipped: category \(s.category), media type \(s.mediaType), size cap \(s.sizeCap), lookback \(s.lookback), budget \(s.budget), free space \(s.freeSpace), cache limit \(s.cacheLimit)"
        )
        for (id, reason) in t.failures.prefix(20) { summary.append("  \(id) failed: \(reason)") }
        let skips = skipCounters(s)
        for key in skips.keys.sorted() {
            samples.append(
                MetricSample(
                    "prefetch_skipped_files", labels: ["reason": String(key.dropFirst("skipped_".count))], value: Double(skips[key]!),
                    help: "files the last prefetch run left out, per rule that left them out"))
        }
        var report = JobReport(
            counters: counters, samples: samples, summary: summary,
            details: ["failed_files": .array(t.failures.map { .object(["resource": .string($0.0), "reason": .string($0.1)]) })])
        report.sampledCounters = Set(skips.keys)
        if t.cloudDown || (t.downloaded == 0 && t.failed > 0 && t.failed == t.unavailable) {
            throw JobError.cloudUnavailable(
                "account \(account): the cloud is unreachable (\(t.failed) files failed, first: \(t.failures.first?.1 ?? "?")); partial files are kept for the next run",
                report: report)
        }
        if t.failed > 0 {
            throw JobError(
                "account \(account): \(t.failed) of \(t.failed + t.downloaded) files failed (first: \(t.failures.first?.1 ?? "?")); "
                    + "\(t.downloaded) downloaded (\(ByteSize.human(t.bytes))), \(selection.alreadyCached) already cached", report: report)
        }
        return report
    }
}
