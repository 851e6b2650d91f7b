import Foundation

/// The persistent upload queue (items by id, in enqueue order) and the acknowledged parts of
/// each item (`item(8) part(4)` → empty), written one durable row per acknowledgement.
public final class UploadQueueTable: Table {
    let parts = PostboxTableId.uploadParts.table
    private let metadata: MetadataTable

    init(valueBox: ValueBox, state: TransactionState) {
        metadata = MetadataTable(valueBox: valueBox, table: PostboxTableId.metadata.table, state: state)
        super.init(valueBox: valueBox, table: PostboxTableId.uploadQueue.table, state: state)
    }

    /// A fresh item id (monotonic per store).
    public func nextItemId() throws -> Int64 {
        try checkWrite()
        return try metadata.nextId(.nextUploadItemId)
    }

    public func get(_ id: Int64) throws -> UploadItem? {
        try checkRead()
        return try valueBox.get(table, key: ValueBoxKey(id)).map { try PostboxDecoder.decode(UploadItem.self, from: $0) }
    }

    public func set(_ item: UploadItem) throws {
        try checkWrite()
        try valueBox.set(table, key: ValueBoxKey(item.id), value: PostboxEncoder.encode(item))
        state.record { $0.updatedUploadItems.insert(item.id) }
    }

    /// Items in id (enqueue) order; stop by returning false.
    public func scan(visit: (UploadItem) throws -> Bool) throws {
        try checkRead()
        try valueBox.scan(table) { _, data in try visit(try PostboxDecoder.decode(UploadItem.self, from: data)) }
    }

    private func partKey(_ item: Int64, _ part: Int32) -> ValueBoxKey {
        var k = ValueBoxKey(length: 12)
        k.setInt64(0, value: item)
        k.setInt32(8, value: part)
        return k
    }

    private func itemPrefix(_ item: Int64) -> ValueBoxKey {
        var k = ValueBoxKey(length: 8)
        k.setInt64(0, value: item)
        return k
    }

    public func acknowledge(item: Int64, part: Int32) throws {
        try checkWrite()
        try valueBox.set(parts, key: partKey(item, part), value: Data())
    }

    /// The acknowledged part numbers of `item`, ascending.
    public func acknowledgedParts(item: Int64) throws -> [Int32] {
        try checkRead()
        var out: [Int32] = []
        try valueBox.rangeKeys(parts, .prefix(itemPrefix(item)), limit: .max) { key in
            out.append(key.getInt32(8))
            return true
        }
        return out
    }

    /// Parts 0..<n all acknowledged: the contiguous committed prefix, in parts.
    public func committedPartCount(item: Int64) throws -> Int32 {
        var n: Int32 = 0
        for p in try acknowledgedParts(item: item) {
            if p != n { break }
            n += 1
        }
        return n
    }

    /// Forgets every acknowledgement of `item` (the server dropped the upload; start again).
    public func resetParts(item: Int64) throws {
        try checkWrite()
        try valueBox.removeRange(parts, .prefix(itemPrefix(item)))
    }
}
