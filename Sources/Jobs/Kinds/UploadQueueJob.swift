import CloudCore
import Foundation
import Postbox
import Synchronization

/// The `upload-queue` kind: drains the account's persistent upload queue with `MultipartUpload`.
///
/// `concurrency` items at a time, each leased to this process (holder + expiry in the item,
/// taken in a write transaction, so two processes never upload one item); parts paced by
/// `requestRate` and the bytes by `bandwidthLimit`. A failed attempt goes back to the queue with
/// a doubling backoff (`itemBackoff`) until `itemAttempts`; a permanent failure (file gone or
/// changed, peer unknown) ends the item as failed with the reason — the rest of the queue
/// proceeds either way. Items whose backoff ends within `retryWithin` are retried in this run.
///
/// The run succeeds when the queue was worked through; failed items show in the counters
/// (`items_failed`), the summary, the details and an `upload.failed` log line. When the cloud is
/// unreachable the run stops claiming items, leaves them queued (their attempts unspent) and
/// exits 69; when a store refuses this host's credentials or configuration (a wrong S3 secret,
/// a missing bucket) it does the same and exits 78.
public struct UploadQueueJob: JobKind {
    public static let name = "upload-queue"
    public static let summary = "drain the persistent multipart upload queue: resumable, each item sent once"
    public static let reportEvent = "upload.report"
    public static let usesCloud = true
    public static let demo = KindDemo(setup: .queueUploads)

    public static let concurrency = Param<Int>("concurrency", default: 2, range: 1...16, doc: "queue items uploaded in parallel")
    public static let partsInFlight = Param<Int>(
        "partsInFlight", default: 30, range: 1...64, doc: "parts in flight per big-file upload (Telegram's clients use 30)")
    public static let maxItems = OptionalParam<Int>(
        "maxItems", range: 1...10_000_000, doc: "queue items per run, at most; default all")
    public static let requestRate = OptionalParam<Double>(
        "requestRate", range: 0.1...10_000, doc: "part requests per second, at most; default unlimited")
    public static let bandwidthLimit = OptionalParam<ByteCount>(
        "bandwidthLimit", range: 1024...1e12, doc: "bytes per second over all uploads; default unlimited")
    public static let itemAttempts = Param<Int>(
        "itemAttempts", default: 5, range: 1...100, doc: "attempts per item before it is marked failed")
    public static let itemBackoff = Param<Duration>(
        "itemBackoff", default: .seconds(30), range: 0...86_400, doc: "first wait before retrying an item (doubles each attempt)")
    public static let leaseDuration = Param<Duration>(
        "leaseDuration", default: .minutes(5), range: 10...86_400,
        doc: "how long an item is leased to this process; renewed while uploading")
    public static let retryWithin = Param<Duration>(
        "retryWithin", default: .minutes(1), range: 0...86_400,
        doc: "an item whose backoff ends within this time is retried in the same run")

    public static let parameters: [any JobParameter] = [
        concurrency, partsInFlight, maxItems, requestRate, bandwidthLimit, itemAttempts, itemBackoff, leaseDuration,
        retryWithin,
    ]

    public init() {}

    /// Counters shared by the workers.
    final class Tally: Sendable {
        struct Values {
            var cloudDown = false
            /// Why a store refused this host's credentials or configuration, once one did.
            var misconfigured: String?
            var claimed = 0, sent = 0, failed = 0, retried = 0, alreadySent = 0, unavailable = 0, attempts = 0, restarts = 0
            var partsSent = 0, partsSkipped = 0
            var bytesSent: Int64 = 0
            /// Bytes of each item progress has counted (acknowledged earlier, or sent now).
            var progressBytes: [Int64: Int64] = [:]
            var failures: [(Int64, String)] = []
        }
        let state = Mutex(Values())
        func update(_ body: (inout Values) -> Void) { state.withLock { body(&$0) } }
        var values: Values { state.withLock { $0 } }
        /// Takes one of `limit` item slots of this run (nil: unlimited); false when none is left.
        func reserve(_ limit: Int?) -> Bool {
            state.withLock {
                if let limit, $0.claimed >= limit { return false }
                $0.claimed += 1
                return true
            }
        }
        func unreserve() { state.withLock { $0.claimed -= 1 } }
    }

    public func run(_ context: JobContext) async throws -> JobReport {
        let p = context.params
        let log = context.logger
        let account = context.account
        let stageSource = try UploadBucketStaging.source(
            root: UploadBucketStaging.root(of: account.paths), account: account.id, environment: LaunchEnvironment.variables)
        // A real run reaches `uploads/` beneath the root (a dry run creates nothing).
        let queue =
            context.dryRun
            ? UploadQueue(postbox: account.postbox, directory: account.paths.uploads.path, stageSource: stageSource)
            : UploadQueue(postbox: account.postbox, uploads: try account.paths.uploadsDirectory(create: true), stageSource: stageSource)
        if context.dryRun { return try await Self.dryRunReport(queue) }

        let client = try Self.client(account: account, params: p, concurrency: p[Self.concurrency], log: log)
        var configuration = MultipartUploadConfiguration()
        configuration.partsInFlight = p[Self.partsInFlight]
        configuration.smallFilePartsInFlight = min(configuration.partsInFlight, 8)
        configuration.pacer = p[Self.requestRate].map { CloudRequestPacer(rate: $0) }
        let lease = UploadLease(holder: UploadLeaseHolder.current(tag: context.runId), duration: p[Self.leaseDuration].jobSeconds)
        configuration.lease = lease
        let tally = Tally()
        try await Failpoints.hit("upload-queue-start")
        let swept = try await queue.sweep()
        if swept > 0 { log.info("upload.swept", ["files": .int(Int64(swept))]) }
        let progress = try await Self.progress(queue: queue, maxItems: p[Self.maxItems], log: log)
        let upload = MultipartUpload(
            client: client, postbox: account.postbox, configuration: configuration, uploads: try await queue.stagingFolder()
        ) { event in
            Self.observe(event, tally: tally, progress: progress, log: log)
        }
        let drain = Drain(
            queue: queue, upload: upload, lease: lease, maxItems: p[Self.maxItems], maxAttempts: p[Self.itemAttempts],
            backoff: p[Self.itemBackoff].jobSeconds, retryWithin: ConfigDuration.milliseconds(p[Self.retryWithin]),
            tally: tally, progress: progress, log: log)
        try await progress.during {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<p[Self.concurrency] { group.addTask { try await drain.work() } }
                try await group.waitForAll()
            }
        }

        let v = tally.values
        let remaining = try await queue.openItems().count
        let report = Self.report(v, remaining: remaining)
        if let reason = v.misconfigured {
            throw JobError(
                "account \(account.id): \(reason); fix the credentials or the configuration — \(remaining) items stay queued, their attempts unspent",
                exitCode: .config, retryable: false, report: report)
        }
        if v.cloudDown {
            throw JobError.cloudUnavailable(
                "account \(account.id): the cloud is unreachable (\(v.sent) items sent before that); \(remaining) items stay queued for the next run",
                report: report)
        }
        return report
    }

    /// What a dry run reports: the items waiting, nothing sent.
    static func dryRunReport(_ queue: UploadQueue) async throws -> JobReport {
        let waiting = try await queue.openItems()
        let bytes = waiting.reduce(Int64(0)) { $0 + $1.size }
        return JobReport(
            counters: ["items_waiting": Int64(waiting.count), "bytes_waiting": bytes],
            summary: ["would upload \(waiting.count) items, \(ByteSize.human(bytes)) (dry run: nothing sent)"],
            details: ["dry_run": .bool(true)])
    }

    /// The run's counters, summary and failed items.
    static func report(_ v: Tally.Values, remaining: Int) -> JobReport {
        let counters: [String: Int64] = [
            "items_sent": Int64(v.sent), "items_failed": Int64(v.failed), "items_retried": Int64(v.retried),
            "items_already_sent": Int64(v.alreadySent), "items_remaining": Int64(remaining), "item_attempts": Int64(v.attempts),
            "bytes_sent": v.bytesSent, "parts_sent": Int64(v.partsSent), "parts_skipped_already_acked": Int64(v.partsSkipped),
            "upload_restarts": Int64(v.restarts),
        ]
        var summary = [
            "sent \(v.sent) items (\(ByteSize.human(v.bytesSent)) in \(v.partsSent) parts, \(v.partsSkipped) parts already acknowledged), \(v.failed) failed, \(v.retried) to retry, \(remaining) still queued"
        ]
        for (id, reason) in v.failures.prefix(20) { summary.append("  item \(id) failed: \(reason)") }
        return JobReport(
            counters: counters, summary: summary,
            details: ["failed_items": .array(v.failures.map { .object(["item": .int($0.0), "reason": .string($0.1)]) })])
    }

    /// One worker of a run: claims items until the queue has none ready (or the run's share,
    /// `maxItems`, is used up, or the cloud is down), attempting each.
    struct Drain: Sendable {
        let queue: UploadQueue
        let upload: MultipartUpload
        let lease: UploadLease
        let maxItems: Int?
        let maxAttempts: Int
        let backoff: Double
        /// An item whose backoff ends within this many milliseconds is waited for.
        let retryWithin: Int64
        let tally: Tally
        let progress: TransferProgress
        let log: JobLogger

        func work() async throws {
            while true {
                try Task.checkCancellation()
                if tally.values.cloudDown || tally.values.misconfigured != nil { return }
                guard tally.reserve(maxItems) else { return }
                let claim = try await queue.claim(lease: lease)
                if case .item = claim {} else { tally.unreserve() }
                switch claim {
                case .none:
                    return
                case .waiting(let until):
                    let wait = until - MultipartUpload.nowMs()
                    guard wait <= retryWithin else { return }
                    try await Task.sleep(for: .milliseconds(max(10, wait)))
                case .item(let item):
                    let end = try await UploadQueueJob.attempt(
                        item, upload: upload, queue: queue, lease: lease, backoff: backoff, maxAttempts: maxAttempts, tally: tally,
                        log: log)
                    let counted = tally.state.withLock { $0.progressBytes.removeValue(forKey: item.id) ?? 0 }
                    switch end {
                    case .sent: progress.fileDone(uncounted: item.size - counted)
                    case .failed: progress.fileDone()
                    case .requeued: break
                    }
                }
            }
        }
    }

    /// How an attempt left its item.
    enum AttemptEnd {
        /// Sent now, or found sent by an earlier attempt.
        case sent
        /// Failed for good.
        case failed
        /// Back in the queue (a retry, an outage, a lost lease).
        case requeued
    }

    /// One attempt at one leased item, settled in the queue whatever happens.
    @discardableResult
    static func attempt(
        _ item: UploadItem, upload: MultipartUpload, queue: UploadQueue, lease: UploadLease, backoff: Double,
        maxAttempts: Int, tally: Tally, log: JobLogger
    ) async throws -> AttemptEnd {
        tally.update { $0.attempts += 1 }
        log.info(
            "upload.attempt",
            [
                "item": .int(item.id), "peer": .int(item.peerId.rawValue), "bytes": .int(item.size),
                "encrypted": .bool(item.isSecret), "attempt": .int(Int64(item.attempts)),
            ])
        do {
            let staged = try await queue.materialize(item)
            let result = try await upload.upload(itemId: item.id)
            tally.update {
                if result.alreadySent { $0.alreadySent += 1 } else { $0.sent += 1 }
                $0.partsSkipped += result.partsSkipped
                $0.restarts += result.restarts
            }
            await queue.removeStagedFile(of: staged)
            return .sent
        } catch is CancellationError {
            _ = try? await queue.settle(item.id, lease: lease, outcome: .interrupted)
            throw CancellationError()
        } catch let error as MultipartUploadError {
            if case .leaseLost = error {
                log.warning("upload.lease_lost", ["item": .int(item.id), "error": .string(error.description)])
                return .requeued
            }
            if case .cloudUnavailable = error {
                // An outage: every other item would fail the same way. Stop claiming, keep the
                // item's attempts, come back after the backoff.
                try await queue.settle(item.id, lease: lease, outcome: .cloudUnavailable(reason: error.description, backoff: max(backoff, 1)))
                tally.update {
                    $0.unavailable += 1; $0.cloudDown = true
                }
                log.warning("upload.cloud_unavailable", ["item": .int(item.id), "error": .string(error.description)])
                return .requeued
            }
            if case .misconfigured = error {
                // Every item would be refused the same way: give the attempt back, as a crash
                // would, and stop the run until the operator fixes the setup.
                try await queue.settle(item.id, lease: lease, outcome: .interrupted)
                tally.update { $0.misconfigured = $0.misconfigured ?? error.description }
                log.error("upload.misconfigured", ["item": .int(item.id), "error": .string(error.description)])
                return .requeued
            }
            if error.isPermanent {
                try await queue.settle(item.id, lease: lease, outcome: .failed(reason: error.description))
                tally.update {
                    $0.failed += 1; $0.failures.append((item.id, error.description))
                }
                log.error("upload.failed", ["item": .int(item.id), "error": .string(error.description)])
                return .failed
            }
            let state = try await queue.settle(item.id, lease: lease, outcome: .retry(reason: error.description, backoff: backoff, maxAttempts: maxAttempts))
            tally.update {
                if state == .failed { $0.failed += 1; $0.failures.append((item.id, error.description)) } else { $0.retried += 1 }
            }
            log.warning(state == .failed ? "upload.failed" : "upload.retry", ["item": .int(item.id), "error": .string(error.description)])
            return state == .failed ? .failed : .requeued
        } catch {
            let reason = "\(error)"
            let state = try await queue.settle(item.id, lease: lease, outcome: .retry(reason: reason, backoff: backoff, maxAttempts: maxAttempts))
            tally.update { if state == .failed { $0.failed += 1; $0.failures.append((item.id, reason)) } else { $0.retried += 1 } }
            log.warning("upload.retry", ["item": .int(item.id), "error": .string(reason)])
            return state == .failed ? .failed : .requeued
        }
    }

    /// Progress over the items this run will work on: the waiting ones, at most `maxItems`.
    static func progress(queue: UploadQueue, maxItems: Int?, log: JobLogger) async throws -> TransferProgress {
        let waiting = try await queue.openItems().prefix(maxItems ?? Int.max)
        return TransferProgress(label: "upload", totalFiles: waiting.count, totalBytes: waiting.reduce(0) { $0 + $1.size }, log: log)
    }

    static func observe(_ event: MultipartUploadEvent, tally: Tally, progress: TransferProgress, log: JobLogger) {
        switch event {
        case let .started(item, fileId, total, partSize, acked, committed, big, secret):
            // Acknowledged by an earlier attempt: already in the cloud.
            progress.moved(bytes: committed)
            tally.update { $0.progressBytes[item] = committed }
            log.info(
                "upload.started",
                [
                    "item": .int(item), "file_id": .int(fileId), "total_parts": .int(Int64(total)),
                    "part_size": .int(Int64(partSize)), "already_acked": .int(Int64(acked)),
                    "committed_offset": .int(committed),
                    "big": .bool(big), "encrypted": .bool(secret),
                ])
        case let .partSent(item, _, bytes):
            progress.moved(bytes: Int64(bytes))
            tally.update {
                $0.progressBytes[item, default: 0] += Int64(bytes)
                $0.partsSent += 1
                $0.bytesSent += Int64(bytes)
            }
        case let .restarted(item, old, new, reason):
            log.warning("upload.restarted", ["item": .int(item), "old_file_id": .int(old), "file_id": .int(new), "reason": .string(reason)])
        case let .sent(item, messageId, parts, bytes):
            log.info("upload.sent", ["item": .int(item), "message": .int(Int64(messageId)), "parts_sent": .int(Int64(parts)), "bytes_sent": .int(bytes)])
        }
    }

    /// The account's client, or one with its own transport when this job needs more connections
    /// than the shared pool (parts in flight × items) or a send bandwidth limit.
    static func client(account: AccountContext, params p: JobParams, concurrency: Int, log: JobLogger) throws -> CloudClient {
        let shared = try account.cloudClient()
        let observer: CloudClientObserver = { event in log.debug("cloud.event", ["event": .string("\(event)")]) }
        let parts = p[partsInFlight] * concurrency
        let bandwidth = p[bandwidthLimit]?.bytes
        guard bandwidth != nil || parts > 16 else { return shared.with(observer: observer) }
        do {
            return try shared.withOwnTransport(connections: parts, sendLimit: bandwidth.map { Int(clamping: $0) }, observer: observer)
        } catch {
            throw JobError.config("cannot set up the upload client of account \(account.id): \(error)")
        }
    }
}
