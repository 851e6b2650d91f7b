import Foundation

/// Store-wide values by integer key: the schema version, id counters, and where the rewrite of
/// legacy message rows stands.
public final class MetadataTable: Table {
    enum Key: Int64 {
        case schemaVersion = 0
        case nextUploadItemId = 1
        case nextJobRunId = 2
        /// Present while legacy message rows may remain (`MessageRecordConversion`): the key of
        /// the last message row already rewritten, or empty to start from the first.
        case messageRecordCursor = 3
    }

    func int64(_ key: Key) throws -> Int64? {
        guard let data = try valueBox.get(table, key: ValueBoxKey(key.rawValue)), data.count == 8 else { return nil }
        return data.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(as: Int64.self)) }
    }

    func setInt64(_ key: Key, _ value: Int64) throws {
        try checkWrite()
        try valueBox.set(table, key: ValueBoxKey(key.rawValue), value: withUnsafeBytes(of: value.littleEndian) { Data($0) })
    }

    /// 0 for a new store.
    public func schemaVersion() throws -> Int32 {
        try checkRead()
        return Int32(try int64(.schemaVersion) ?? 0)
    }

    public func setSchemaVersion(_ version: Int32) throws { try setInt64(.schemaVersion, Int64(version)) }

    /// The next value of a persistent counter (1, 2, 3, … per store).
    func nextId(_ key: Key) throws -> Int64 {
        let next = (try int64(key) ?? 0) + 1
        try setInt64(key, next)
        return next
    }

    /// Where the rewrite of legacy message rows stands, or nil when none remain.
    func messageRecordCursor() throws -> MessageRecordCursor? {
        guard let data = try valueBox.get(table, key: ValueBoxKey(Key.messageRecordCursor.rawValue)) else { return nil }
        return data.isEmpty ? .fromStart : .after(ValueBoxKey(bytes: [UInt8](data)))
    }

    /// Records the rewrite's progress; nil once no legacy row remains.
    func setMessageRecordCursor(_ cursor: MessageRecordCursor?) throws {
        try checkWrite()
        let key = ValueBoxKey(Key.messageRecordCursor.rawValue)
        switch cursor {
        case nil: try valueBox.remove(table, key: key)
        case .fromStart: try valueBox.set(table, key: key, value: Data())
        case .after(let last): try valueBox.set(table, key: key, value: Data(last.bytes))
        }
    }
}
