import Foundation
import Postbox
import Synchronization

/// A scheduler's share of the cluster's work (`ClusterWorkQueue`): at a due fire it adds the
/// job's items, and one worker per job on this host claims the job's items one at a time, runs
/// each as a run of the job over that one account, renews the item's lease while it runs and
/// marks it done, claiming the job's next item in the same statement. A host thus holds at most
/// one item per job at a time, so the accounts of a fire spread over the hosts that see it. It
/// also reports, once per (account, fire), the items another host claimed
/// (`scheduler.claimed_elsewhere`). Items added or handed back by any host are announced
/// (`listen`), so an idle host's loop starts the job's worker within `newsCheckInterval`.
///
/// A worker that cannot renew its lease fences itself: once `ClusterWorkQueue.fenceInterval`
/// has passed since it sent the last renewal that succeeded (or a renewal finds the item taken
/// over), it cancels the run — its transfers and file writes stop — logs `scheduler.fenced`, and
/// hands the item back only if the claim's fencing token still holds it.
final class ClusterWork: Sendable {
    let queue: any ClusterWorkQueue
    /// The jobs whose worker runs on this host.
    private let workers = Mutex<Set<String>>([])
    /// The items of recent fires not yet claimed here nor reported as claimed elsewhere.
    private let watched = WatchedFires()
    /// Set when the queue announces items added or handed back; taken by the scheduler's loop.
    private let news = Mutex(false)
    /// Whether the last attempt to listen for news succeeded (a failure is logged once).
    private let listening = Mutex(true)

    init(queue: any ClusterWorkQueue) { self.queue = queue }

    /// How often the scheduler's loop looks for news: the longest a new item waits for a host
    /// with nothing to do, beside the claim itself.
    static let newsCheckInterval: TimeInterval = 0.1

    /// Keeps the queue's news connection open; a failure is logged once, and the poll remains.
    func listen(log: JobLogger) async {
        do {
            try await queue.listen { [weak self] in self?.news.withLock { $0 = true } }
            listening.withLock { $0 = true }
        } catch {
            if listening.withLock({
                let was = $0; $0 = false; return was
            }) {
                log.warning("scheduler.listen_failed", ["error": .string("\(error)"), "poll_s": .double(pollSeconds)])
            }
        }
    }

    /// True once after the queue announced news.
    func takeNews() -> Bool {
        news.withLock {
            let arrived = $0; $0 = false; return arrived
        }
    }

    var pollSeconds: TimeInterval { Double(queue.pollInterval.components.seconds) + Double(queue.pollInterval.components.attoseconds) / 1e18 }

    /// Adds `job`'s items for its fire at `due`; a failure is logged and the fire left to the
    /// other hosts (each adds the same items).
    func enqueue(_ job: JobFile, due: Date, log: JobLogger) async {
        do {
            try await queue.enqueue(job: job.name, accounts: job.accounts, fire: due)
            await watched.watch(job: job.name, fireMs: ClusterWorkItem.milliseconds(due), accounts: job.accounts)
        } catch {
            log.warning("scheduler.claim_failed", ["due": .string(Self.time(due)), "error": .string("\(error)")])
        }
    }

    /// Starts `job`'s worker on this host unless one is running.
    func startWorker(for job: JobFile, in group: inout TaskGroup<Void>, runner: JobRunner, tracker: RunTracker, logger: JobLogger) {
        guard workers.withLock({ $0.insert(job.name).inserted }) else { return }
        group.addTask {
            defer { self.workers.withLock { _ = $0.remove(job.name) } }
            let queue = self.queue
            let log = logger.with(job: job.name, run: nil)
            // The next item, claimed by the statement that finished the previous one.
            var carried: (claim: ClusterWorkClaim, sentAt: ContinuousClock.Instant)?
            var drained = false
            while !Task.isCancelled, !drained {
                let claim: ClusterWorkClaim
                let claimSentAt: ContinuousClock.Instant  // the lease counts from no earlier than this
                if let next = carried {
                    (claim, claimSentAt) = next
                    carried = nil
                } else {
                    claimSentAt = ContinuousClock.now
                    let found: ClusterWorkClaim?
                    do { found = try await queue.claim(job: job.name) } catch {
                        log.warning("scheduler.claim_failed", ["error": .string("\(error)")])
                        return
                    }
                    guard let found else { break }
                    claim = found
                }
                let item = claim.item
                _ = await self.watched.remove(job: item.job, fireMs: item.fireMs, account: item.account)
                var fields: [String: LogValue] = ["account": .int(item.account), "due": .string(Self.time(item.fire))]
                if let previous = claim.previousHolder {
                    fields["previous_holder"] = .string(previous.description)
                    log.warning("scheduler.took_over", fields)
                } else {
                    log.info("scheduler.claimed", fields)
                }
                var single = job
                single.accounts = [item.account]
                await tracker.started(job.name)
                // The run is a task of its own so that the lease's fence can cancel it alone.
                let running = Task { await runner.run(single, fire: item.fire) }
                let holding = Task {
                    await Self.hold(claim, sentAt: claimSentAt, queue: queue, log: log.with(["account": .int(item.account)])) { running.cancel() }
                }
                let result = await withTaskCancellationHandler {
                    await running.value
                } onCancel: {
                    running.cancel()
                }
                holding.cancel()
                let fenced = await holding.value
                await tracker.finished(result)
                do {
                    if result.outcome == .cancelled && (fenced || Task.isCancelled) {
                        // Fenced, or this host is stopping: another host runs the item now, not
                        // after the lease — if it is still this claim's to hand back.
                        if !(try await queue.release(claim)) && !fenced { log.warning("scheduler.lease_lost", fields) }
                    } else if Task.isCancelled {
                        if !(try await queue.finish(claim, outcome: result.outcome.rawValue)) { log.warning("scheduler.lease_lost", fields) }
                    } else {
                        let sentAt = ContinuousClock.now
                        let (finished, next) = try await queue.finishAndClaimNext(claim, outcome: result.outcome.rawValue)
                        if !finished { log.warning("scheduler.lease_lost", fields) }
                        if let next { carried = (next, sentAt) } else { drained = true }
                    }
                } catch {
                    log.warning("scheduler.finish_failed", fields.merging(["error": .string("\(error)")]) { a, _ in a })
                }
            }
            // Stopping with an item claimed for the next turn: it goes back at once.
            if let carried { _ = try? await queue.release(carried.claim) }
            await self.report(job.name, log: log)
        }
    }

    /// Logs `scheduler.claimed_elsewhere` for each watched item another host has claimed.
    func reportClaimedElsewhere(logger: JobLogger) async {
        for job in await watched.jobs {
            await report(job, log: logger.with(job: job, run: nil))
        }
    }

    private func report(_ job: String, log: JobLogger) async {
        for fireMs in await watched.fires(job: job) {
            guard let elsewhere = try? await queue.claimedElsewhere(job: job, fireMs: fireMs) else { return }
            let fire = Date(timeIntervalSince1970: Double(fireMs) / 1000)
            for claim in elsewhere where await watched.remove(job: job, fireMs: fireMs, account: claim.account) {
                log.info(
                    "scheduler.claimed_elsewhere",
                    ["account": .int(claim.account), "due": .string(Self.time(fire)), "holder": .string(claim.holder.description)])
            }
        }
    }

    /// Renews the claim's lease every third of it until cancelled; calls `fence` and returns
    /// true when the holder must stop acting: the item was taken over, or no renewal has
    /// succeeded for `fenceInterval` (counted from when the last good one was sent, so the lease
    /// the server extended then has not yet run out).
    private static func hold(
        _ claim: ClusterWorkClaim, sentAt: ContinuousClock.Instant, queue: any ClusterWorkQueue, log: JobLogger,
        fence: @escaping @Sendable () -> Void
    ) async -> Bool {
        let item = claim.item
        let clock = ContinuousClock()
        let lease = LeaseState(claimedAt: sentAt)
        let renewal = Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: queue.renewalInterval) } catch { return }
                let sent = clock.now
                do {
                    if try await queue.renew(claim) {
                        lease.renewed(sentAt: sent)
                    } else {
                        lease.lost("the item was taken over")
                        return
                    }
                } catch {
                    // The next renewal tries again; the fence below stops the run before the
                    // lease can run out if none succeeds.
                    log.warning("scheduler.renew_failed", ["error": .string("\(error)")])
                }
            }
        }
        defer { renewal.cancel() }
        while true {
            let (renewedAt, lostReason) = lease.current
            let deadline = renewedAt + queue.fenceInterval
            let reason = lostReason ?? (clock.now >= deadline ? "no lease renewal succeeded for \(queue.fenceInterval)" : nil)
            if let reason {
                fence()
                log.error(
                    "scheduler.fenced",
                    [
                        "due": .string(time(item.fire)), "reason": .string(reason),
                        "msg": .string("stopped the run of \(item) before its lease could run out: \(reason)"),
                    ])
                return true
            }
            // Wakes at the deadline, or sooner to notice a lost item.
            let wake = min(deadline, clock.now + .milliseconds(250))
            do { try await Task.sleep(until: wake, clock: clock) } catch { return false }
        }
    }

    static func time(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }
}

/// When the last renewal of a claim that succeeded was sent (the claim itself at first), and
/// why the claim was lost, if it was: written by the renewing task, read by the fence.
final class LeaseState: Sendable {
    private let state: Mutex<(renewedAt: ContinuousClock.Instant, lost: String?)>

    init(claimedAt: ContinuousClock.Instant) { state = Mutex((claimedAt, nil)) }

    var current: (renewedAt: ContinuousClock.Instant, lost: String?) { state.withLock { $0 } }
    func renewed(sentAt: ContinuousClock.Instant) { state.withLock { $0.renewedAt = max($0.renewedAt, sentAt) } }
    func lost(_ reason: String) { state.withLock { $0.lost = $0.lost ?? reason } }
}

/// (job, fire) → the accounts whose items are not yet accounted for; fires older than an hour
/// are dropped.
actor WatchedFires {
    private var open: [String: [Int64: Set<Int64>]] = [:]

    func watch(job: String, fireMs: Int64, accounts: [Int64]) {
        let cutoff = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
        open[job, default: [:]] = open[job, default: [:]].filter { $0.key >= cutoff }
        if open[job]?[fireMs] == nil { open[job, default: [:]][fireMs] = Set(accounts) }
    }

    var jobs: [String] { open.filter { !$0.value.isEmpty }.keys.sorted() }
    func fires(job: String) -> [Int64] { open[job, default: [:]].keys.sorted() }

    /// True the first time an item is accounted for.
    func remove(job: String, fireMs: Int64, account: Int64) -> Bool {
        guard open[job]?[fireMs]?.remove(account) != nil else { return false }
        if open[job]?[fireMs]?.isEmpty == true { open[job]?[fireMs] = nil }
        return true
    }
}
