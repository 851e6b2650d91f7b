import Foundation

extension MediaReferenceTable {
    /// Removes the reference records held by the messages of `peer` with ids in `ids` (and their
    /// time and parent index entries), except those of the messages in `keeping`. Returns the
    /// records removed and their stored bytes.
    ///
    /// A file used by several messages (a sticker, a forwarded photo) has one record, held by
    /// one of them. When that one goes, `heir` names a stored message that still has the same
    /// media, and the record moves to it instead of going: a reference is kept while any stored
    /// message uses its file, so revalidation can still refresh it.
    public func removeMessageReferences(
        peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, ids: ClosedRange<Int32>,
        keeping: Set<Int32> = [], heir: (MediaId) throws -> MessageId? = { _ in nil }
    ) throws -> (count: Int, bytes: Int64) {
        try checkWrite()
        let lower = MediaParent.message(MessageId(peerId: peer, namespace: namespace, id: ids.lowerBound)).key
        let upperParent = MediaParent.message(MessageId(peerId: peer, namespace: namespace, id: ids.upperBound)).key
        let range = ValueBoxRange(lower: lower, lowerInclusive: true, upper: upperParent.prefixUpperBound, upperInclusive: false)
        let parentLength = MediaParent.keyLength(of: .message)
        var victims: [ValueBoxKey] = []
        try valueBox.rangeKeys(byParent, range, limit: .max) { key in
            if keeping.isEmpty || !keeping.contains(key.getInt32(13)) { victims.append(key) }
            return true
        }
        guard !victims.isEmpty else { return (0, 0) }
        var bytes: Int64 = 0
        var inherited = 0
        for key in victims {
            let resourceId = key.string(from: parentLength)
            let primary = ValueBoxKey(string: resourceId)
            var obtainedAt: Int64?
            var stored = 0
            var sameParent = false
            var media: MediaId?
            _ = try valueBox.withValue(table, key: primary) { raw in
                stored = raw.count
                (obtainedAt, sameParent, media) = try MediaReferenceRecord.obtainedAt(raw, isHeldBy: key.bytes[0..<parentLength])
            }
            // A record now held by another parent (the file moved) is that parent's: keep it.
            // The record is decoded whole only when it moves.
            if obtainedAt != nil, sameParent, let media, let next = try heir(media), var record = try get(resourceId) {
                record.parent = .message(next)
                try valueBox.set(table, key: primary, value: PostboxEncoder.encode(record))
                try valueBox.set(byParent, key: record.parent.key + primary, value: Data())
                state.record { $0.updatedMediaReferences.insert(resourceId) }
                inherited += 1
            } else if let obtainedAt, sameParent {
                try valueBox.remove(table, key: primary)
                var time = ValueBoxKey(length: 8)
                time.setInt64(0, value: obtainedAt)
                try valueBox.remove(byObtainedAt, key: time + primary)
                bytes += Int64(primary.length + stored + 8 + primary.length)
                state.record { $0.updatedMediaReferences.insert(resourceId) }
            }
            bytes += Int64(key.length)
        }
        if keeping.isEmpty {
            try valueBox.removeRange(byParent, range)
        } else {
            for key in victims { try valueBox.remove(byParent, key: key) }
        }
        return (victims.count - inherited, bytes)
    }

    /// Reference records whose parent is a message that is not stored (dangling), up to `limit`:
    /// what a consistency check looks for.
    public func danglingMessageReferences(limit: Int = .max, isStored: (MessageId) throws -> Bool) throws -> [String] {
        try checkRead()
        var first = ValueBoxKey(length: 1)
        first.setUInt8(0, value: MediaParent.Kind.message.rawValue)
        var out: [String] = []
        let parentLength = MediaParent.keyLength(of: .message)
        try valueBox.rangeKeys(byParent, .prefix(first), limit: .max) { key in
            guard case let .message(id)? = MediaParent(key: key) else { return true }
            if try !isStored(id) { out.append(key.string(from: parentLength)) }
            return out.count < limit
        }
        return out
    }
}
