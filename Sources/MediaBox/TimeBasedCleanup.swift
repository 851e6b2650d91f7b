import Foundation
import Postbox

/// Keeps a MediaBox within its TTLs and limits (Telegram-iOS's `TimeBasedCleanup`):
/// (1) removes everything past its TTL, (2) then least-recently-used resources until the index
/// totals are under the size and count limits — choosing victims by range scans of StorageBox's
/// last-access index (never by walking the file system), in batches, so memory stays flat in
/// the number of files. A victim is removed only if `LOCK_EX | LOCK_NB` succeeds on it (no
/// reader or writer, in any process), and the unlinks run on several threads. The optional
/// reconciliation pass is the only file-system walk.
public final class TimeBasedCleanup: Sendable {
    public let mediaBox: MediaBox

    public init(mediaBox: MediaBox) { self.mediaBox = mediaBox }

    /// Runs a cleanup on the calling thread (blocking file I/O). See `runDetached` for async code.
    public func run(_ options: CleanupOptions) throws -> CleanupReport {
        let started = Date()
        let now = options.now ?? Int64(Date().timeIntervalSince1970)
        var report = CleanupReport(dryRun: options.dryRun, now: now)
        if options.reconcile {
            // Foreign files go once older than the immunity window (and never younger than the
            // settle time: a writer may be about to give one its name).
            var reconciliation = options.reconciliation
            reconciliation.foreignFileAge = reconciliation.foreignFileAge ?? max(reconciliation.settleTime, options.immunityWindow)
            report.reconciliation = try Reconciliation.run(mediaBox: mediaBox, options: reconciliation, now: now, dryRun: options.dryRun)
        }
        let storage = mediaBox.storageBox
        report.before = try storage.stats().total
        var state = State(options: options, now: now, current: report.before, remover: IndexRemover(storageBox: storage))
        if !options.tierSizeLimits.isEmpty { state.tierCurrent = try storage.stats().byTier }
        do {
            try expire(&state)
            for tier in MediaStorageTier.allCases where options.tierSizeLimits[tier] != nil { try evict(&state, tier: tier) }
            try evict(&state)
        } catch {
            // The files already removed lose their rows too, as far as the store allows.
            try? state.remover.submit(state.unindexed)
            try? state.remover.finish()
            throw error
        }
        try state.remover.submit(state.unindexed)
        try state.remover.finish()
        state.report.before = report.before
        state.report.reconciliation = report.reconciliation
        report = state.report
        report.after = options.dryRun ? state.current : try storage.stats().total
        report.withinLimits = !state.isOver(report.after) && !MediaStorageTier.allCases.contains { state.isOver(tier: $0) }
        state.finishBreakdown(into: &report)
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// `run` on a dispatch queue, for callers on the cooperative pool.
    public func runDetached(_ options: CleanupOptions) async throws -> CleanupReport {
        try await MediaBox.offPool { try self.run(options) }
    }

    // MARK: selection state

    private struct State {
        let options: CleanupOptions
        let now: Int64
        var current: StorageUsage
        /// `current` by keep tier (for `tierSizeLimits`).
        var tierCurrent: [MediaStorageTier: StorageUsage] = [:]
        var report: CleanupReport
        var batch: [(StorageBoxLRURow, CleanupReason)] = []
        var byPeer: [PeerId: StorageUsage] = [:]
        var byType: [MediaContentType: StorageUsage] = [:]
        var byBoth: [PeerContentType: StorageUsage] = [:]
        let remover: IndexRemover
        /// Keys of the last batch's removed files, whose rows are deleted once the next batch's
        /// unlinks start (or at the end).
        var unindexed: [MediaStorageKey] = []

        init(options: CleanupOptions, now: Int64, current: StorageUsage, remover: IndexRemover) {
            self.options = options
            self.now = now
            self.current = current
            self.remover = remover
            self.report = CleanupReport(dryRun: options.dryRun, now: now)
        }

        func isOver(_ u: StorageUsage) -> Bool {
            if let limit = options.sizeLimit, u.bytes > limit { return true }
            if let limit = options.countLimit, u.count > limit { return true }
            return false
        }

        func isOver(tier: MediaStorageTier, minus pending: StorageUsage = StorageUsage()) -> Bool {
            guard let limit = options.tierSizeLimits[tier] else { return false }
            return (tierCurrent[tier, default: StorageUsage()] - pending).bytes > limit
        }

        mutating func subtract(_ row: StorageBoxLRURow) {
            current -= StorageUsage(bytes: row.size, count: 1)
            tierCurrent[row.key.location.tier, default: StorageUsage()] -= StorageUsage(bytes: row.size, count: 1)
        }

        func isExpired(_ row: StorageBoxLRURow) -> Bool {
            guard let ttl = options.ttl(for: row) else { return false }
            return row.accessTime < now - ttl
        }

        func isImmune(_ row: StorageBoxLRURow) -> Bool {
            options.immunityWindow > 0 && row.accessTime > now - options.immunityWindow
        }

        mutating func finishBreakdown(into report: inout CleanupReport) {
            report.byPeer = byPeer.sorted { ($0.value.bytes, $1.key) > ($1.value.bytes, $0.key) }
                .map { CleanupUsageRow(peerId: $0.key.rawValue, contentType: nil, count: $0.value.count, bytes: $0.value.bytes) }
            report.byContentType = byType.sorted { ($0.value.bytes, $1.key.rawValue) > ($1.value.bytes, $0.key.rawValue) }
                .map { CleanupUsageRow(peerId: nil, contentType: $0.key.description, count: $0.value.count, bytes: $0.value.bytes) }
            report.byPeerAndContentType = byBoth.sorted { ($0.value.bytes, $1.key) > ($1.value.bytes, $0.key) }
                .map {
                    CleanupUsageRow(peerId: $0.key.peerId.rawValue, contentType: $0.key.contentType.description, count: $0.value.count, bytes: $0.value.bytes)
                }
        }
    }

    private static let scanChunk = 2048

    /// Pass 1: everything past its TTL. Rows are visited oldest first and the scan stops at the
    /// first row too recent for even the shortest TTL.
    private func expire(_ state: inout State) throws {
        guard let minTTL = state.options.minimumTTL else { return }
        let horizon = state.now - minTTL
        var cursor: ValueBoxKey?
        scan: while true {
            let rows = try mediaBox.storageBox.leastRecentlyUsed(after: cursor, limit: Self.scanChunk)
            if rows.isEmpty { break }
            for row in rows {
                if row.accessTime >= horizon { break scan }
                cursor = row.cursor
                guard state.isExpired(row) else { continue }
                if state.options.isExcluded(row) { state.report.skippedExcluded += 1; continue }
                if state.isImmune(row) { state.report.skippedImmune += 1; continue }
                state.batch.append((row, .expired))
                if state.batch.count >= state.options.batchSize { try flush(&state) }
            }
        }
        try flush(&state)
    }

    /// Pass 2: least recently used first until under the limits: those of one keep tier while
    /// that tier is over its own limit (`tier`), or any while the whole cache is over (nil).
    private func evict(_ state: inout State, tier: MediaStorageTier? = nil) throws {
        func isOver(_ state: State, minus pending: StorageUsage = StorageUsage()) -> Bool {
            if let tier { return state.isOver(tier: tier, minus: pending) }
            return state.isOver(state.current - pending)
        }
        guard isOver(state) else { return }
        var cursor: ValueBoxKey?
        var pending = StorageUsage()
        scan: while true {
            let rows = try mediaBox.storageBox.leastRecentlyUsed(after: cursor, limit: Self.scanChunk)
            if rows.isEmpty { break }
            for row in rows {
                cursor = row.cursor
                if let tier, row.key.location.tier != tier { continue }
                // Pass 1 dealt with these (removed, or locked/immune and left).
                if state.isExpired(row) && !state.options.isExcluded(row) { continue }
                // Everything after an immune row is more recent, hence immune too.
                if state.isImmune(row) { state.report.skippedImmune += 1; break scan }
                if state.options.isExcluded(row) { state.report.skippedExcluded += 1; continue }
                if !isOver(state, minus: pending) {
                    try flush(&state)
                    pending = StorageUsage()
                    if !isOver(state) { break scan }
                }
                state.batch.append((row, .leastRecentlyUsed))
                pending += StorageUsage(bytes: row.size, count: 1)
                if state.batch.count >= state.options.batchSize {
                    try flush(&state)
                    pending = StorageUsage()
                }
            }
        }
        try flush(&state)
    }

    /// Removes the batch's files in parallel (lock-checked) while the previous batch's rows are
    /// deleted (one transaction on the index's queue), and keeps this batch's keys for the next.
    ///
    /// The rows of a batch are queued only when the next batch's unlinks start, not as soon as
    /// its own unlinks end: the scan that fills the next batch reads the same index under the
    /// same lock, and would otherwise wait for the whole deletion instead of overlapping it
    /// with the unlinks.
    private func flush(_ state: inout State) throws {
        guard !state.batch.isEmpty else { return }
        let batch = state.batch
        state.batch.removeAll(keepingCapacity: true)
        let paths = batch.map { mediaBox.paths(for: $0.0.key) }
        try state.remover.submit(state.unindexed)
        state.unindexed = []
        let outcomes = ParallelRemoval.run(paths, in: mediaBox.directory, threads: state.options.removalThreads, dryRun: state.options.dryRun)
        var gone: [MediaStorageKey] = []
        gone.reserveCapacity(batch.count)
        for (i, (row, reason)) in batch.enumerated() {
            switch outcomes[i] {
            case .locked:
                state.report.skippedLocked += 1
            case .failed:
                state.report.failed += 1
            case let .refused(error):
                // A link or FIFO planted in the store: stop, naming it, rather than skip it.
                throw error
            case .missing:
                state.report.staleRows += 1
                gone.append(row.key)
                state.subtract(row)
            case let .removed(bytes):
                gone.append(row.key)
                let usage = StorageUsage(bytes: bytes, count: 1)
                state.subtract(row)
                state.report.removed += usage
                if reason == .expired { state.report.expired += usage } else { state.report.evicted += usage }
                state.byPeer[row.peerId, default: StorageUsage()] += usage
                state.byType[row.contentType, default: StorageUsage()] += usage
                state.byBoth[PeerContentType(peerId: row.peerId, contentType: row.contentType), default: StorageUsage()] += usage
                if state.report.victims.count < state.options.listVictims {
                    state.report.victims.append(
                        CleanupVictim(
                            location: row.key.location.description, fileName: row.key.fileName,
                            peerId: row.peerId.rawValue, contentType: row.contentType.description,
                            size: bytes, accessTime: row.accessTime, reason: reason))
                }
            }
        }
        if !state.options.dryRun { state.unindexed = gone }
    }

    /// Victim selection alone, from the index, without lock checks or removal (benchmarks and
    /// quick estimates): calls `visit` for each row the cleanup would try, in order, and returns
    /// the total. Memory is flat: rows are streamed in chunks.
    public static func selectVictims(
        storageBox: StorageBox, options: CleanupOptions,
        visit: (StorageBoxLRURow, CleanupReason) -> Void
    ) throws -> StorageUsage {
        let now = options.now ?? Int64(Date().timeIntervalSince1970)
        var selected = StorageUsage()
        var current = try storageBox.stats().total
        func isOver(_ u: StorageUsage) -> Bool {
            (options.sizeLimit.map { u.bytes > $0 } ?? false) || (options.countLimit.map { u.count > $0 } ?? false)
        }
        func expired(_ row: StorageBoxLRURow) -> Bool { options.ttl(for: row).map { row.accessTime < now - $0 } ?? false }
        func immune(_ row: StorageBoxLRURow) -> Bool { options.immunityWindow > 0 && row.accessTime > now - options.immunityWindow }
        if let minTTL = options.minimumTTL {
            var cursor: ValueBoxKey?
            scan: while true {
                let rows = try storageBox.leastRecentlyUsed(after: cursor, limit: scanChunk)
                if rows.isEmpty { break }
                for row in rows {
                    if row.accessTime >= now - minTTL { break scan }
                    cursor = row.cursor
                    if expired(row), !options.isExcluded(row), !immune(row) {
                        visit(row, .expired)
                        selected += StorageUsage(bytes: row.size, count: 1)
                        current -= StorageUsage(bytes: row.size, count: 1)
                    }
                }
            }
        }
        guard isOver(current) else { return selected }
        var cursor: ValueBoxKey?
        scan: while true {
            let rows = try storageBox.leastRecentlyUsed(after: cursor, limit: scanChunk)
            if rows.isEmpty { break }
            for row in rows {
                cursor = row.cursor
                if expired(row) && !options.isExcluded(row) { continue }
                if immune(row) || !isOver(current) { break scan }
                if options.isExcluded(row) { continue }
                visit(row, .leastRecentlyUsed)
                selected += StorageUsage(bytes: row.size, count: 1)
                current -= StorageUsage(bytes: row.size, count: 1)
            }
        }
        return selected
    }
}
