import CloudProtocol
import Foundation
import Postbox

/// One pass of the `revalidate-references` job: finds references that expired or expire within
/// a window, groups them by parent, and refreshes them through the account's
/// `RevalidationContext` (messages of one peer in batches), counting outcomes per parent kind.
public struct ReferenceRevalidationPass: Sendable {
    /// What to refresh and how fast. The job's values come from the `revalidate-references`
    /// kind's parameters; the pass has no defaults of its own for them.
    public struct Options: Sendable {
        /// Refresh references that expire within this many seconds (or already have).
        public var window: Double
        /// How long a reference lives after it was obtained, in seconds.
        public var referenceTTL: Double
        public var parentKinds: Set<MediaParent.Kind>
        /// Messages of one peer per call (≤ 100).
        public var batchSize: Int
        /// Calls per second, at most; nil = unlimited.
        public var requestRate: Double?
        /// Calls in flight.
        public var concurrency: Int
        /// Parents refreshed per pass, at most.
        public var maxParents: Int
        /// A batch's waiters get an error after this many seconds.
        public var requestTimeout: Double
        /// Only count what would be refreshed.
        public var dryRun: Bool

        public init(
            window: Double, referenceTTL: Double, parentKinds: Set<MediaParent.Kind>, batchSize: Int, requestRate: Double?,
            concurrency: Int, maxParents: Int, requestTimeout: Double, dryRun: Bool = false
        ) {
            self.window = window
            self.referenceTTL = referenceTTL
            self.parentKinds = parentKinds
            self.batchSize = batchSize
            self.requestRate = requestRate
            self.concurrency = concurrency
            self.maxParents = maxParents
            self.requestTimeout = requestTimeout
            self.dryRun = dryRun
        }

        /// The longest window that still leaves a just-refreshed reference out of the next
        /// selection: `referenceTTL` less a margin of a minute (half the lifetime when that is
        /// shorter). A window as long as the lifetime makes every reference due, fresh or not,
        /// so two runs a moment apart would both ask for the same parents.
        public static func maximumWindow(referenceTTL: Double) -> Double {
            max(0, referenceTTL - min(60, referenceTTL / 2))
        }

        /// `window`, clamped to `maximumWindow(referenceTTL:)`.
        public var effectiveWindow: Double { min(window, Self.maximumWindow(referenceTTL: referenceTTL)) }

        /// True when `window` is longer than the pass uses.
        public var windowIsClamped: Bool { effectiveWindow < window }
    }

    /// Outcomes of one parent kind.
    public struct KindCounts: Sendable, Equatable {
        public var parents = 0
        public var refreshed = 0
        public var gone = 0
        public var failed = 0
        /// References whose parent was refreshed (they now hold a fresh reference).
        public var referencesRefreshed = 0

        public init() {}
    }

    /// What a pass did.
    public struct Report: Sendable {
        public var referencesScanned = 0
        public var referencesSelected = 0
        public var parentsSelected = 0
        public var byKind: [MediaParent.Kind: KindCounts] = [:]
        /// Revalidation calls this process sent during the pass.
        public var calls = 0
        /// Parents answered from another process's outcome.
        public var reusedFromOtherProcess = 0
        /// Failures (parent description, reason), at most 20.
        public var failures: [(parent: String, reason: String)] = []
        /// The first failure meaning the cloud is unreachable or failing (the pass stopped there).
        public var cloudFailure: RevalidationError?
        public var seconds: Double = 0
        /// Where this process's time went, step by step (see `RevalidationTimes`).
        public var times = RevalidationTimes()
        /// Seconds choosing the due parents.
        public var selectSeconds: Double = 0
        /// Units put aside because another process was calling for them, and the seconds from
        /// the first one taken up again to the end of the pass (the tail spent on them).
        public var setAside = 0
        public var setAsideSeconds: Double = 0
        /// The window the pass used, when `window` was longer than the lifetime allows.
        public var windowClampedTo: Double?

        public var refreshed: Int { byKind.values.reduce(0) { $0 + $1.refreshed } }
        public var gone: Int { byKind.values.reduce(0) { $0 + $1.gone } }
        public var failed: Int { byKind.values.reduce(0) { $0 + $1.failed } }
        public var referencesRefreshed: Int { byKind.values.reduce(0) { $0 + $1.referencesRefreshed } }
    }

    public let context: RevalidationContext
    public let postbox: Postbox
    public let options: Options

    public init(context: RevalidationContext, postbox: Postbox, options: Options) {
        self.context = context
        self.postbox = postbox
        self.options = options
    }

    /// The parents to refresh (oldest reference first) with their resource ids.
    public func select(now: Date = Date()) async throws -> (parents: [(MediaParent, [String])], scanned: Int) {
        let cutoff = Int64(now.timeIntervalSince1970 + options.effectiveWindow - options.referenceTTL)
        let kinds = options.parentKinds
        let maxParents = max(1, options.maxParents)
        return try await postbox.read { tx in
            var order: [MediaParent] = []
            var resources: [MediaParent: [String]] = [:]
            var scanned = 0
            try tx.mediaReferences.obtained(before: cutoff) { record in
                scanned += 1
                guard record.status != .gone, kinds.contains(record.parent.kind) else { return true }
                if resources[record.parent] == nil {
                    guard order.count < maxParents else { return true }
                    order.append(record.parent)
                }
                resources[record.parent, default: []].append(record.resourceId)
                return true
            }
            return (order.map { ($0, resources[$0] ?? []) }, scanned)
        }
    }

    /// Runs the pass. Never throws for a cloud failure: it stops sending and reports it in
    /// `cloudFailure` (the job maps it to exit 69).
    public func run(now: Date = Date()) async throws -> Report {
        let started = ContinuousClock.now
        // Another process's outcome is reused when the references it produced are not due by
        // this pass's own rule (obtained after the cutoff), so two passes at once ask each parent
        // once in total: this is never later than the pass's start.
        let reuseSinceMs = Int64((now.timeIntervalSince1970 + options.effectiveWindow - options.referenceTTL) * 1000)
        var report = Report()
        if options.windowIsClamped { report.windowClampedTo = options.effectiveWindow }
        let (selected, scanned) = try await select(now: now)
        report.selectSeconds = RevalidationContext.seconds(ContinuousClock.now - started)
        report.referencesScanned = scanned
        report.parentsSelected = selected.count
        report.referencesSelected = selected.reduce(0) { $0 + $1.1.count }
        var resources: [MediaParent: [String]] = [:]
        for (p, ids) in selected {
            resources[p] = ids
            report.byKind[p.kind, default: KindCounts()].parents += 1
        }
        if options.dryRun { return report }

        // Units of work: messages of one peer in batches, every other parent alone.
        var units: [[MediaParent]] = []
        var byPeer: [PeerId: [MediaParent]] = [:]
        var peerOrder: [PeerId] = []
        for (p, _) in selected {
            if case .message(let id) = p {
                if byPeer[id.peerId] == nil { peerOrder.append(id.peerId) }
                byPeer[id.peerId, default: []].append(p)
            } else {
                units.append([p])
            }
        }
        let size = max(1, min(options.batchSize, GetMessagesRequest.maxIds))
        var messageUnits: [[MediaParent]] = []
        for peer in peerOrder {
            let list = byPeer[peer] ?? []
            for start in stride(from: 0, to: list.count, by: size) { messageUnits.append(Array(list[start..<min(start + size, list.count)])) }
        }
        // Passes on several hosts at once over the same parents each take the units in an
        // order of their own, and put aside a unit another process is calling the cloud for
        // (coming back to it at the end, when its outcome is stored and reused): the hosts share
        // the parents instead of queueing behind one another's calls.
        units = (messageUnits + units).shuffled()
        var deferrable = Array(repeating: true, count: units.count)

        let before = await context.stats
        let pacer = CloudRequestPacer(rate: options.requestRate)
        let context = self.context
        let timeout = options.requestTimeout
        let batchSize = size
        // Units are looked at ahead of the calls: `concurrency` calls in flight, and as many
        // units again twice over reading how they stand meanwhile, so the looks (of units other
        // hosts have answered, and of the next one to call) overlap the call in flight instead
        // of following it.
        let calls = PartLimiter(limit: max(1, options.concurrency))
        let width = max(1, options.concurrency) * 3
        let stopped = StopFlag()
        var next = 0
        var stop = false
        var setAsideStarted: ContinuousClock.Instant?
        await withTaskGroup(of: UnitOutcome.self) { group in
            func launch() {
                let (unit, mayDefer) = (units[next], deferrable[next])
                if !mayDefer, setAsideStarted == nil { setAsideStarted = ContinuousClock.now }
                next += 1
                group.addTask {
                    // One read first: a unit another process has answered already costs no lease
                    // (no write under the store's writer lock) and no call.
                    switch await context.look(unit, reuseSinceMs: reuseSinceMs) {
                    case .answered(let outcomes): return .done(outcomes.mapValues { .success($0) })
                    case .held where mayDefer: return .deferred(unit)
                    case .held, .open: break
                    }
                    do {
                        return try await calls.withSlot {
                            // Units looked at before the cloud failed are not sent.
                            if stopped.isSet { return .done([:]) }
                            try await pacer.wait()
                            return .done(await context.refresh(unit, timeout: timeout, reuseSinceMs: reuseSinceMs, batchSize: batchSize))
                        }
                    } catch { return .done([:]) }
                }
            }
            while next < units.count, next < width { launch() }
            while let outcome = await group.next() {
                let results: [MediaParent: Result<ParentReferences, RevalidationError>]
                switch outcome {
                case .deferred(let unit):
                    units.append(unit)
                    deferrable.append(false)
                    report.setAside += 1
                    results = [:]
                case .done(let done):
                    results = done
                }
                for (p, result) in results {
                    switch result {
                    case .success(let s):
                        if s.gone {
                            report.byKind[p.kind, default: KindCounts()].gone += 1
                        } else {
                            report.byKind[p.kind, default: KindCounts()].refreshed += 1
                            let held = s.resourceIds
                            report.byKind[p.kind, default: KindCounts()].referencesRefreshed += (resources[p] ?? []).filter(held.contains).count
                        }
                    case .failure(let e):
                        if e.isGone {
                            report.byKind[p.kind, default: KindCounts()].gone += 1
                        } else {
                            report.byKind[p.kind, default: KindCounts()].failed += 1
                            if report.failures.count < 20 { report.failures.append((p.description, e.description)) }
                            if e.isCloudUnavailable, report.cloudFailure == nil {
                                report.cloudFailure = e
                                stop = true
                                stopped.set()
                            }
                        }
                    }
                }
                if !stop, !Task.isCancelled, next < units.count { launch() }
            }
        }
        let after = await context.stats
        report.calls = after.totalCalls - before.totalCalls
        report.reusedFromOtherProcess = after.reusedFromOtherProcess - before.reusedFromOtherProcess
        report.times = after.times.since(before.times)
        let ended = ContinuousClock.now
        report.seconds = RevalidationContext.seconds(ended - started)
        if let setAsideStarted { report.setAsideSeconds = RevalidationContext.seconds(ended - setAsideStarted) }
        return report
    }

    /// A unit's results, or the unit put aside because another process is calling for it.
    private enum UnitOutcome: Sendable {
        case done([MediaParent: Result<ParentReferences, RevalidationError>])
        case deferred([MediaParent])
    }
}
