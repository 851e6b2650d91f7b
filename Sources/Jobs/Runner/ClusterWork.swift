import Foundation
import Synchronization

/// A scheduler's share of the cluster's work (`ClusterWorkQueue`): at a due fire it adds the
/// job's items, and one worker per job on this host claims the job's items one at a time, runs
/// each as a run of the job over that one account, renews the item's lease while it runs and
/// marks it done. A host thus holds at most one item per job at a time, so the accounts of a
/// fire spread over the hosts that see it. It also reports, once per (account, fire), the items
/// another host claimed (`scheduler.claimed_elsewhere`).
final class ClusterWork: Sendable {
    let queue: ClusterWorkQueue
    /// The jobs whose worker runs on this host.
    private let workers = Mutex<Set<String>>([])
    /// The items of recent fires not yet claimed here nor reported as claimed elsewhere.
    private let watched = WatchedFires()

    init(queue: ClusterWorkQueue) { self.queue = queue }

    var pollSeconds: TimeInterval { Double(queue.pollInterval.components.seconds) + Double(queue.pollInterval.components.attoseconds) / 1e18 }

    /// Adds `job`'s items for its fire at `due`; a failure is logged and the fire left to the
    /// other hosts (each adds the same items).
    func enqueue(_ job: JobFile, due: Date, log: JobLogger) async {
        do {
            try await queue.enqueue(job: job.name, accounts: job.accounts, fire: due)
            await watched.watch(job: job.name, fireMs: ClusterWorkQueue.milliseconds(due), accounts: job.accounts)
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
            while !Task.isCancelled {
                let claim: ClusterWorkQueue.Claim?
                do { claim = try await queue.claim(jobs: [job.name]) } catch {
                    log.warning("scheduler.claim_failed", ["error": .string("\(error)")])
                    return
                }
                guard let claim else { break }
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
                let renewal = Task { await Self.renew(item, queue: queue, log: log.with(["account": .int(item.account)])) }
                let result = await runner.run(single, fire: item.fire)
                renewal.cancel()
                await tracker.finished(result)
                do {
                    if result.outcome == .cancelled && Task.isCancelled {
                        // This host is stopping: another host runs the item now, not after the lease.
                        try await queue.release(item)
                    } else if !(try await queue.finish(item, outcome: result.outcome.rawValue)) {
                        log.warning("scheduler.lease_lost", fields)
                    }
                } catch {
                    log.warning("scheduler.finish_failed", fields.merging(["error": .string("\(error)")]) { a, _ in a })
                }
            }
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

    /// Renews `item`'s lease every third of it until cancelled, or until the item is lost.
    private static func renew(_ item: ClusterWorkQueue.Item, queue: ClusterWorkQueue, log: JobLogger) async {
        while true {
            do { try await Task.sleep(for: queue.renewalInterval) } catch { return }
            do {
                if !(try await queue.renew(item)) {
                    log.warning("scheduler.lease_lost", ["due": .string(time(item.fire))])
                    return
                }
            } catch {
                // The next renewal tries again; the lease outlasts two missed renewals.
                log.warning("scheduler.renew_failed", ["error": .string("\(error)")])
            }
        }
    }

    static func time(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }
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
