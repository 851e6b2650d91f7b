import Foundation
import Postbox

/// A transaction's pending writes, coalesced per key (the last `set` or `remove` of a key wins),
/// sent as one statement: per table, one `INSERT … SELECT unnest(…) ON CONFLICT DO UPDATE` and
/// one `DELETE … WHERE key = ANY(…)`, joined as data-modifying CTEs.
struct PostgresWriteBatch {
    /// Per table: key → new value, or nil for a removal.
    private(set) var tables: [Int32: (table: ValueBoxTable, ops: [ValueBoxKey: Data?])] = [:]

    /// Rows pending (distinct keys over all tables).
    private(set) var count = 0

    var isEmpty: Bool { tables.isEmpty }

    mutating func set(_ table: ValueBoxTable, _ key: ValueBoxKey, _ value: Data) {
        if tables[table.id, default: (table, [:])].ops.updateValue(Data?.some(value), forKey: key) == nil { count += 1 }
    }

    mutating func remove(_ table: ValueBoxTable, _ key: ValueBoxKey) {
        if tables[table.id, default: (table, [:])].ops.updateValue(Data?.none, forKey: key) == nil { count += 1 }
    }

    /// What the batch says about `key`: `.some(value)` written, `.some(nil)` removed, nil untouched.
    func pending(_ table: ValueBoxTable, _ key: ValueBoxKey) -> Data?? {
        tables[table.id]?.ops[key]
    }

    func touches(_ table: ValueBoxTable) -> Bool { tables[table.id] != nil }

    mutating func removeAll() {
        tables.removeAll(keepingCapacity: true)
        count = 0
    }
}
