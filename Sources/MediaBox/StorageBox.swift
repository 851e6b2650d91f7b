import ConfinedFiles
import Foundation
import Postbox

/// The index of what MediaBox holds (Telegram-iOS's `StorageBox`): one row per complete resource with
/// its peer, message, content type, size and last access, a last-access index for LRU, and
/// running totals per location, peer, content type and (peer, content type), all kept in
/// step inside the same transaction as the row change. `media/storage/storage.sqlite`, its own
/// SQLite file (WAL), shared by every process using the media directory.
///
/// Thread-safe (a lock serialises use of the one connection); processes coordinate through
/// SQLite (`BEGIN IMMEDIATE` + busy timeout).
public final class StorageBox: @unchecked Sendable {
    // @unchecked Sendable: `valueBox` is only touched while holding `lock`.
    public let path: String
    public let readOnly: Bool
    private let valueBox: SqliteValueBox
    private let lock = NSLock()

    /// Opens (creating unless read-only) `directory/storage.sqlite`: in clear, as the media it
    /// indexes, unless given a `key`.
    public init(directory: String, readOnly: Bool = false, key: StoreKey? = nil) throws {
        if !readOnly { _ = try ConfinedDirectory.open(path: directory, create: true, policy: ConfinementPolicy(allowInsecure: true)) }
        self.path = directory + "/storage.sqlite"
        self.readOnly = readOnly
        self.valueBox = try SqliteValueBox(path: path, options: .init(readOnly: readOnly, synchronous: .normal, cacheSizeKiB: 8 * 1024, key: key))
        if !readOnly {
            try write { vb in
                if try vb.get(StorageBoxTables.metadata, key: ValueBoxKey(string: "schema")) == nil {
                    var w = ByteWriter()
                    w.int32(Int32(StorageBoxTables.schemaVersion))
                    try vb.set(StorageBoxTables.metadata, key: ValueBoxKey(string: "schema"), value: w.data)
                }
            }
        }
    }

    // MARK: transactions

    private func write<T>(_ body: (SqliteValueBox) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        try valueBox.begin()
        do {
            let result = try body(valueBox)
            try valueBox.commit()
            return result
        } catch {
            valueBox.rollback()
            throw error
        }
    }

    private func read<T>(_ body: (SqliteValueBox) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        try valueBox.beginRead()
        defer { valueBox.rollback() }
        return try body(valueBox)
    }

    /// Collects totals changes during a transaction and applies them once at the end.
    private struct TotalsDelta {
        var deltas: [ValueBoxKey: StorageUsage] = [:]
        mutating func add(_ e: StorageBoxEntry, sign: Int64) {
            for k in StorageBoxTables.totalsKeys(e) {
                deltas[k, default: StorageUsage()] += StorageUsage(bytes: sign * e.size, count: sign)
            }
        }
        func apply(_ vb: SqliteValueBox) throws {
            for (k, d) in deltas where d != StorageUsage() {
                let current = try vb.get(StorageBoxTables.totals, key: k).map(StorageBoxTables.decodeUsage) ?? StorageUsage()
                let next = current + d
                if next.count <= 0 && next.bytes <= 0 {
                    try vb.remove(StorageBoxTables.totals, key: k)
                } else {
                    try vb.set(StorageBoxTables.totals, key: k, value: StorageBoxTables.encodeUsage(next))
                }
            }
        }
    }

    private func getEntry(_ vb: SqliteValueBox, _ key: MediaStorageKey) throws -> StorageBoxEntry? {
        try vb.get(StorageBoxTables.entries, key: StorageBoxTables.entryKey(key)).map { try StorageBoxTables.decodeEntry(key: key, $0) }
    }

    private func removeRow(_ vb: SqliteValueBox, _ e: StorageBoxEntry, _ delta: inout TotalsDelta) throws {
        try vb.remove(StorageBoxTables.entries, key: StorageBoxTables.entryKey(e.key))
        try vb.remove(StorageBoxTables.lru, key: StorageBoxTables.lruKey(accessTime: e.accessTime, key: e.key))
        delta.add(e, sign: -1)
    }

    private func putRow(_ vb: SqliteValueBox, _ e: StorageBoxEntry, _ delta: inout TotalsDelta) throws {
        try vb.set(StorageBoxTables.entries, key: StorageBoxTables.entryKey(e.key), value: StorageBoxTables.encodeEntry(e))
        try vb.set(StorageBoxTables.lru, key: StorageBoxTables.lruKey(accessTime: e.accessTime, key: e.key), value: StorageBoxTables.lruValue(e))
        delta.add(e, sign: 1)
    }

    // MARK: updates

    /// Inserts or replaces rows (one transaction), adjusting every total.
    public func insert(_ entries: [StorageBoxEntry]) throws {
        guard !entries.isEmpty else { return }
        try write { vb in
            var delta = TotalsDelta()
            for e in entries {
                if let old = try getEntry(vb, e.key) { try removeRow(vb, old, &delta) }
                try putRow(vb, e, &delta)
            }
            try delta.apply(vb)
        }
    }

    public func insert(_ entry: StorageBoxEntry) throws { try insert([entry]) }

    /// Records an access (moves the rows in the LRU index); unknown keys are ignored.
    /// Access times only move forward.
    public func touch(_ keys: [MediaStorageKey], at time: Int64 = Int64(Date().timeIntervalSince1970)) throws {
        guard !keys.isEmpty else { return }
        try write { vb in
            for k in keys {
                guard var e = try getEntry(vb, k), e.accessTime < time else { continue }
                try vb.remove(StorageBoxTables.lru, key: StorageBoxTables.lruKey(accessTime: e.accessTime, key: k))
                e.accessTime = time
                try vb.set(StorageBoxTables.entries, key: StorageBoxTables.entryKey(k), value: StorageBoxTables.encodeEntry(e))
                try vb.set(StorageBoxTables.lru, key: StorageBoxTables.lruKey(accessTime: time, key: k), value: StorageBoxTables.lruValue(e))
            }
        }
    }

    /// Sets access times exactly (tests, imports): unlike `touch`, may move them backwards.
    public func setAccessTimes(_ times: [(MediaStorageKey, Int64)]) throws {
        try write { vb in
            for (k, time) in times {
                guard var e = try getEntry(vb, k) else { continue }
                try vb.remove(StorageBoxTables.lru, key: StorageBoxTables.lruKey(accessTime: e.accessTime, key: k))
                e.accessTime = time
                try vb.set(StorageBoxTables.entries, key: StorageBoxTables.entryKey(k), value: StorageBoxTables.encodeEntry(e))
                try vb.set(StorageBoxTables.lru, key: StorageBoxTables.lruKey(accessTime: time, key: k), value: StorageBoxTables.lruValue(e))
            }
        }
    }

    /// Removes rows (one transaction) and returns the ones that existed.
    @discardableResult
    public func remove(_ keys: [MediaStorageKey]) throws -> [StorageBoxEntry] {
        guard !keys.isEmpty else { return [] }
        return try write { vb in
            var delta = TotalsDelta()
            var removed: [StorageBoxEntry] = []
            for k in keys {
                guard let e = try getEntry(vb, k) else { continue }
                try removeRow(vb, e, &delta)
                removed.append(e)
            }
            try delta.apply(vb)
            return removed
        }
    }

    // MARK: queries

    public func entry(_ key: MediaStorageKey) throws -> StorageBoxEntry? {
        try read { try getEntry($0, key) }
    }

    /// Which of `keys` have rows (one read transaction).
    public func existingKeys(_ keys: [MediaStorageKey]) throws -> Set<MediaStorageKey> {
        try read { vb in
            var out = Set<MediaStorageKey>()
            for k in keys where try vb.exists(StorageBoxTables.entries, key: StorageBoxTables.entryKey(k)) { out.insert(k) }
            return out
        }
    }

    /// Up to `limit` rows of the last-access index after `cursor` (oldest first). Pass the last
    /// row's `cursor` to continue; rows removed meanwhile are simply not seen again.
    public func leastRecentlyUsed(after cursor: ValueBoxKey?, limit: Int) throws -> [StorageBoxLRURow] {
        try read { vb in
            var rows: [StorageBoxLRURow] = []
            rows.reserveCapacity(min(limit, 65536))
            let range = ValueBoxRange(lower: cursor, lowerInclusive: false, upper: nil, upperInclusive: true)
            try vb.range(StorageBoxTables.lru, range, limit: limit) { k, v in
                rows.append(try StorageBoxTables.decodeLRU(key: k, value: v))
                return true
            }
            return rows
        }
    }

    /// Up to `limit` entries in key order after `cursor` (for reconciliation).
    public func entries(after cursor: MediaStorageKey?, limit: Int) throws -> [StorageBoxEntry] {
        try read { vb in
            var out: [StorageBoxEntry] = []
            let range = ValueBoxRange(lower: cursor.map(StorageBoxTables.entryKey), lowerInclusive: false, upper: nil, upperInclusive: true)
            try vb.range(StorageBoxTables.entries, range, limit: limit) { k, v in
                out.append(try StorageBoxTables.decodeEntry(key: try StorageBoxTables.storageKey(entryKey: k), v))
                return true
            }
            return out
        }
    }

    public var count: Int { get throws { try read { try $0.count(StorageBoxTables.entries) } } }

    /// Usage from the running totals (a few rows per peer; never touches the file system).
    public func stats() throws -> StorageStats {
        try read { vb in
            var s = StorageStats()
            try vb.scan(StorageBoxTables.totals) { k, v in
                let u = StorageBoxTables.decodeUsage(v)
                switch k.getUInt8(0) {
                case 0: if let l = MediaStorageLocation(rawValue: k.getUInt8(1)) { s.byLocation[l] = u }
                case 1: s.byPeer[PeerId(k.getInt64(1))] = u
                case 2: if let c = MediaContentType(rawValue: k.getUInt8(1)) { s.byContentType[c] = u }
                case 3:
                    if let c = MediaContentType(rawValue: k.getUInt8(9)) {
                        s.byPeerAndContentType[PeerContentType(peerId: PeerId(k.getInt64(1)), contentType: c)] = u
                    }
                default: break
                }
                return true
            }
            return s
        }
    }

    /// Rebuilds the totals from the rows (reconciliation; O(rows), no file system).
    public func recomputeTotals() throws {
        try write { vb in
            var delta = TotalsDelta()
            try vb.scan(StorageBoxTables.entries) { k, v in
                delta.add(try StorageBoxTables.decodeEntry(key: try StorageBoxTables.storageKey(entryKey: k), v), sign: 1)
                return true
            }
            try vb.removeAll(StorageBoxTables.totals)
            try delta.apply(vb)
        }
    }

    /// How the media files are arranged, as recorded once a migration finished: `.flat` when
    /// nothing is recorded (a store written before sharding, or a new one not yet opened for writing).
    public func mediaLayout() throws -> MediaLayout {
        try read { vb in
            guard let v = try vb.get(StorageBoxTables.metadata, key: StorageBoxTables.layoutKey) else { return .flat }
            var r = ByteReader(v)
            let raw = UInt32(bitPattern: try r.int32())
            guard let layout = MediaLayout(rawValue: raw) else { throw MediaBoxError.corruptIndex("unknown media layout \(raw)") }
            return layout
        }
    }

    /// Records the layout (after the files are durably in it).
    public func setMediaLayout(_ layout: MediaLayout) throws {
        try write { vb in
            var w = ByteWriter()
            w.int32(Int32(bitPattern: layout.rawValue))
            try vb.set(StorageBoxTables.metadata, key: StorageBoxTables.layoutKey, value: w.data)
        }
    }

    /// Shrinks the file after large removals (incremental vacuum + WAL truncate).
    @discardableResult
    public func compact() throws -> Int64 {
        lock.lock()
        defer { lock.unlock() }
        return try valueBox.compact()
    }
}
