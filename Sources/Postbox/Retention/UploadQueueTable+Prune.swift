import Foundation

extension UploadQueueTable {
    /// Removes an item and every acknowledged part of it. Returns the part rows removed.
    @discardableResult
    public func remove(_ id: Int64) throws -> Int {
        try checkWrite()
        var prefix = ValueBoxKey(length: 8)
        prefix.setInt64(0, value: id)
        let partCount = try valueBox.count(parts, .prefix(prefix))
        try valueBox.removeRange(parts, .prefix(prefix))
        try valueBox.remove(table, key: ValueBoxKey(id))
        try valueBox.remove(open, key: ValueBoxKey(id))
        state.record { $0.updatedUploadItems.insert(id) }
        return partCount
    }
}
