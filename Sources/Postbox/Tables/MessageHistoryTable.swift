import Foundation

/// Messages keyed `peer(8) namespace(4) timestamp(4) id(4)` so a range scan walks one peer's
/// history in time order; an id index (`peer namespace id → timestamp`) finds a message by id,
/// and a media index (`media namespace, media id, peer, namespace, id`) finds the messages that
/// hold a media item.
///
/// Values are `MessageRecord`s. Messages are written through (no write-behind): a sync may add
/// millions in one transaction.
public final class MessageHistoryTable: Table {
    let idIndex = PostboxTableId.messageIdIndex.table
    let mediaIndex = PostboxTableId.messageMediaIndex.table
    private let encoder = PostboxEncoder(capacity: 512)
    private var key = ValueBoxKey(length: 20)
    private var idKey = ValueBoxKey(length: 16)
    private var readKey = ValueBoxKey(length: 20)
    /// Decodes point reads straight from SQLite's buffer (decoding never reenters the table).
    private var rowDecoder = MessageRecord.Reader()

    init(valueBox: ValueBox, state: TransactionState) {
        super.init(valueBox: valueBox, table: PostboxTableId.messages.table, state: state)
    }

    static func key(_ index: MessageIndex) -> ValueBoxKey {
        var k = ValueBoxKey(length: 20)
        k.setInt64(0, value: index.id.peerId.rawValue)
        k.setInt32(8, value: index.id.namespace)
        k.setInt32(12, value: index.timestamp)
        k.setInt32(16, value: index.id.id)
        return k
    }

    static func peerKey(_ peer: PeerId, namespace: Int32) -> ValueBoxKey {
        var k = ValueBoxKey(length: 12)
        k.setInt64(0, value: peer.rawValue)
        k.setInt32(8, value: namespace)
        return k
    }

    private func setIdKey(_ id: MessageId) {
        idKey.setInt64(0, value: id.peerId.rawValue)
        idKey.setInt32(8, value: id.namespace)
        idKey.setInt32(12, value: id.id)
    }

    /// The media index's key: the media (namespace, id), then the message id that holds it.
    func mediaIndexKey(_ media: MediaId, _ id: MessageId) -> ValueBoxKey {
        var k = ValueBoxKey(length: 28)
        k.setInt32(0, value: media.namespace)
        k.setInt64(4, value: media.id)
        k.setInt64(12, value: id.peerId.rawValue)
        k.setInt32(20, value: id.namespace)
        k.setInt32(24, value: id.id)
        return k
    }

    /// Adds or replaces messages (a message whose timestamp changed moves to its new place).
    public func add(_ messages: [Message]) throws {
        try write(messages, storedOnly: false)
    }

    /// Replaces those of `messages` that are stored and leaves the others out (a fresh copy of
    /// a message the store keeps, where one it never kept must not appear).
    public func replaceStored(_ messages: [Message]) throws {
        try write(messages, storedOnly: true)
    }

    /// Messages whose stored copies are read together per this many (one round trip each on a
    /// server, two with their rows).
    static let readChunk = 512

    private func write(_ messages: [Message], storedOnly: Bool) throws {
        try checkWrite()
        for start in stride(from: 0, to: messages.count, by: Self.readChunk) {
            let chunk = messages[start..<min(start + Self.readChunk, messages.count)]
            // What is stored of the chunk, read before it is written; kept current as the chunk
            // is written, so a message given twice sees its first copy.
            var stamps = try timestamps(of: chunk.map(\.id))
            var previous = try stored(chunk.compactMap { m in stamps[m.id].flatMap { $0 == m.timestamp ? m.index : nil } })
            for message in chunk {
                if let old = stamps[message.id] {
                    if old != message.timestamp {
                        try remove(message.id)
                    } else if let previous = previous[message.id] {
                        for m in previous.media { if let mid = m.id { try valueBox.remove(mediaIndex, key: mediaIndexKey(mid, message.id)) } }
                    }
                } else if storedOnly {
                    continue
                }
                encoder.reset()
                MessageRecord.encode(message, into: encoder)
                let data = encoder.makeData()
                key.setInt64(0, value: message.id.peerId.rawValue)
                key.setInt32(8, value: message.id.namespace)
                key.setInt32(12, value: message.timestamp)
                key.setInt32(16, value: message.id.id)
                try valueBox.set(table, key: key, value: data)
                setIdKey(message.id)
                try valueBox.set(idIndex, key: idKey, value: withUnsafeBytes(of: message.timestamp.littleEndian) { Data($0) })
                for m in message.media { if let mid = m.id { try valueBox.set(mediaIndex, key: mediaIndexKey(mid, message.id), value: Data()) } }
                stamps[message.id] = message.timestamp
                previous[message.id] = message
                state.record { $0.addedMessages[message.id.peerId, default: 0] += 1 }
            }
        }
    }

    /// The timestamps of those of `ids` that are stored, read together (one round trip on a
    /// server).
    public func timestamps(of ids: [MessageId]) throws -> [MessageId: Int32] {
        try checkRead()
        let keys = ids.map { id -> ValueBoxKey in
            var k = ValueBoxKey(length: 16)
            k.setInt64(0, value: id.peerId.rawValue)
            k.setInt32(8, value: id.namespace)
            k.setInt32(12, value: id.id)
            return k
        }
        let found = try valueBox.get(idIndex, keys: keys)
        var out: [MessageId: Int32] = [:]
        for (id, k) in zip(ids, keys) {
            if let raw = found[k], raw.count == 4 { out[id] = Int32(littleEndian: raw.withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }) }
        }
        return out
    }

    /// The stored messages at `indexes`, read together.
    private func stored(_ indexes: [MessageIndex]) throws -> [MessageId: Message] {
        let keys = indexes.map(Self.key)
        let found = try valueBox.get(table, keys: keys)
        var out: [MessageId: Message] = [:]
        for (index, k) in zip(indexes, keys) {
            guard let data = found[k] else { continue }
            try data.withUnsafeBytes { out[index.id] = try rowDecoder.decode($0) }
        }
        return out
    }

    public func timestamp(of id: MessageId) throws -> Int32? {
        try checkRead()
        setIdKey(id)
        var timestamp: Int32?
        _ = try valueBox.withValue(idIndex, key: idKey) { raw in
            if raw.count == 4 { timestamp = Int32(littleEndian: raw.loadUnaligned(as: Int32.self)) }
        }
        return timestamp
    }

    public func get(_ id: MessageId) throws -> Message? {
        guard let ts = try timestamp(of: id) else { return nil }
        return try get(MessageIndex(id: id, timestamp: ts))
    }

    private func get(_ index: MessageIndex) throws -> Message? {
        readKey.setInt64(0, value: index.id.peerId.rawValue)
        readKey.setInt32(8, value: index.id.namespace)
        readKey.setInt32(12, value: index.timestamp)
        readKey.setInt32(16, value: index.id.id)
        var message: Message?
        _ = try valueBox.withValue(table, key: readKey) { message = try rowDecoder.decode($0) }
        return message
    }

    public func remove(_ id: MessageId) throws {
        try checkWrite()
        guard let message = try get(id) else { return }
        try valueBox.remove(table, key: Self.key(message.index))
        setIdKey(id)
        try valueBox.remove(idIndex, key: idKey)
        for m in message.media { if let mid = m.id { try valueBox.remove(mediaIndex, key: mediaIndexKey(mid, id)) } }
        state.record { $0.removedMessages[id.peerId, default: 0] += 1 }
    }

    /// Messages of one peer and namespace, newest first (or oldest first), optionally only those
    /// at or after `since` (a timestamp). Stops when `visit` returns false.
    public func scan(
        peer: PeerId, namespace: Int32 = MessageId.cloudNamespace, newestFirst: Bool = true,
        since: Int32? = nil, limit: Int = .max, visit: (Message) throws -> Bool
    ) throws {
        try checkRead()
        let prefix = Self.peerKey(peer, namespace: namespace)
        var range = ValueBoxRange.prefix(prefix, descending: newestFirst)
        if let since {
            var lower = prefix + ValueBoxKey(length: 8)
            lower.setInt32(12, value: since)
            lower.setInt32(16, value: Int32.min)
            range.lower = lower
            range.lowerInclusive = true
        }
        var rows = MessageRecord.Reader()
        try valueBox.rangeValues(table, range, limit: limit) { buffer in
            try visit(try rows.decode(buffer))
        }
    }

    /// Number of stored messages of one peer and namespace.
    public func count(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace) throws -> Int {
        try checkRead()
        return try valueBox.count(table, .prefix(Self.peerKey(peer, namespace: namespace)))
    }

    /// The highest message id stored for a peer (the incremental sync point), if any.
    public func maxId(peer: PeerId, namespace: Int32 = MessageId.cloudNamespace) throws -> Int32? {
        try checkRead()
        var result: Int32?
        try valueBox.rangeKeys(idIndex, .prefix(Self.peerKey(peer, namespace: namespace), descending: true), limit: 1) { key in
            result = key.getInt32(12)
            return false
        }
        return result
    }

    /// The ids of messages that hold media `media`.
    public func messages(withMedia media: MediaId) throws -> [MessageId] {
        try checkRead()
        var prefix = ValueBoxKey(length: 12)
        prefix.setInt32(0, value: media.namespace)
        prefix.setInt64(4, value: media.id)
        var out: [MessageId] = []
        try valueBox.rangeKeys(mediaIndex, .prefix(prefix), limit: .max) { key in
            out.append(MessageId(peerId: PeerId(key.getInt64(12)), namespace: key.getInt32(20), id: key.getInt32(24)))
            return true
        }
        return out
    }
}
