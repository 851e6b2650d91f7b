import CloudProtocol
import Foundation
import Postbox

/// Pulls the chat list into `tx.peers` and each chosen peer's recent history into
/// `tx.messages`, incrementally:
///
/// * a peer never synced gets its newest `initialMessages` (within `lookback`), newest first;
/// * a synced peer whose top message is above `PeerSyncState.maxSyncedId` gets only the newer
///   ids, paged until caught up; one whose top message is not newer costs no request at all;
/// * paging that stops early (crash, cancellation, error) leaves a hole in `tx.holes` that a
///   later run fills (`fillHoles`);
/// * every file reference of stored media and avatars goes to `tx.mediaReferences`
///   (resource id → parent, obtainedAt) so revalidation can find it.
///
/// Each history page is one transaction (`HistoryPageWriter`); cancellation is checked between
/// pages. Cloud unavailability, bad answers and cancellation stop the run; other per-peer errors
/// (e.g. `PEER_ID_INVALID`) are reported and the other peers go on.
public final class HistorySync: Sendable {
    public let client: CloudClient
    public let postbox: Postbox
    public let options: HistorySyncOptions
    let writer: HistoryPageWriter
    let pacer: CloudRequestPacer
    let observer: (@Sendable (HistorySyncEvent) -> Void)?
    let clock: @Sendable () -> Int64

    /// `now` gives Unix seconds (tests may fix it); `observer` sees progress events.
    public init(
        client: CloudClient, postbox: Postbox, options: HistorySyncOptions,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        observer: (@Sendable (HistorySyncEvent) -> Void)? = nil
    ) {
        CloudCoreTypes.registerAll()
        self.client = client
        self.postbox = postbox
        self.options = options
        self.writer = HistoryPageWriter(postbox: postbox)
        self.pacer = CloudRequestPacer(rate: options.requestRate)
        self.observer = observer
        self.clock = now
    }

    /// Runs one sync and reports what it did.
    public func run() async throws -> HistorySyncReport {
        var report = HistorySyncReport()
        let dialogs = try await selectDialogs(&report)
        report.peersSelected = dialogs.count
        let perPeer = try await syncAll(dialogs)
        report.add(perPeer)
        let ids = dialogs.map { PeerId($0.peer.id) }
        report.holesOpen = try await postbox.read { tx in
            try ids.reduce(0) { $0 + (try tx.holes.entries(peer: $1).filter { $0.kind == .gap }.count) }
        }
        return report
    }

    // MARK: Chat list

    /// Pages through the chat list, storing every listed peer, until `maxPeers` peers pass the
    /// filters (or the list ends).
    func selectDialogs(_ report: inout HistorySyncReport) async throws -> [Dialog] {
        var selected: [Dialog] = []
        var offset = 0
        let wanted = options.peerIds
        while selected.count < options.maxPeers {
            try Task.checkCancellation()
            try await pacer.wait()
            report.requests += 1
            let page = try await client.getDialogs(offset: offset, limit: max(1, min(100, options.dialogPageSize)))
            report.peersListed += page.dialogs.count
            let now = clock()
            if !options.dryRun {
                report.referencesRecorded += try await writer.storePeers(page.dialogs.map { CloudMediaConversion.peer($0.peer, obtainedAt: now) })
            }
            var taken = 0
            for d in page.dialogs where selected.count < options.maxPeers {
                guard options.categories.contains(CloudMediaConversion.category(d.peer.kind)) else { continue }
                guard wanted.isEmpty || wanted.contains(d.peer.id) else { continue }
                selected.append(d)
                taken += 1
            }
            observer?(.dialogsPage(offset: offset, dialogs: page.dialogs.count, selected: taken))
            guard let next = page.nextOffset, !page.dialogs.isEmpty else { break }
            if !wanted.isEmpty, selected.count == wanted.count { break }
            offset = next
        }
        return selected
    }

    // MARK: Peers

    /// Syncs `dialogs` with at most `options.concurrency` peers at a time.
    func syncAll(_ dialogs: [Dialog]) async throws -> HistorySyncReport {
        var total = HistorySyncReport()
        let width = max(1, options.concurrency)
        try await withThrowingTaskGroup(of: HistorySyncReport.self) { group in
            var next = 0
            func addNext() {
                guard next < dialogs.count else { return }
                let dialog = dialogs[next]
                next += 1
                group.addTask { try await self.syncPeerReporting(dialog) }
            }
            for _ in 0..<width { addNext() }
            while let r = try await group.next() {
                total.add(r)
                addNext()
            }
        }
        return total
    }

    /// `syncPeer`, turning a per-peer protocol error into a reported failure.
    func syncPeerReporting(_ dialog: Dialog) async throws -> HistorySyncReport {
        do {
            var r = try await syncPeer(dialog)
            r.peersSynced += 1
            return r
        } catch let error as CloudClientError {
            switch error {
            case .server(let e, _, _) where e.code < 500:
                var r = HistorySyncReport()
                r.peersFailed = 1
                r.failures = [.init(peerId: dialog.peer.id, reason: error.description)]
                observer?(.peerFailed(peerId: dialog.peer.id, reason: error.description))
                return r
            default:
                throw error
            }
        }
    }
}
