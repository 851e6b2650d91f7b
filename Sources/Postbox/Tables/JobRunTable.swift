import Foundation

/// Job run history keyed `job name, 0x00, startedAt(8), runId` so one job's runs scan newest
/// first by prefix.
public final class JobRunTable: Table {
    private func prefix(_ job: String) -> ValueBoxKey { ValueBoxKey(string: job) + ValueBoxKey(bytes: [0]) }

    private func key(_ run: JobRunRecord) -> ValueBoxKey {
        var t = ValueBoxKey(length: 8)
        t.setInt64(0, value: run.startedAt)
        return prefix(run.job) + t + ValueBoxKey(string: run.runId)
    }

    /// Inserts or updates a run (start, then end with the outcome).
    public func set(_ run: JobRunRecord) throws {
        try checkWrite()
        try valueBox.set(table, key: key(run), value: PostboxEncoder.encode(run))
        state.record { $0.updatedJobRuns.insert(run.job) }
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
        var lower: ValueBoxKey? = nil
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
