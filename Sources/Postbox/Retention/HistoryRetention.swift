import Dispatch
import Foundation

/// Whether a message must stay because its media is in use right now (an upload in flight, a
/// download under lock). Injected by the caller, so Postbox knows nothing of media files.
public typealias MessageInUse = @Sendable (Message) -> Bool

/// Drops old history from a Postbox under a `HistoryRetentionPolicy`, in bounded write
/// transactions, then returns the freed pages to the file system step by step.
///
/// Every transaction removes runs of peers' oldest messages (one peer's, or the ends of several
/// peers' when each has less than a batch left) together with their id and media index entries
/// and their file-reference records, and records each removed id range as a `.trimmed` history
/// hole, so a crash at any point leaves messages, indexes, references and holes consistent, and
/// the next run simply finds less to do. Only the cloud namespace is
/// trimmed. Written against the table APIs: nothing here is specific to SQLite except the
/// space reclamation Postbox offers (`reclaimFreePages`, `checkpointWAL`).
public struct HistoryRetention: Sendable {
    public let postbox: Postbox
    public let policy: HistoryRetentionPolicy
    /// Nil: no message is in use (messages are then not decoded whole to be removed).
    public let inUse: MessageInUse?

    public init(postbox: Postbox, policy: HistoryRetentionPolicy, inUse: MessageInUse? = nil) {
        self.postbox = postbox
        self.policy = policy
        self.inUse = inUse
    }

    /// What the planning pass learns about one peer.
    struct PeerPlan {
        let peer: PeerId
        /// Exclusive upper key below which messages may go (the `keepNewest`-th newest message).
        var keepBound: ValueBoxKey
        /// Exclusive upper key of the messages that go whatever the size (age or count), or nil.
        var mandatoryBound: ValueBoxKey?
        var mandatoryReason: RetentionReason = .age
        /// Oldest timestamp still stored among the messages that may go.
        var oldestCandidate: Int32
    }

    /// Runs on a dispatch queue (never the cooperative pool); cancelling the task stops the run
    /// between two transactions.
    public func runDetached() async throws -> HistoryRetentionReport {
        let stop = StopFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(with: Result { try self.run(shouldStop: { stop.isSet }) })
                }
            }
        } onCancel: {
            stop.set()
        }
    }

    /// The whole run, blocking: plan, age and count trimming, size trimming in rounds, upload
    /// pruning, space reclamation. `shouldStop` is checked between transactions (a stop throws
    /// `CancellationError`; everything committed so far stays consistent).
    public func run(shouldStop: () -> Bool = { false }) throws -> HistoryRetentionReport {
        var report = HistoryRetentionReport()
        report.dryRun = policy.dryRun
        report.sizeLimit = policy.sizeLimit
        if !policy.dryRun { try postbox.limitWALSize(policy.walSizeLimit) }
        report.databaseBytesBefore = try postbox.databaseBytes()

        let (plans, histogram, allRowBytes) = try plan(&report, shouldStop: shouldStop)

        // 1. Age and count: what goes whatever the size.
        var dryRunFreed: Int64 = 0
        let mandatory = plans.compactMap { plan in plan.mandatoryBound.map { TrimTarget(peer: plan.peer, bound: $0, reason: plan.mandatoryReason) } }
        if policy.dryRun {
            for target in mandatory { dryRunFreed += try preview(target.peer, below: target.bound, reason: target.reason, into: &report) }
        } else {
            try trim(mandatory, into: &report, shouldStop: shouldStop)
            try reclaim(&report, shouldStop: shouldStop)
        }

        // 2. Size: oldest first across peers, in rounds that each trim up to a cutoff time,
        // return the space and measure, until the file is under the limit.
        if let limit = policy.sizeLimit {
            // File bytes per byte of message rows, over the whole store: what the references,
            // indexes and page overhead that go with a message add to it.
            let used = report.databaseBytesBefore - (try postbox.freePageCount()) * (try postbox.pageSizeBytes())
            let ratio = allRowBytes > 0 ? max(1, Double(used) / Double(allRowBytes)) : 1
            try trimToSize(
                max(0, limit - Self.closingHeadroomBytes), plans: plans, histogram: histogram, ratio: ratio, dryRunFreed: dryRunFreed,
                into: &report, shouldStop: shouldStop)
        }

        // 3. Upload queue: sent and failed items past their retention.
        if let keep = policy.uploadRetention { try pruneUploads(olderThan: keep, into: &report, shouldStop: shouldStop) }

        if !policy.dryRun {
            try reclaim(&report, shouldStop: shouldStop)
            _ = try postbox.checkpointWAL(truncate: true)
            report.databaseBytesAfter = try postbox.databaseBytes()
            report.freePagesAfter = try postbox.freePageCount()
            report.walBytesAfter = max(0, postbox.fileSize() - fileBytes())
        } else {
            report.databaseBytesAfter = report.databaseBytesBefore
            report.estimatedBytesFreed = dryRunFreed
        }
        if let limit = policy.sizeLimit {
            report.underLimit = (policy.dryRun ? report.databaseBytesBefore - dryRunFreed : report.databaseBytesAfter) <= limit
        }
        report.finish()
        return report
    }

    /// Room a size-limited run leaves below the limit for what is written after its last
    /// measurement: the run's own closing record, and the index and job-run pages it may add
    /// once the process's WAL is checkpointed. A limit then holds for the file as it stands after
    /// the process exits, not only for the figure the run reported.
    public static let closingHeadroomBytes: Int64 = 64 * 1024

    private func fileBytes() -> Int64 {
        var st = stat()
        return stat(postbox.path, &st) == 0 ? Int64(st.st_size) : 0
    }

    // MARK: Planning

    /// Hour buckets of the bytes that may go for size (not kept, not already due to age or count).
    typealias Histogram = [Int32: Int64]

    static func bucket(_ ts: Int32) -> Int32 { Int32((Int64(ts) - (Int64(ts) % 3600 + 3600) % 3600) / 3600) }

    /// One read transaction per peer: where its kept messages start, what age and count drop,
    /// and (with a size limit) the bytes of the rest by hour.
    private func plan(_ report: inout HistoryRetentionReport, shouldStop: () -> Bool) throws -> ([PeerPlan], Histogram, Int64) {
        let peers = try postbox.readSync { tx -> [(PeerId, PeerCategory?)] in
            try tx.messages.peersWithMessages().map { ($0, try tx.peers.get($0)?.category) }
        }
        report.peersSeen = peers.count
        let ageCut: Int32? = policy.maxAge.map { Int32(clamping: policy.now - $0) }
        let keep = max(0, policy.keepNewest)
        var plans: [PeerPlan] = []
        var histogram: Histogram = [:]
        var allRowBytes: Int64 = 0
        for (peer, category) in peers {
            if policy.excludedPeers.contains(peer) || category.map(policy.excludedCategories.contains) == true {
                report.peersExcluded += 1
                continue
            }
            if shouldStop() { throw CancellationError() }
            let plan = try postbox.readSync { tx -> PeerPlan? in
                var rank = 0
                var plan: PeerPlan?
                let visit: (MessageIndex, ValueBoxKey, Int) throws -> Bool = { index, key, size in
                    rank += 1
                    allRowBytes += Int64(size + 20)
                    if rank <= keep {
                        if rank == keep { plan = PeerPlan(peer: peer, keepBound: key, oldestCandidate: .max) }
                        return true
                    }
                    if plan == nil { plan = PeerPlan(peer: peer, keepBound: key.successor, oldestCandidate: .max) }
                    plan!.oldestCandidate = min(plan!.oldestCandidate, index.timestamp)
                    if plan!.mandatoryBound == nil {
                        let byAge = ageCut.map { index.timestamp < $0 } ?? false
                        let byCount = policy.maxMessagesPerPeer.map { rank > max($0, keep) } ?? false
                        if byAge || byCount {
                            plan!.mandatoryBound = key.successor
                            plan!.mandatoryReason = byAge ? .age : .count
                            // Everything older goes too; with no size limit there is nothing more to learn.
                            return policy.sizeLimit != nil ? true : false
                        }
                        if policy.sizeLimit != nil { histogram[Self.bucket(index.timestamp), default: 0] += Int64(size + 20) }
                    }
                    return true
                }
                if policy.sizeLimit != nil {
                    try tx.messages.scanSizes(peer: peer, visit: visit)
                } else {
                    try tx.messages.scanIndexes(peer: peer) { try visit($0, $1, 0) }
                }
                return plan
            }
            if let plan { plans.append(plan) }
        }
        return (plans, histogram, allRowBytes)
    }

    // MARK: Trimming

    /// One peer's messages to remove: those below `bound`, for `reason`.
    struct TrimTarget {
        let peer: PeerId
        let bound: ValueBoxKey
        let reason: RetentionReason
    }

    /// Removes the messages of each target below its bound, in write transactions that each
    /// visit at most `batchSize` messages: a transaction takes the oldest messages of one peer,
    /// and when that peer has fewer left than the batch, it goes on with the next peers until
    /// the batch is full. Peers trimmed together share their index pages (the reference time
    /// index interleaves every peer's entries), so each such page is written once per
    /// transaction rather than once per peer; other writers still wait at most one batch.
    private func trim(_ targets: [TrimTarget], into report: inout HistoryRetentionReport, shouldStop: () -> Bool) throws {
        var next = 0
        var after: ValueBoxKey?
        let limit = max(1, policy.batchSize)
        let inUse = self.inUse
        while next < targets.count {
            if shouldStop() { throw CancellationError() }
            typealias Step = (target: TrimTarget, batch: MessageTrimBatch, references: (count: Int, bytes: Int64))
            let steps = try postbox.transactionSync { tx -> [Step] in
                var steps: [Step] = []
                var budget = limit
                while budget > 0, next < targets.count {
                    let target = targets[next]
                    let batch = try tx.messages.trimOldest(peer: target.peer, after: after, upper: target.bound, limit: budget, inUse: inUse)
                    var references = (count: 0, bytes: Int64(0))
                    for range in batch.missingRanges {
                        let r = try tx.mediaReferences.removeMessageReferences(peer: target.peer, ids: range) { media in
                            try tx.messages.messages(withMedia: media).last
                        }
                        references.count += r.count
                        references.bytes += r.bytes
                        try tx.holes.add(peer: target.peer, range: range, kind: .trimmed)
                    }
                    steps.append((target, batch, references))
                    budget -= batch.removedIds.count + batch.keptInUse
                    if let resume = batch.resumeAfter {
                        after = resume
                    } else {
                        after = nil
                        next += 1
                    }
                }
                return steps
            }
            report.transactions += 1
            for step in steps {
                report.holesAdded += step.batch.missingRanges.count
                report.add(step.target.peer, reason: step.target.reason, batch: step.batch, references: step.references)
            }
        }
    }

    /// Dry run: what `trim` would remove (in-use messages are not asked about). Returns the
    /// estimated bytes.
    @discardableResult
    private func preview(
        _ peer: PeerId, below bound: ValueBoxKey, from lower: ValueBoxKey? = nil, reason: RetentionReason,
        into report: inout HistoryRetentionReport
    ) throws -> Int64 {
        let batch = try postbox.readSync { tx -> MessageTrimBatch in
            var b = MessageTrimBatch()
            try tx.messages.scanSizes(peer: peer, newestFirst: false) { index, key, size in
                if key >= bound { return false }
                if let lower, key < lower { return true }
                b.removedIds.append(index.id.id)
                b.bytes += Int64(size + 20)
                b.rowBytes += Int64(size + 20)
                b.oldestTimestamp = min(b.oldestTimestamp, index.timestamp)
                b.newestTimestamp = max(b.newestTimestamp, index.timestamp)
                return true
            }
            b.removedIds.sort()
            return b
        }
        report.add(peer, reason: reason, batch: batch, references: (0, 0))
        return batch.bytes
    }

    /// `ratio`: file bytes expected per byte of message rows removed (the store's average at
    /// first, then what each round measured).
    private func trimToSize(
        _ limit: Int64, plans: [PeerPlan], histogram: Histogram, ratio initialRatio: Double, dryRunFreed: Int64,
        into report: inout HistoryRetentionReport, shouldStop: () -> Bool
    ) throws {
        let buckets = histogram.keys.sorted()
        var next = 0  // first bucket not yet trimmed
        var ratio = initialRatio
        var current = policy.dryRun ? report.databaseBytesBefore - dryRunFreed : try postbox.databaseBytes()
        var previousCut: Int32?
        while current > limit, next < buckets.count {
            report.sizeRounds += 1
            // Freeing is not linear: deleting rows scattered over a b-tree first leaves its pages
            // part-full and only later empties them. So each round after the first aims at part
            // of what seems missing, converging from above instead of overshooting.
            let need = Double(current - limit) / ratio * (report.sizeRounds == 1 ? 1 : 0.6)
            var gathered: Int64 = 0
            while next < buckets.count, Double(gathered) < need {
                gathered += histogram[buckets[next]] ?? 0
                next += 1
            }
            let cut = Int32(clamping: (Int64(buckets[next - 1]) + 1) * 3600)
            let removedBefore = report.messageRowBytes
            let targets = plans.filter { $0.oldestCandidate < cut }.map { plan in
                TrimTarget(peer: plan.peer, bound: min(plan.keepBound, MessageHistoryTable.boundKey(peer: plan.peer, timestamp: cut)), reason: .size)
            }
            if policy.dryRun {
                for (plan, target) in zip(plans.filter { $0.oldestCandidate < cut }, targets) {
                    let lower = previousCut.map { MessageHistoryTable.boundKey(peer: plan.peer, timestamp: $0) }
                    let from = [lower, plan.mandatoryBound].compactMap { $0 }.max()
                    try preview(target.peer, below: target.bound, from: from, reason: .size, into: &report)
                }
            } else {
                try trim(targets, into: &report, shouldStop: shouldStop)
            }
            previousCut = cut
            let removed = report.messageRowBytes - removedBefore
            if policy.dryRun {
                current -= Int64(Double(removed) * ratio)
                report.estimatedBytesFreed += Int64(Double(removed) * ratio)
                continue
            }
            let before = current
            try reclaim(&report, shouldStop: shouldStop)
            current = try postbox.databaseBytes()
            if removed > 0, before > current { ratio = min(20, max(0.25, Double(before - current) / Double(removed))) }
        }
    }

    // MARK: Uploads and space

    private func pruneUploads(olderThan seconds: Int64, into report: inout HistoryRetentionReport, shouldStop: () -> Bool) throws {
        let cutoffMs = (policy.now - seconds) * 1000
        let victims = try postbox.readSync { tx -> [(Int64, String)] in
            var out: [(Int64, String)] = []
            try tx.uploadQueue.scan { item in
                if (item.state == .sent || item.state == .failed) && max(item.enqueuedAt, item.leaseUntil, item.notBefore) < cutoffMs {
                    out.append((item.id, item.stagedPath))
                }
                return true
            }
            return out
        }
        if policy.dryRun {
            report.uploadItemsPruned = victims.count
            return
        }
        for chunk in stride(from: 0, to: victims.count, by: max(1, policy.batchSize)) {
            if shouldStop() { throw CancellationError() }
            let slice = victims[chunk..<min(victims.count, chunk + max(1, policy.batchSize))]
            let parts = try postbox.transactionSync { tx -> Int in
                var parts = 0
                for (id, _) in slice {
                    // Re-checked under the write lock: a retried item is no longer final.
                    guard let item = try tx.uploadQueue.get(id), item.state == .sent || item.state == .failed else { continue }
                    parts += try tx.uploadQueue.remove(id)
                }
                return parts
            }
            report.transactions += 1
            report.uploadItemsPruned += slice.count
            report.uploadPartsPruned += parts
            report.prunedStagedFiles += slice.map(\.1)
        }
    }

    /// Returns every free page to the file system, `vacuumStepBytes` per step (each its own
    /// short write transaction), with a passive checkpoint every few steps so the WAL does not
    /// grow with the vacuum.
    private func reclaim(_ report: inout HistoryRetentionReport, shouldStop: () -> Bool) throws {
        let pageSize = try postbox.pageSizeBytes()
        let stepPages = Int(max(1, policy.vacuumStepBytes / max(1, pageSize)))
        var steps = 0
        while try postbox.freePageCount() > 0 {
            if shouldStop() { throw CancellationError() }
            let released = try postbox.reclaimFreePages(stepPages)
            if released == 0 { break }
            report.bytesReclaimed += released * pageSize
            steps += 1
            if steps % 8 == 0 { _ = try postbox.checkpointWAL(truncate: false) }
        }
        report.vacuumSteps += steps
        _ = try postbox.checkpointWAL(truncate: false)
    }
}
