import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// Counts of what a `RevalidationContext` did since it was created.
public struct RevalidationStats: Sendable, Equatable {
    /// Revalidation calls sent, per cloud method wire name.
    public var calls: [String: Int] = [:]
    /// Parents refreshed by this process's calls / found gone / failed.
    public var refreshed = 0
    public var gone = 0
    public var failed = 0
    /// Parents answered from another process's outcome in Postbox.
    public var reusedFromOtherProcess = 0
    /// Requests answered from the short-lived in-process cache.
    public var cacheHits = 0
    /// Where the time went, summed over every unit and call (they may overlap).
    public var times = RevalidationTimes()

    public var totalCalls: Int { calls.values.reduce(0, +) }
}

/// Seconds a `RevalidationContext` spent in each step of its work, summed over units and calls
/// (with calls in flight at once, the sums can exceed the wall time).
public struct RevalidationTimes: Sendable, Equatable {
    /// Reading how a unit stands before taking any lease (and the outcomes another process
    /// stored, when they answer it): a read, no writer lock.
    public var look = 0.0
    /// Taking leases: a write transaction under the store's writer lock.
    public var claim = 0.0
    /// The cloud's calls.
    public var call = 0.0
    /// Storing a call's outcome: a write transaction under the store's writer lock.
    public var commit = 0.0
    /// Reading another process's outcome after a claim found it.
    public var reuse = 0.0
    /// Waiting for another process to let go of a lease it holds.
    public var heldWait = 0.0

    public init() {}

    /// Each step's name and field, in the order a unit goes through them: the one list that
    /// `steps` and `since` follow.
    private static var fields: [(name: String, seconds: WritableKeyPath<RevalidationTimes, Double>)] {
        [("look", \.look), ("claim", \.claim), ("call", \.call), ("commit", \.commit), ("reuse", \.reuse), ("held_wait", \.heldWait)]
    }

    /// The steps and their seconds, in the order a unit goes through them.
    public var steps: [(name: String, seconds: Double)] { Self.fields.map { ($0.name, self[keyPath: $0.seconds]) } }

    /// The time spent since `earlier`, step by step.
    public func since(_ earlier: RevalidationTimes) -> RevalidationTimes {
        var d = self
        for field in Self.fields { d[keyPath: field.seconds] -= earlier[keyPath: field.seconds] }
        return d
    }
}

/// One account's file-reference revalidation, shared by every job of the process (the
/// `ReferenceRevalidator` behind `MultipartFetch`, and the `revalidate-references` job).
///
/// - One request per parent entity at a time: every resource of a parent waits on the same
///   flight; message parents of one peer asked within `coalesceWindow` go out as one
///   `getMessages` of ≤ 100 ids.
/// - Results are reused for `cacheTTL`; failures are remembered with exponential backoff, so a
///   storm of waiters never hammers a failing cloud.
/// - Every wait is bounded by `requestTimeout` (the call itself may continue for later waiters).
/// - Across processes: a Postbox lease per parent; a process that finds another's lease waits for
///   its outcome (or the lease's expiry) and reuses the references it stored.
/// - A parent that no longer holds the file marks the resource gone in Postbox
///   (`RevalidationError.gone`, never retried).
public actor RevalidationContext: ReferenceRevalidator {
    public nonisolated let options: RevalidationOptions
    nonisolated let refetch: ParentRefetch
    nonisolated let leases: RevalidationLeases
    private nonisolated let limiter: PartLimiter
    private nonisolated let pacer: CloudRequestPacer

    private struct Cached { var snapshot: ParentReferences; var until: ContinuousClock.Instant }
    private struct Failure { var error: RevalidationError; var retryAt: ContinuousClock.Instant; var failures: Int32 }
    private enum BatchKey: Hashable { case peer(PeerId), single(MediaParent) }

    private var flights: [MediaParent: RevalidationPromise<ParentReferences>] = [:]
    private var reuseSince: [MediaParent: Int64] = [:]
    private var pending: [BatchKey: [MediaParent]] = [:]
    private var cache: [MediaParent: Cached] = [:]
    private var failures: [MediaParent: Failure] = [:]
    private var counts = RevalidationStats()

    /// - Parameters:
    ///   - client: the account's client (the re-fetch calls).
    ///   - postbox: the account's Postbox (leases and fresh references).
    public init(client: CloudClient, postbox: Postbox, options: RevalidationOptions = RevalidationOptions()) {
        self.options = options
        self.refetch = ParentRefetch(client: client)
        self.leases = RevalidationLeases(postbox: postbox, options: options)
        self.limiter = PartLimiter(limit: max(1, options.maxConcurrentCalls))
        self.pacer = CloudRequestPacer(rate: options.requestRate)
    }

    /// What this context did so far.
    public var stats: RevalidationStats { counts }

    // MARK: ReferenceRevalidator

    public func revalidate(resourceId: MediaResourceId, location: FileLocation, parent: MediaResourceReference) async throws -> FileReference {
        let id = resourceId.stringRepresentation
        guard let mediaParent = parent.mediaParent else { throw RevalidationError.noParent(resourceId: id) }
        if (try? await leases.status(id)) == .gone { throw RevalidationError.gone(resourceId: id, parent: parent) }
        let snapshot = try await references(of: mediaParent, timeout: options.requestTimeout)
        if let fresh = snapshot.reference(resourceId: id, locationId: location.id) { return fresh }
        try? await leases.markGone(resourceId: id, parent: mediaParent)
        throw RevalidationError.gone(resourceId: id, parent: parent)
    }

    // MARK: Public API

    /// The fresh references of `parent`: from the cache, a flight in progress, another process's
    /// outcome, or one call. Throws `RevalidationError` (timed out after `timeout`, failed,
    /// backing off).
    public func references(of parent: MediaParent, timeout: Double? = nil, reuseSinceMs: Int64? = nil) async throws -> ParentReferences {
        let bound = timeout ?? options.requestTimeout
        if let promise = join(parent, reuseSinceMs: reuseSinceMs) {
            return try await promise.wait(timeout: bound, timeoutError: RevalidationError.timedOut(parent: MediaResourceReference(parent), seconds: bound))
        }
        return try answered(parent, reuseSinceMs: reuseSinceMs)
    }

    /// Refreshes many parents at once (the job's path): message parents of one peer go out in
    /// calls of at most `batchSize` ids right away. Each result is the parent's references or
    /// its `RevalidationError`; the whole wait is bounded by `timeout`.
    public func refresh(
        _ parents: [MediaParent], timeout: Double? = nil, reuseSinceMs: Int64? = nil,
        batchSize: Int? = nil
    ) async -> [MediaParent: Result<ParentReferences, RevalidationError>] {
        let bound = timeout ?? options.requestTimeout
        var out: [MediaParent: Result<ParentReferences, RevalidationError>] = [:]
        var waiting: [(MediaParent, RevalidationPromise<ParentReferences>)] = []
        var keys = Set<BatchKey>()
        for p in Set(parents) {
            if let promise = join(p, reuseSinceMs: reuseSinceMs) {
                waiting.append((p, promise))
                keys.insert(key(p))
            } else {
                do { out[p] = .success(try answered(p, reuseSinceMs: reuseSinceMs)) } catch {
                    out[p] = .failure(Self.revalidationError(error, parent: p))
                }
            }
        }
        for k in keys { flush(k, batchSize: batchSize) }
        let deadline = ContinuousClock.now.advanced(by: .seconds(bound))
        for (p, promise) in waiting {
            let left = max(0, Self.seconds(deadline - ContinuousClock.now))
            do {
                out[p] = .success(
                    try await promise.wait(timeout: left, timeoutError: RevalidationError.timedOut(parent: MediaResourceReference(p), seconds: bound)))
            } catch {
                out[p] = .failure(Self.revalidationError(error, parent: p))
            }
        }
        return out
    }

    /// Whether another process is calling the cloud for any of `parents` right now (it holds
    /// their Postbox lease). False when Postbox cannot say: the caller then simply joins.
    public nonisolated func heldElsewhere(_ parents: [MediaParent]) async -> Bool {
        (try? await leases.heldElsewhere(parents)) ?? false
    }

    /// How `parents` stand, read without taking a lease: every one answered at or after
    /// `reuseSinceMs` (by another process, or this one) gives its outcome, which the context
    /// adopts as if it had asked; else whether another process holds one of them now. Open when
    /// Postbox cannot say: the caller then simply asks.
    nonisolated func look(_ parents: [MediaParent], reuseSinceMs: Int64) async -> RevalidationLeases.Look {
        let started = ContinuousClock.now
        let look = (try? await leases.look(parents, reuseSinceMs: reuseSinceMs)) ?? .open
        await spent(\.look, since: started)
        if case .answered(let outcomes) = look { await adopt(outcomes) }
        return look
    }

    /// Remembers outcomes read from Postbox (cache and counts) as a finished flight would,
    /// leaving any flight in progress to finish by itself.
    private func adopt(_ outcomes: [MediaParent: ParentReferences]) {
        let until = ContinuousClock.now.advanced(by: .seconds(options.cacheTTL))
        for (p, s) in outcomes where flights[p] == nil {
            cache[p] = Cached(snapshot: s, until: until)
            failures[p] = nil
            counts.reusedFromOtherProcess += 1
        }
    }

    /// Adds the time since `started` to one step's sum.
    private func spent(_ step: WritableKeyPath<RevalidationTimes, Double>, since started: ContinuousClock.Instant) {
        counts.times[keyPath: step] += Self.seconds(ContinuousClock.now - started)
    }

    // MARK: Flights

    /// The flight to wait on, or nil when the answer is already known (cache, backoff).
    private func join(_ p: MediaParent, reuseSinceMs: Int64?) -> RevalidationPromise<ParentReferences>? {
        let now = ContinuousClock.now
        if let c = cache[p], c.until > now, reuseSinceMs.map({ c.snapshot.obtainedAtMs >= $0 }) ?? true { return nil }
        if let f = failures[p], f.retryAt > now { return nil }
        if let existing = flights[p] { return existing }
        let promise = RevalidationPromise<ParentReferences>()
        flights[p] = promise
        if let since = reuseSinceMs { reuseSince[p] = since }
        let k = key(p)
        pending[k, default: []].append(p)
        let count = pending[k]?.count ?? 0
        if count >= max(1, options.maxBatch) {
            flush(k, batchSize: nil)
        } else if count == 1 {
            flushSoon(k)
        }
        return promise
    }

    /// The known answer for `p` when `join` returned nil.
    private func answered(_ p: MediaParent, reuseSinceMs: Int64?) throws -> ParentReferences {
        let now = ContinuousClock.now
        if let c = cache[p], c.until > now {
            counts.cacheHits += 1
            var s = c.snapshot
            s.source = .cache
            return s
        }
        if let f = failures[p], f.retryAt > now {
            let left = Self.seconds(f.retryAt - now)
            switch f.error {
            case let .failed(parent, reason, unavailable), let .backingOff(parent, reason, _, unavailable):
                throw RevalidationError.backingOff(parent: parent, reason: reason, retryIn: left, cloudUnavailable: unavailable)
            default: throw f.error
            }
        }
        throw RevalidationError.storage(parent: MediaResourceReference(p), reason: "no answer")
    }

    private func key(_ p: MediaParent) -> BatchKey {
        if case .message(let id) = p { return .peer(id.peerId) }
        return .single(p)
    }

    private func flushSoon(_ k: BatchKey) {
        guard case .peer = k else { return flush(k, batchSize: nil) }
        let window = options.coalesceWindow
        Task {
            try? await Task.sleep(for: .seconds(window))
            self.flush(k, batchSize: nil)
        }
    }

    /// Sends what is pending under `k` in calls of at most `batchSize` (≤ `maxBatch`) parents.
    private func flush(_ k: BatchKey, batchSize: Int?) {
        guard let parents = pending.removeValue(forKey: k), !parents.isEmpty else { return }
        let size = max(1, min(batchSize ?? options.maxBatch, options.maxBatch, GetMessagesRequest.maxIds))
        for start in stride(from: 0, to: parents.count, by: size) {
            let batch = Array(parents[start..<min(start + size, parents.count)])
            var thresholds: [MediaParent: Int64] = [:]
            for p in batch { if let s = reuseSince.removeValue(forKey: p) { thresholds[p] = s } }
            let since = thresholds
            Task {
                let results = await self.resolve(batch, reuseSinceMs: since)
                self.finish(results)
            }
        }
    }

    /// Hands each parent's result to its waiters and remembers it (cache or backoff).
    private func finish(_ results: [MediaParent: Result<ParentReferences, RevalidationError>]) {
        let now = ContinuousClock.now
        for (p, result) in results {
            switch result {
            case .success(let s):
                cache[p] = Cached(snapshot: s, until: now.advanced(by: .seconds(options.cacheTTL)))
                failures[p] = nil
                switch s.source {
                case .cloud: if s.gone { counts.gone += 1 } else { counts.refreshed += 1 }
                case .otherProcess: counts.reusedFromOtherProcess += 1
                case .cache: counts.cacheHits += 1
                }
            case .failure(let e):
                let n = (failures[p]?.failures ?? 0) + 1
                if case .failed = e { counts.failed += 1 }
                let wait: Double
                switch e {
                case .failed, .backingOff: wait = options.backoff(failures: n)
                default: wait = 0
                }
                if wait > 0 { failures[p] = Failure(error: e, retryAt: now.advanced(by: .seconds(wait)), failures: n) }
            }
            flights.removeValue(forKey: p)?.fulfill(result.mapError { $0 })
        }
        // Trim expired cache entries now and then.
        if cache.count > 50_000 { cache = cache.filter { $0.value.until > now } }
        if failures.count > 50_000 { failures = failures.filter { $0.value.retryAt > now } }
    }

    private func countCall(_ method: CloudMethod) { counts.calls[method.rawValue, default: 0] += 1 }

    // MARK: One batch (off the actor)

    /// Resolves one batch through the Postbox leases: reuse another process's outcome, wait for
    /// a lease held elsewhere, or call the cloud for the parents whose lease we took.
    private nonisolated func resolve(_ batch: [MediaParent], reuseSinceMs: [MediaParent: Int64]) async -> [MediaParent: Result<
        ParentReferences, RevalidationError
    >] {
        var results: [MediaParent: Result<ParentReferences, RevalidationError>] = [:]
        var remaining = batch
        var since = reuseSinceMs
        let waitStart = RevalidationLeases.nowMs()
        let deadline = ContinuousClock.now.advanced(by: .seconds(options.leaseDuration + options.requestTimeout))
        while !remaining.isEmpty {
            let claims: [MediaParent: RevalidationLeases.Claim]
            let claimStarted = ContinuousClock.now
            do {
                claims = try await leases.claim(remaining, reuseSinceMs: since)
                await spent(\.claim, since: claimStarted)
            } catch {
                for p in remaining { results[p] = .failure(.storage(parent: MediaResourceReference(p), reason: "\(error)")) }
                break
            }
            var mine: [MediaParent] = [], reuse: [MediaParent] = [], held: [MediaParent] = []
            for p in remaining {
                switch claims[p] {
                case .mine?: mine.append(p)
                case .reuse?: reuse.append(p)
                case .held?: held.append(p)
                case let .backoff(lease, retryIn)?:
                    results[p] = .failure(
                        .backingOff(
                            parent: MediaResourceReference(p), reason: lease.lastError ?? "failed",
                            retryIn: Double(retryIn) / 1000, cloudUnavailable: true))
                case nil: held.append(p)
                }
            }
            if !reuse.isEmpty {
                let reuseStarted = ContinuousClock.now
                do {
                    for (p, s) in try await leases.stored(reuse) { results[p] = .success(s) }
                } catch {
                    for p in reuse { results[p] = .failure(.storage(parent: MediaResourceReference(p), reason: "\(error)")) }
                }
                await spent(\.reuse, since: reuseStarted)
            }
            if !mine.isEmpty {
                for (p, r) in await call(mine) { results[p] = r }
            }
            remaining = held
            guard !remaining.isEmpty else { break }
            // Another process is on it: its outcome counts once it is newer than our wait.
            for p in remaining { since[p] = min(since[p] ?? waitStart, waitStart) }
            if ContinuousClock.now >= deadline {
                for p in remaining {
                    results[p] = .failure(.timedOut(parent: MediaResourceReference(p), seconds: options.leaseDuration + options.requestTimeout))
                }
                break
            }
            let waitStarted = ContinuousClock.now
            try? await Task.sleep(for: .seconds(options.pollInterval))
            // Looks (a read) until the other process has let go, and only then classifies again
            // (a write transaction, under the store's writer lock, which that process needs to
            // store its answer).
            while !Task.isCancelled, ContinuousClock.now < deadline, await heldElsewhere(remaining) {
                try? await Task.sleep(for: .seconds(options.pollInterval))
            }
            await spent(\.heldWait, since: waitStarted)
        }
        return results
    }

    /// One cloud call for parents whose lease this process holds; stores the outcome.
    private nonisolated func call(_ parents: [MediaParent]) async -> [MediaParent: Result<ParentReferences, RevalidationError>] {
        guard let kind = parents.first?.kind else { return [:] }
        var out: [MediaParent: Result<ParentReferences, RevalidationError>] = [:]
        do {
            let fetched = try await limiter.withSlot {
                try await pacer.wait()
                await self.countCall(ParentRefetch.method(kind))
                let callStarted = ContinuousClock.now
                do {
                    let answer = try await refetch.fetch(parents, obtainedAt: Int64(Date().timeIntervalSince1970))
                    await self.spent(\.call, since: callStarted)
                    return answer
                } catch {
                    await self.spent(\.call, since: callStarted)
                    throw error
                }
            }
            let commitStarted = ContinuousClock.now
            let stored = try await leases.commit(fetched, atMs: RevalidationLeases.nowMs())
            await spent(\.commit, since: commitStarted)
            for p in parents {
                if let s = stored[p] {
                    out[p] = .success(s)
                } else {
                    out[p] = .failure(.storage(parent: MediaResourceReference(p), reason: "no answer stored"))
                }
            }
        } catch {
            let unavailable = (error as? CloudClientError)?.isCloudUnavailable ?? false
            let reason = (error as? CloudClientError)?.description ?? "\(error)"
            _ = try? await leases.commitFailure(parents, reason: reason, atMs: RevalidationLeases.nowMs())
            for p in parents { out[p] = .failure(.failed(parent: MediaResourceReference(p), reason: reason, cloudUnavailable: unavailable)) }
        }
        return out
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static func revalidationError(_ error: any Error, parent: MediaParent) -> RevalidationError {
        if let e = error as? RevalidationError { return e }
        return .failed(parent: MediaResourceReference(parent), reason: "\(error)", cloudUnavailable: false)
    }
}
