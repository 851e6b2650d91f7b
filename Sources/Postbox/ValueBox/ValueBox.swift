import Foundation

/// How a table's keys are stored: 8-byte integers (SQLite INTEGER PRIMARY KEY, ordered as
/// signed integers) or arbitrary bytes (BLOB PRIMARY KEY, ordered by memcmp).
public enum ValueBoxKeyType: Int32, Sendable {
    case binary = 0
    case int64 = 1
}

/// A table of a `ValueBox`. Its `id` is part of the on-disk contract (`t<id>`): never renumber.
public struct ValueBoxTable: Hashable, Sendable {
    public let id: Int32
    public let keyType: ValueBoxKeyType
    public init(id: Int32, keyType: ValueBoxKeyType) {
        self.id = id
        self.keyType = keyType
    }
}

/// What a `filteredRange` visitor wants done with a row.
public enum ValueBoxFilterResult: Sendable {
    case accept
    case skip
    case stop
}

/// A key interval and a direction. `nil` bounds are open.
public struct ValueBoxRange: Sendable {
    public var lower: ValueBoxKey?
    public var lowerInclusive: Bool
    public var upper: ValueBoxKey?
    public var upperInclusive: Bool
    public var descending: Bool

    public init(lower: ValueBoxKey?, lowerInclusive: Bool, upper: ValueBoxKey?, upperInclusive: Bool, descending: Bool = false) {
        self.lower = lower
        self.lowerInclusive = lowerInclusive
        self.upper = upper
        self.upperInclusive = upperInclusive
        self.descending = descending
    }

    /// Telegram's semantics: keys strictly between `start` and `end`, ascending when
    /// `start < end`, descending otherwise.
    public static func between(_ start: ValueBoxKey, _ end: ValueBoxKey) -> ValueBoxRange {
        if start <= end {
            return ValueBoxRange(lower: start, lowerInclusive: false, upper: end, upperInclusive: false)
        }
        return ValueBoxRange(lower: end, lowerInclusive: false, upper: start, upperInclusive: false, descending: true)
    }

    /// Every key that starts with `prefix`.
    public static func prefix(_ prefix: ValueBoxKey, descending: Bool = false) -> ValueBoxRange {
        ValueBoxRange(lower: prefix, lowerInclusive: true, upper: prefix.prefixUpperBound, upperInclusive: false, descending: descending)
    }

    /// Every key.
    public static let all = ValueBoxRange(lower: nil, lowerInclusive: true, upper: nil, upperInclusive: true)
}

/// Ordered key-value storage with transactions: the bottom layer of Postbox.
///
/// Iteration is by closure: a visitor returns `false` (or `.stop`) to stop early, and nothing is
/// collected into arrays. Every operation throws the store's error (busy past the timeout,
/// disk full, corruption) instead of crashing. Its maintenance (integrity check, checkpoint,
/// vacuum, usage) is `ValueBoxMaintenance`, which every engine implements.
public protocol ValueBox: ValueBoxMaintenance {
    /// Starts a write transaction (`BEGIN IMMEDIATE`: the write lock is taken now, so a second
    /// process waits on the busy timeout instead of failing at commit).
    func begin() throws
    /// Starts a read transaction: a consistent snapshot that never blocks writers (WAL).
    func beginRead() throws
    func commit() throws
    func rollback()

    func get(_ table: ValueBoxTable, key: ValueBoxKey) throws -> Data?
    /// Lends the value at `key` to `body` without a copy (valid only during the call) and returns
    /// true, or returns false if there is none: a point read that decodes straight from the
    /// store's buffer. (Not generic: a generic requirement called through `any ValueBox`
    /// instantiates type metadata on every call.)
    func withValue(_ table: ValueBoxTable, key: ValueBoxKey, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool
    /// The values of those of `keys` that exist (a missing key is absent from the result), read
    /// together: one round trip on a server, where a `get` per key costs one each. Sees the
    /// transaction's own writes, as `get` does. For a transaction that reads a known set of rows
    /// before it writes them (the writer lock is held meanwhile).
    func get(_ table: ValueBoxTable, keys: [ValueBoxKey]) throws -> [ValueBoxKey: Data]
    func exists(_ table: ValueBoxTable, key: ValueBoxKey) throws -> Bool
    func set(_ table: ValueBoxTable, key: ValueBoxKey, value: Data) throws
    func remove(_ table: ValueBoxTable, key: ValueBoxKey) throws

    func range(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        values: (ValueBoxKey, Data) throws -> Bool) throws
    func rangeKeys(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        keys: (ValueBoxKey) throws -> Bool) throws
    /// Values only, in key order, lent without a copy: the buffer is valid only during the call
    /// (the cheapest full-row scan; decode it with `PostboxDecoder.decode(_:borrowing:)`).
    func rangeValues(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        values: (UnsafeRawBufferPointer) throws -> Bool) throws
    func count(_ table: ValueBoxTable, _ range: ValueBoxRange) throws -> Int
    func removeRange(_ table: ValueBoxTable, _ range: ValueBoxRange) throws
    /// The keys under each of `prefixes` (each as `ValueBoxRange.prefix` would visit them, in
    /// key order), read together: one round trip on a server, where a range per prefix costs one
    /// each. A prefix with no keys maps to an empty list. For a transaction that reads the index
    /// entries of a known set of entities before it writes them (the writer lock is held
    /// meanwhile).
    func keys(_ table: ValueBoxTable, prefixes: [ValueBoxKey]) throws -> [ValueBoxKey: [ValueBoxKey]]

    /// A number that changes when another connection (another process or host) has committed a
    /// write since this one last looked, and does not change for this connection's own commits:
    /// Postbox drops its table caches when it moves. Cheap: called at the start of every
    /// transaction, inside it.
    func dataVersion() throws -> Int64
}

public extension ValueBox {
    /// A range per prefix: what an embedded engine, with no round trips to save, does.
    func keys(_ table: ValueBoxTable, prefixes: [ValueBoxKey]) throws -> [ValueBoxKey: [ValueBoxKey]] {
        var out: [ValueBoxKey: [ValueBoxKey]] = [:]
        for prefix in prefixes where out[prefix] == nil {
            var found: [ValueBoxKey] = []
            try rangeKeys(table, .prefix(prefix), limit: .max) { key in
                found.append(key)
                return true
            }
            out[prefix] = found
        }
        return out
    }

    /// Through `get` (a copy): for value boxes that cannot lend their buffers.
    func withValue(_ table: ValueBoxTable, key: ValueBoxKey, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let data = try get(table, key: key) else { return false }
        try data.withUnsafeBytes(body)
        return true
    }

    /// Keys strictly between `start` and `end` (descending when `start > end`), as in Telegram.
    func range(
        _ table: ValueBoxTable, start: ValueBoxKey, end: ValueBoxKey, limit: Int = .max,
        values: (ValueBoxKey, Data) throws -> Bool
    ) throws {
        try range(table, .between(start, end), limit: limit, values: values)
    }

    /// Like `range`, but the visitor may skip rows without counting them against `limit`.
    func filteredRange(
        _ table: ValueBoxTable, _ range: ValueBoxRange, limit: Int,
        values: (ValueBoxKey, Data) throws -> ValueBoxFilterResult
    ) throws {
        var accepted = 0
        guard limit > 0 else { return }
        try self.range(table, range, limit: .max) { key, value in
            switch try values(key, value) {
            case .accept:
                accepted += 1
                return accepted < limit
            case .skip:
                return true
            case .stop:
                return false
            }
        }
    }

    func filteredRange(
        _ table: ValueBoxTable, start: ValueBoxKey, end: ValueBoxKey, limit: Int = .max,
        values: (ValueBoxKey, Data) throws -> ValueBoxFilterResult
    ) throws {
        try filteredRange(table, .between(start, end), limit: limit, values: values)
    }

    /// Every row in key order.
    func scan(_ table: ValueBoxTable, values: (ValueBoxKey, Data) throws -> Bool) throws {
        try range(table, .all, limit: .max, values: values)
    }

    func count(_ table: ValueBoxTable, start: ValueBoxKey, end: ValueBoxKey) throws -> Int {
        try count(table, .between(start, end))
    }

    func count(_ table: ValueBoxTable) throws -> Int { try count(table, .all) }

    /// Removes `start ≤ key ≤ end` (both inclusive, as in Telegram's `removeRange`).
    func removeRange(_ table: ValueBoxTable, start: ValueBoxKey, end: ValueBoxKey) throws {
        try removeRange(table, ValueBoxRange(lower: min(start, end), lowerInclusive: true, upper: max(start, end), upperInclusive: true))
    }

    func removeAll(_ table: ValueBoxTable) throws { try removeRange(table, .all) }
}
