import Foundation

extension Postbox {
    /// Checks that history, its indexes, file references and holes agree, from keys alone (no
    /// record is decoded, so media types this build does not know cannot hide a problem):
    /// every message has its id index entry and the reverse, every media index entry and every
    /// message-held reference names a stored message, the three reference tables hold the same
    /// records, and no hole covers a stored message. Returns at most `limit` problems (empty:
    /// consistent). Runs in one read transaction.
    public func checkHistoryConsistency(limit: Int = 20) throws -> [String] {
        try readSync { tx in
            let vb = try tx.messages.valueBox
            let messages = PostboxTableId.messages.table
            let idIndex = PostboxTableId.messageIdIndex.table
            var problems: [String] = []
            func report(_ p: String) -> Bool {
                problems.append(p)
                return problems.count < limit
            }
            var idKey = ValueBoxKey(length: 16)
            var messageCount = 0
            try vb.rangeKeys(messages, .all, limit: .max) { key in
                messageCount += 1
                idKey.bytes.replaceSubrange(0..<12, with: key.bytes[0..<12])
                idKey.bytes.replaceSubrange(12..<16, with: key.bytes[16..<20])
                var ts: Int32?
                _ = try vb.withValue(idIndex, key: idKey) { raw in
                    if raw.count == 4 { ts = Int32(littleEndian: raw.loadUnaligned(as: Int32.self)) }
                }
                if ts != key.getInt32(12) { return report("message \(key.getInt64(0)):\(key.getInt32(8)):\(key.getInt32(16)) has no matching id index entry") }
                return true
            }
            guard problems.count < limit else { return problems }
            let indexCount = try vb.count(idIndex)
            if indexCount != messageCount, !report("id index has \(indexCount) entries for \(messageCount) messages") { return problems }

            try vb.rangeKeys(PostboxTableId.messageMediaIndex.table, .all, limit: .max) { key in
                idKey.bytes.replaceSubrange(0..<16, with: key.bytes[12..<28])
                if try !vb.exists(idIndex, key: idKey) {
                    return report("media index entry for missing message \(key.getInt64(12)):\(key.getInt32(20)):\(key.getInt32(24))")
                }
                return true
            }
            guard problems.count < limit else { return problems }

            let refs = try vb.count(PostboxTableId.mediaReferences.table)
            let byTime = try vb.count(PostboxTableId.mediaReferencesByObtainedAt.table)
            let byParent = try vb.count(PostboxTableId.mediaReferencesByParent.table)
            if refs != byTime || refs != byParent, !report("references: \(refs) records, \(byTime) by time, \(byParent) by parent") { return problems }
            var messageKind = ValueBoxKey(length: 1)
            messageKind.setUInt8(0, value: MediaParent.Kind.message.rawValue)
            let parentLength = MediaParent.keyLength(of: .message)
            try vb.rangeKeys(PostboxTableId.mediaReferencesByParent.table, .prefix(messageKind), limit: .max) { key in
                idKey.bytes.replaceSubrange(0..<16, with: key.bytes[1..<17])
                if try !vb.exists(idIndex, key: idKey) {
                    return report("dangling reference \(key.string(from: parentLength)) of missing message \(key.getInt64(1)):\(key.getInt32(13))")
                }
                if try !vb.exists(PostboxTableId.mediaReferences.table, key: ValueBoxKey(string: key.string(from: parentLength))) {
                    return report("parent index entry without record: \(key.string(from: parentLength))")
                }
                return true
            }
            guard problems.count < limit else { return problems }

            try vb.range(PostboxTableId.historyHoles.table, .all, limit: .max) { key, value in
                guard value.count >= 4 else { return report("hole with a short value at \(key.getInt64(0))") }
                let lower = value.withUnsafeBytes { Int32(littleEndian: $0.loadUnaligned(as: Int32.self)) }
                let upper = key.getInt32(12)
                var lo = key.prefix(12) + ValueBoxKey(length: 4)
                lo.setInt32(12, value: lower)
                var stored: Int32?
                try vb.rangeKeys(idIndex, ValueBoxRange(lower: lo, lowerInclusive: true, upper: key, upperInclusive: true), limit: 1) { k in
                    stored = k.getInt32(12)
                    return false
                }
                if let stored { return report("hole \(lower)…\(upper) of peer \(key.getInt64(0)) covers stored message \(stored)") }
                return true
            }
            return problems
        }
    }
}
