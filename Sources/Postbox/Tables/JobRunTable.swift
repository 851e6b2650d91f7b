import Foundation

/// Job run history keyed `job name, 0x00, startedAt(8), runId` so one job's runs scan newest
/// first by prefix.
///
/// Beside the history, the table indexes each job's latest success and latest failure, keyed
/// `0x00, 'S' or 'F', job name` (no job name starts with a zero byte, so the two never meet):
/// `jobrun status` finds them however many newer runs the history holds, and history
/// retention never removes them.
public final class JobRunTable: Table {
    private func prefix(_ job: String) -> ValueBoxKey { ValueBoxKey(string: job) + ValueBoxKey(bytes: [0]) }

    /// The finished runs the table indexes per job.
    public enum Latest: UInt8, Sendable, CaseIterable {
        /// The latest run that succeeded (never a dry run).
        case success = 0x53
        /// The latest run that failed or timed out.
        case failure = 0x46

        init?(_ run: JobRunRecord) {
            switch run.outcome {
            case .succeeded where !run.dryRun: self = .success
            case .failed, .timedOut: self = .failure
            default: return nil
            }
        }
    }

    private func latestKey(_ job: String, _ which: Latest) -> ValueBoxKey { ValueBoxKey(bytes: [0, which.rawValue]) + ValueBoxKey(string: job) }

    private func key(_ run: JobRunRecord) -> ValueBoxKey {
        var t = ValueBoxKey(length: 8)
        t.setInt64(0, value: run.startedAt)
        return prefix(run.job) + t + ValueBoxKey(string: run.runId)
    }

    /// Inserts or updates a run (start, then end with the outcome).
    public func set(_ run: JobRunRecord) throws {
        try checkWrite()
        let value = PostboxEncoder.encode(run)
        try valueBox.set(table, key: key(run), value: value)
        if let which = Latest(run), try latest(job: run.job, which).map({ $0.startedAt <= run.startedAt }) ?? true {
            try valueBox.set(table, key: latestKey(run.job, which), value: value)
        }
        state.record { $0.updatedJobRuns.insert(run.job) }
    }

    /// The latest success or failure of `job`, from the index; nil when it has none (or only
    /// in a history written before the index existed).
    public func latest(job: String, _ which: Latest) throws -> JobRunRecord? {
        try checkRead()
        return try valueBox.get(table, key: latestKey(job, which)).map { try PostboxDecoder.decode(JobRunRecord.self, from: $0) }
    }

    /// The most recent runs of `job`, newest first.
    public func recent(job: String, limit: Int) throws -> [JobRunRecord] {
        try checkRead()
        var out: [JobRunRecord] = []
        try valueBox.range(table, .prefix(prefix(job), descending: true), limit: limit) { _, data in
            out.append(try PostboxDecoder.decode(JobRunRecord.self, from: data))
            return true
        }
        return out
    }

    /// The names of every job with recorded runs.
    public func jobNames() throws -> [String] {
        try checkRead()
        var names: [String] = []
        var lower: ValueBoxKey? = ValueBoxKey(bytes: [1])  // past the index keys
        while true {
            var found: String?
            let range = ValueBoxRange(lower: lower, lowerInclusive: true, upper: nil, upperInclusive: true)
            try valueBox.rangeKeys(table, range, limit: 1) { key in
                if let zero = key.bytes.firstIndex(of: 0) { found = String(decoding: key.bytes[..<zero], as: UTF8.self) }
                return false
            }
            guard let name = found else { break }
            names.append(name)
            lower = ValueBoxKey(string: name) + ValueBoxKey(bytes: [1])
        }
        return names
    }

    /// Removes all but the newest `keep` runs of `job` (history retention).
    ///
    /// The store counts the runs, and only the excess is read, oldest first: a run that ends
    /// with a full history reads one key, not the `keep` it leaves in place.
    public func prune(job: String, keep: Int) throws {
        try checkWrite()
        let runs = ValueBoxRange.prefix(prefix(job))
        let excess = try valueBox.count(table, runs) - max(keep, 0)
        guard excess > 0 else { return }
        var oldest: [ValueBoxKey] = []
        try valueBox.rangeKeys(table, runs, limit: excess) { key in
            oldest.append(key)
            return true
        }
        for k in oldest { try valueBox.remove(table, key: k) }
    }
}
