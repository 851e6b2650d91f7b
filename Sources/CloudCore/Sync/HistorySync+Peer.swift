import CloudProtocol
import Foundation
import Postbox

/// One peer's history: the newest messages first (first sync or incremental), then holes.
extension HistorySync {
    func syncPeer(_ dialog: Dialog) async throws -> HistorySyncReport {
        let peer = PeerId(dialog.peer.id)
        let state = try await postbox.read { tx in try tx.syncStates.get(peer) }
        var report = HistorySyncReport()
        if options.dryRun {
            if let state {
                report.messagesPending = Int(max(0, Int64(dialog.topMessageId) - Int64(state.maxSyncedId)))
            } else {
                report.messagesPending = min(max(1, options.initialMessages), dialog.messageCount)
            }
            return report
        }
        if let state {
            if dialog.topMessageId > state.maxSyncedId {
                try await fetchNewest(peer: peer, above: state.maxSyncedId, budget: Int.max, cutoff: nil, firstSync: false, report: &report)
            } else {
                observer?(.peerUpToDate(peerId: peer.rawValue, maxSyncedId: state.maxSyncedId))
            }
        } else {
            let cutoff = options.lookback.map { clock() - $0 }
            try await fetchNewest(peer: peer, above: 0, budget: max(1, options.initialMessages), cutoff: cutoff, firstSync: true, report: &report)
        }
        if options.fillHoles || options.refillTrimmed {
            let (gaps, trimmed) = (options.fillHoles, options.refillTrimmed)
            let holes = try await postbox.read { tx in
                try tx.holes.entries(peer: peer).filter { $0.kind == .gap ? gaps : trimmed }.map(\.range)
            }
            report.holesFound += holes.count
            for hole in holes.reversed() {
                try await fill(peer: peer, hole: hole, report: &report)
            }
        }
        if report.messagesFetched > 0 { report.peersUpdated = 1 }
        return report
    }

    /// Fetches ids above `above`, newest first, until `budget` messages, the `cutoff` date or
    /// the end. The first page raises `maxSyncedId` and, if more pages follow, records the
    /// unfetched rest as a hole; each later page fills its part of that hole; the last page
    /// fills what is left (not wanted or not existing).
    func fetchNewest(
        peer: PeerId, above: Int32, budget: Int, cutoff: Int64?, firstSync: Bool,
        report: inout HistorySyncReport
    ) async throws {
        var offsetId: Int32 = 0
        var fetched = 0
        var holeLower: Int32?
        var previousSmallest: Int32?
        var newest: Int32 = above
        while true {
            try Task.checkCancellation()
            let limit = min(options.pageSize, budget - fetched)
            try await pacer.wait()
            report.requests += 1
            let page = try await client.getHistory(peerId: peer.rawValue, offsetId: offsetId, minId: above, limit: limit)
            var wanted = page.messages
            var reachedCutoff = false
            if let cutoff, let old = wanted.firstIndex(where: { $0.date < cutoff }) {
                wanted = Array(wanted[..<old])
                reachedCutoff = true
            }
            fetched += page.messages.count
            let smallest = page.messages.last?.id
            let done = page.messages.count < limit || reachedCutoff || fetched >= budget || smallest == nil

            var addHole: ClosedRange<Int32>?
            var fillHole: ClosedRange<Int32>?
            if let top = page.messages.first?.id, previousSmallest == nil {
                newest = max(newest, top)
                // The range this paging still means to fetch: down to `above` + 1, or for a
                // first sync down to an estimate of the initial window.
                let lower = firstSync ? max(1, Int64(top) - Int64(budget) + 1) : Int64(above) + 1
                holeLower = Int32(clamping: lower)
                if !done, let s = smallest, let l = holeLower, s > l { addHole = l...(s - 1) }
            } else if let prev = previousSmallest, let l = holeLower {
                let bottom = done ? l : (smallest ?? l)
                if bottom <= prev - 1 { fillHole = bottom...(prev - 1) }
            }

            let now = clock()
            let stored = wanted.map { CloudMediaConversion.message($0, obtainedAt: now) }
            report.referencesRecorded += try await writer.commit(
                .init(
                    peerId: peer, messages: stored, newestId: page.messages.first?.id, fetched: page.messages.count,
                    addHole: addHole, fillHole: fillHole, now: now))
            report.pages += 1
            report.messagesFetched += page.messages.count
            report.messagesStored += stored.count
            // The paging hole is bookkeeping for a crash: it closes again before this loop ends,
            // so it is announced (debug) but not counted; only holes left by earlier runs are.
            if let h = addHole { observer?(.holeRecorded(peerId: peer.rawValue, lower: h.lowerBound, upper: h.upperBound)) }
            if done { break }
            offsetId = smallest!
            previousSmallest = smallest
        }
        observer?(.peerSynced(peerId: peer.rawValue, fetched: fetched, maxSyncedId: newest, firstSync: firstSync))
    }

    /// Fills one hole newest first: messages with `hole.lowerBound ≤ id ≤ hole.upperBound`,
    /// each page marking its id range as fetched.
    func fill(peer: PeerId, hole: ClosedRange<Int32>, report: inout HistorySyncReport) async throws {
        var upper = hole.upperBound
        while true {
            try Task.checkCancellation()
            let limit = options.pageSize
            try await pacer.wait()
            report.requests += 1
            let offsetId = upper == Int32.max ? 0 : upper + 1
            let page = try await client.getHistory(
                peerId: peer.rawValue, offsetId: offsetId, minId: hole.lowerBound > 0 ? hole.lowerBound - 1 : 0, limit: limit)
            let short = page.messages.count < limit || page.messages.isEmpty
            let bottom = short ? hole.lowerBound : max(hole.lowerBound, page.messages.last!.id)
            let done = short || bottom <= hole.lowerBound
            let now = clock()
            let stored = page.messages.map { CloudMediaConversion.message($0, obtainedAt: now) }
            report.referencesRecorded += try await writer.commit(
                .init(
                    peerId: peer, messages: stored, newestId: nil, fetched: page.messages.count,
                    addHole: nil, fillHole: bottom...upper, now: now))
            report.pages += 1
            report.messagesFetched += page.messages.count
            report.messagesStored += stored.count
            if done {
                report.holesFilled += 1
                observer?(.holeFilled(peerId: peer.rawValue, lower: hole.lowerBound, upper: hole.upperBound))
                return
            }
            upper = bottom - 1
        }
    }
}
