import CloudCore
import Foundation
import MediaBox
import Postbox

/// The `sync-history` kind: the chat list and each chosen chat's recent history into the
/// account's Postbox, incrementally (`HistorySync`): a first run fetches `initialMessages` per
/// peer, later runs only what is newer, and gaps left by an interrupted run are filled.
///
/// The cloud being unreachable is `JobError.cloudUnavailable` (exit 69); a missing or invalid
/// account `config.yaml` is `JobError.config` (exit 78). Logs carry ids and counts only.
public struct SyncHistoryJob: JobKind {
    public static let name = "sync-history"
    public static let summary = "the chat list and recent history into Postbox, incrementally, filling holes"
    public static let reportEvent = "sync.report"
    public static let usesCloud = true
    public static let demo = KindDemo(params: ["initialMessages: 40"])

    public static let peerCategories = Param<Set<PeerStorageClass>>(
        "peerCategories", default: Set(PeerStorageClass.allCases), doc: "which chats to sync")
    public static let peers = Param<[Int64]>("peers", default: [], doc: "only these peer ids (empty = every peer in the chat list)")
    public static let maxPeers = Param<Int>(
        "maxPeers", default: 100, range: 1...100_000, doc: "chats taken from the top of the chat list per run")
    public static let initialMessages = Param<Int>(
        "initialMessages", default: 200, range: 1...1_000_000, doc: "messages fetched per peer on its first sync")
    public static let pageSize = Param<Int>(
        "pageSize", default: 100, range: 1...100, doc: "messages per history request (protocol limit 100)")
    public static let lookback = Param<Duration>(
        "lookback", default: .days(30), range: 60...(3650 * 86_400), doc: "ignore history older than this on a first sync")
    public static let fillHoles = Param<Bool>("fillHoles", default: true, doc: "fill known gaps in already-synced history")
    public static let refillTrimmed = Param<Bool>(
        "refillTrimmed", default: false, doc: "also fetch again the ranges history-retention dropped (with `peers`, on request)")
    public static let concurrency = Param<Int>("concurrency", default: 4, range: 1...32, doc: "peers synced in parallel")
    public static let requestRate = Param<Double>(
        "requestRate", default: 20, range: 0.1...1000, doc: "API requests per second, at most")

    public static let parameters: [any JobParameter] = [
        peerCategories, peers, maxPeers, initialMessages, pageSize, lookback, fillHoles, refillTrimmed, concurrency, requestRate,
    ]

    public init() {}

    public func run(_ context: JobContext) async throws -> JobReport {
        let options = Self.options(context.params, dryRun: context.dryRun)
        let log = context.logger
        let client = try context.account.cloudClient().with(observer: { Self.log($0, log) })
        let sync = HistorySync(
            client: client, postbox: context.account.postbox, options: options,
            observer: { event in
                Self.log(event, log)
                if case .holeRecorded = event { Self.crashPoint("sync-after-page") }
            })
        let report: HistorySyncReport
        do {
            report = try await sync.run()
        } catch let error as CloudClientError {
            throw Self.jobError(error, account: context.account.id)
        }
        let stats = client.stats
        if report.peersSelected > 0, report.peersFailed == report.peersSelected {
            throw JobError("every selected peer failed; first: \(report.failures.first?.reason ?? "?")")
        }
        let counters: [String: Int64] = [
            "peers_listed": Int64(report.peersListed), "peers_selected": Int64(report.peersSelected),
            "peers_synced": Int64(report.peersSynced), "peers_updated": Int64(report.peersUpdated),
            "peers_failed": Int64(report.peersFailed), "messages_fetched": Int64(report.messagesFetched),
            "messages_stored": Int64(report.messagesStored), "messages_pending": Int64(report.messagesPending),
            "requests": Int64(report.requests), "pages": Int64(report.pages),
            "holes_found": Int64(report.holesFound), "holes_filled": Int64(report.holesFilled),
            "holes_open": Int64(report.holesOpen), "references_recorded": Int64(report.referencesRecorded),
            "http_requests": Int64(stats.requests), "retries": Int64(stats.retries), "flood_waits": Int64(stats.floodWaits),
        ]
        let summary =
            options.dryRun
            ? [
                "would sync \(report.peersSelected) of \(report.peersListed) chats, about \(report.messagesPending) new messages (dry run: nothing fetched or stored)"
            ]
            : [
                "synced \(report.peersSynced) of \(report.peersSelected) chats: \(report.messagesStored) messages stored (\(report.peersUpdated) chats had new ones), \(report.requests) request\(report.requests == 1 ? "" : "s"), \(report.holesOpen) holes open"
                    + (report.peersFailed > 0 ? "; \(report.peersFailed) chats failed" : "")
            ]
        return JobReport(
            counters: counters, summary: summary,
            details: [
                "dry_run": .bool(options.dryRun),
                "failed_peers": .array(report.failures.map { .object(["peer": .int($0.peerId), "reason": .string($0.reason)]) }),
            ])
    }

    /// The job's `params` as `HistorySyncOptions`: every field set from a parameter.
    static func options(_ p: JobParams, dryRun: Bool) -> HistorySyncOptions {
        var o = HistorySyncOptions()
        let classes = p[peerCategories]
        o.categories = Set(PeerCategory.allCases.filter { classes.contains(PeerStorageClass($0)) })
        o.peerIds = Set(p[peers])
        o.maxPeers = p[maxPeers]
        o.initialMessages = p[initialMessages]
        o.pageSize = p[pageSize]
        o.lookback = p[lookback].wholeSeconds
        o.fillHoles = p[fillHoles]
        o.refillTrimmed = p[refillTrimmed]
        o.concurrency = p[concurrency]
        o.requestRate = p[requestRate]
        o.dryRun = dryRun
        return o
    }

    /// Maps a client failure to the job's exit code: unreachable → 69, configuration → 78,
    /// anything else → 1.
    static func jobError(_ error: CloudClientError, account: Int64) -> JobError {
        switch error {
        case .config(let message): return .config("account \(account): \(message)")
        case _ where error.isCloudUnavailable: return .cloudUnavailable("account \(account): \(error)")
        case .badAnswer: return JobError("account \(account): \(error); nothing from that answer was stored")
        default: return JobError("account \(account): \(error)")
        }
    }

    /// The failpoint `sync-after-page=kill` (or `exit(n)`) in `JOBRUN_FAILPOINTS` ends the
    /// process right after a history page that leaves more to fetch has been committed: how the
    /// integration tests prove that a crashed sync resumes where it stopped.
    static func crashPoint(_ name: String) {
        guard let action = Failpoints.table[name] else { return }
        if action == "kill" { kill(getpid(), SIGKILL) }
        if action.hasPrefix("exit("), let code = Int32(action.dropFirst(5).dropLast()) { exit(code) }
    }

    static func log(_ event: HistorySyncEvent, _ log: JobLogger) {
        switch event {
        case let .dialogsPage(offset, dialogs, selected):
            log.debug("sync.dialogs_page", ["offset": .int(Int64(offset)), "dialogs": .int(Int64(dialogs)), "selected": .int(Int64(selected))])
        case let .peerSynced(peer, fetched, maxId, first):
            log.info("sync.peer", ["peer": .int(peer), "fetched": .int(Int64(fetched)), "max_synced_id": .int(Int64(maxId)), "first_sync": .bool(first)])
        case let .peerUpToDate(peer, maxId):
            log.debug("sync.peer_up_to_date", ["peer": .int(peer), "max_synced_id": .int(Int64(maxId))])
        case let .holeRecorded(peer, lower, upper):
            log.debug("sync.hole_recorded", ["peer": .int(peer), "lower": .int(Int64(lower)), "upper": .int(Int64(upper))])
        case let .holeFilled(peer, lower, upper):
            log.info("sync.hole_filled", ["peer": .int(peer), "lower": .int(Int64(lower)), "upper": .int(Int64(upper))])
        case let .peerFailed(peer, reason):
            log.warning("sync.peer_failed", ["peer": .int(peer), "error": .string(reason)])
        }
    }

    static func log(_ event: CloudClientEvent, _ log: JobLogger) {
        switch event {
        case let .retry(method, endpoint, attempt, delay, reason):
            log.warning(
                "cloud.retry",
                [
                    "method": .string(method), "endpoint": .string(endpoint), "attempt": .int(Int64(attempt)),
                    "delay_ms": .int(Int64(delay * 1000)), "reason": .string(reason),
                ])
        case let .floodWait(method, endpoint, seconds):
            log.notice("cloud.flood_wait", ["method": .string(method), "endpoint": .string(endpoint), "seconds": .int(Int64(seconds))])
        case let .migrate(method, from, to):
            log.debug("cloud.migrate", ["method": .string(method), "from": .string(from), "to_dc": .int(Int64(to))])
        }
    }
}
