import Foundation

/// The persistent upload queue (items by id, in enqueue order), the ids of its open items (queued
/// or uploading), and the acknowledged parts of each item (`item(8) part(4)` → empty), written
/// one durable row per acknowledgement.
///
/// Sent and failed items stay in the queue until history retention prunes them, so a queue that
/// has sent many files is mostly finished items: the open-item index lets a worker claiming the
/// next item read only those still to send.
public final class UploadQueueTable: Table {
    let parts = PostboxTableId.uploadParts.table
    let open = PostboxTableId.uploadQueueOpen.table
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
        let key = ValueBoxKey(item.id)
        try valueBox.set(table, key: key, value: PostboxEncoder.encode(item))
        if item.state.isOpen { try valueBox.set(open, key: key, value: Data()) } else { try valueBox.remove(open, key: key) }
        state.record { $0.updatedUploadItems.insert(item.id) }
    }

    /// Items in id (enqueue) order; stop by returning false.
    public func scan(visit: (UploadItem) throws -> Bool) throws {
        try checkRead()
        try valueBox.scan(table) { _, data in try visit(try PostboxDecoder.decode(UploadItem.self, from: data)) }
    }

    /// The open items (queued or uploading) in id order, through the open-item index: the
    /// finished items are not read. Stop by returning false.
    public func scanOpen(visit: (UploadItem) throws -> Bool) throws {
        try checkRead()
        try valueBox.rangeKeys(open, .all, limit: .max) { key in
            guard let item = try get(key.getInt64(0)) else { return true }
            return try visit(item)
        }
    }

    /// Writes the open-item index from the items (a store from before the index had none).
    func indexOpenItems() throws {
        try checkWrite()
        try valueBox.removeAll(open)
        try valueBox.scan(table) { key, data in
            if try PostboxDecoder.decode(UploadItem.self, from: data).state.isOpen { try valueBox.set(open, key: key, value: Data()) }
            return true
        }
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
