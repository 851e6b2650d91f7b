import Foundation
import Postbox

/// Keeps the shared media tier within its TTL and size limit, by the index alone (like
/// `TimeBasedCleanup` over StorageBox): (1) every object unused for longer than the TTL is
/// removed, (2) then the least recently used, in order of last use (ties by resource id), until
/// the indexed total is at most the size limit. An object used within the grace window is never
/// removed: a reader moves the last use to now before its first GET, so a read in progress is
/// safe for that long. Each removal first drops the index row in a transaction that checks the
/// last use did not move meanwhile (no new reader can find it after that), then deletes the
/// object; a delete that fails puts the row back for the next pass.
public struct SharedMediaTierCleanup: Sendable {
    public let tier: SharedMediaTier

    public init(tier: SharedMediaTier) { self.tier = tier }

    public struct Options: Sendable {
        /// Seconds of disuse after which an object is removed; nil: no age limit.
        public var ttl: Double?
        /// Most bytes kept; nil: no size limit.
        public var maxSize: Int64?
        /// Seconds: an object used this recently is never removed.
        public var grace: Int64
        public var dryRun: Bool
        /// Unix seconds (tests); nil: the clock.
        public var now: Int64?
        /// Objects under the tier's prefix that the index does not know, older than this many
        /// seconds, are removed (a publish that died between its upload and its index row), and
        /// so are multipart uploads started that long ago; nil: no sweep.
        public var orphanAge: Double?

        public init(ttl: Double?, maxSize: Int64?, grace: Int64, dryRun: Bool = false, now: Int64? = nil, orphanAge: Double? = 86_400) {
            self.ttl = ttl
            self.maxSize = maxSize
            self.grace = grace
            self.dryRun = dryRun
            self.now = now
            self.orphanAge = orphanAge
        }
    }

    public enum Reason: String, Sendable { case expired, evicted }

    public struct Removal: Sendable, Equatable {
        public var entry: SharedMediaTierEntry
        public var reason: Reason
    }

    public struct Report: Sendable {
        public var dryRun = false
        /// Removed (or, in a dry run, to be removed), in the order chosen.
        public var removed: [Removal] = []
        /// Objects kept over a limit because they were used within the grace window.
        public var skippedRecent = 0
        /// Removals that failed (the object could not be deleted; its row is kept).
        public var failed = 0
        public var orphansRemoved = 0
        /// The tier after the pass (in a dry run: as it would be).
        public var objects = 0
        public var bytes: Int64 = 0
        public var withinLimit = true

        public var bytesRemoved: Int64 { removed.reduce(0) { $0 + $1.entry.size } }
        public func count(_ reason: Reason) -> Int { removed.count { $0.reason == reason } }
    }

    public func run(_ options: Options) async throws -> Report {
        let now = options.now ?? SharedMediaTier.now()
        let entries = try await tier.store.read { try $0.sharedMediaTier.all() }
            .sorted { ($0.lastUsedAt, $0.resourceId) < ($1.lastUsedAt, $1.resourceId) }
        var report = Report()
        report.dryRun = options.dryRun
        var total = entries.reduce(Int64(0)) { $0 + $1.size }
        var kept = entries.count
        let graceStart = now - options.grace
        var victims: [Removal] = []
        var rest: [SharedMediaTierEntry] = []
        for e in entries {
            if let ttl = options.ttl, Double(e.lastUsedAt) < Double(now) - ttl, e.lastUsedAt < graceStart {
                victims.append(Removal(entry: e, reason: .expired))
                total -= e.size
                kept -= 1
            } else {
                rest.append(e)
            }
        }
        if let limit = options.maxSize {
            for e in rest where total > limit {
                guard e.lastUsedAt < graceStart else {
                    report.skippedRecent += 1
                    continue
                }
                victims.append(Removal(entry: e, reason: .evicted))
                total -= e.size
                kept -= 1
            }
        }
        if options.dryRun {
            report.removed = victims
        } else {
            for v in victims {
                if try await remove(v.entry) {
                    report.removed.append(v)
                } else {
                    report.failed += 1
                    total += v.entry.size
                    kept += 1
                }
            }
            if let age = options.orphanAge {
                let indexed = try await tier.store.read { try Set($0.sharedMediaTier.all().map(\.objectKey)) }
                let sweep = try await S3StagingSweep(client: tier.client, prefix: tier.objectPrefix)
                    .run(olderThan: Date(timeIntervalSince1970: Double(now) - age), referenced: indexed)
                report.orphansRemoved = sweep.objectsRemoved
            }
        }
        report.objects = kept
        report.bytes = total
        report.withinLimit = options.maxSize.map { total <= $0 } ?? true
        return report
    }

    /// Drops the row (unless its last use moved: then it is kept) and deletes the object.
    private func remove(_ entry: SharedMediaTierEntry) async throws -> Bool {
        let dropped = try await tier.store.transaction { tx -> Bool in
            let table = try tx.sharedMediaTier
            guard let current = try table.get(entry.resourceId), current == entry else { return false }
            try table.remove(entry.resourceId)
            return true
        }
        guard dropped else { return false }
        do {
            try await tier.client.deleteObject(entry.objectKey)
            return true
        } catch {
            try await tier.store.transaction { tx in
                if try tx.sharedMediaTier.get(entry.resourceId) == nil { try tx.sharedMediaTier.set(entry) }
            }
            return false
        }
    }
}
