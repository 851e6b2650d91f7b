import Foundation
import Postbox

/// StorageBox's tables in `media/storage/storage.sqlite` and their key/value layouts.
/// Table ids are part of the on-disk contract: never renumber. All integers in values are
/// little-endian; integers in keys are big-endian with the sign bit flipped (`ValueBoxKey`), so
/// keys sort numerically.
enum StorageBoxTables {
    /// `location(1) · fileName(utf8)` → entry (see `encodeEntry`).
    static let entries = ValueBoxTable(id: 1, keyType: .binary)
    /// `accessTime(8) · location(1) · fileName` → `size(8) · peer(8) · contentType(1) · peerClass(1)`.
    /// Ascending key order is least-recently-used first; the value carries what victim selection
    /// needs, so it never touches `entries`.
    static let lru = ValueBoxTable(id: 2, keyType: .binary)
    /// Running totals, `bytes(8) · count(8)`, keyed by
    /// `0 · location(1)`, `1 · peer(8)`, `2 · contentType(1)`, `3 · peer(8) · contentType(1)`.
    static let totals = ValueBoxTable(id: 3, keyType: .binary)
    /// `"schema"` → version u32; `"layout"` → `MediaLayout` u32 (absent: flat).
    static let metadata = ValueBoxTable(id: 4, keyType: .binary)
    static let layoutKey = ValueBoxKey(string: "layout")

    static let schemaVersion: UInt32 = 1

    static func entryKey(_ key: MediaStorageKey) -> ValueBoxKey {
        ValueBoxKey(bytes: [key.location.rawValue] + Array(key.fileName.utf8))
    }

    static func storageKey(entryKey k: ValueBoxKey, from offset: Int = 0) throws -> MediaStorageKey {
        guard k.length > offset, let location = MediaStorageLocation(rawValue: k.bytes[offset]) else {
            throw MediaBoxError.corruptIndex("bad key \(k)")
        }
        return MediaStorageKey(location: location, fileName: String(decoding: k.bytes[(offset + 1)...], as: UTF8.self))
    }

    static func lruKey(accessTime: Int64, key: MediaStorageKey) -> ValueBoxKey {
        var k = ValueBoxKey(length: 8)
        k.setInt64(0, value: accessTime)
        return k + entryKey(key)
    }

    static func lruValue(_ e: StorageBoxEntry) -> Data {
        var w = ByteWriter()
        w.int64(e.size)
        w.int64(e.info.peerId.rawValue)
        w.uint8(e.info.contentType.rawValue)
        w.uint8(e.info.peerClass?.rawValue ?? 0xff)
        return w.data
    }

    static func decodeLRU(key: ValueBoxKey, value: Data) throws -> StorageBoxLRURow {
        guard key.length > 9, value.count >= 18 else { throw MediaBoxError.corruptIndex("bad LRU row \(key)") }
        var r = ByteReader(value)
        let size = try r.int64()
        let peer = try r.int64()
        let ct = MediaContentType(rawValue: try r.uint8()) ?? .other
        let pc = PeerStorageClass(rawValue: try r.uint8())
        return StorageBoxLRURow(
            cursor: key, accessTime: key.getInt64(0), key: try storageKey(entryKey: key, from: 8),
            size: size, peerId: PeerId(peer), contentType: ct, peerClass: pc)
    }

    static func encodeEntry(_ e: StorageBoxEntry) -> Data {
        var w = ByteWriter()
        w.uint8(1)  // version
        w.uint8(e.info.contentType.rawValue)
        w.uint8(e.info.peerClass?.rawValue ?? 0xff)
        w.uint8(e.info.messageId == nil ? 0 : 1)
        w.int64(e.info.peerId.rawValue)
        w.int64(e.info.messageId?.peerId.rawValue ?? 0)
        w.int32(e.info.messageId?.namespace ?? 0)
        w.int32(e.info.messageId?.id ?? 0)
        w.int64(e.size)
        w.int64(e.accessTime)
        w.int64(e.storedTime)
        w.bytes(Array(e.resourceId.utf8))
        return w.data
    }

    static func decodeEntry(key: MediaStorageKey, _ data: Data) throws -> StorageBoxEntry {
        var r = ByteReader(data)
        guard try r.uint8() == 1 else { throw MediaBoxError.corruptIndex("unknown entry version for \(key.fileName)") }
        let ct = MediaContentType(rawValue: try r.uint8()) ?? .other
        let pc = PeerStorageClass(rawValue: try r.uint8())
        let hasMessage = try r.uint8() == 1
        let peer = try r.int64()
        let msgPeer = try r.int64()
        let ns = try r.int32()
        let mid = try r.int32()
        let size = try r.int64()
        let access = try r.int64()
        let stored = try r.int64()
        let rid = String(decoding: try r.bytes(), as: UTF8.self)
        let info = MediaResourceStorageInfo(
            peerId: PeerId(peer), peerClass: pc,
            messageId: hasMessage ? MessageId(peerId: PeerId(msgPeer), namespace: ns, id: mid) : nil,
            contentType: ct, location: key.location)
        return StorageBoxEntry(resourceId: rid, fileName: key.fileName, info: info, size: size, accessTime: access, storedTime: stored)
    }

    // MARK: totals keys

    static func totalsKeys(_ e: StorageBoxEntry) -> [ValueBoxKey] {
        var loc = ValueBoxKey(length: 2); loc.setUInt8(0, value: 0); loc.setUInt8(1, value: e.info.location.rawValue)
        var peer = ValueBoxKey(length: 9); peer.setUInt8(0, value: 1); peer.setInt64(1, value: e.info.peerId.rawValue)
        var ct = ValueBoxKey(length: 2); ct.setUInt8(0, value: 2); ct.setUInt8(1, value: e.info.contentType.rawValue)
        var both = ValueBoxKey(length: 10); both.setUInt8(0, value: 3); both.setInt64(1, value: e.info.peerId.rawValue)
        both.setUInt8(9, value: e.info.contentType.rawValue)
        return [loc, peer, ct, both]
    }

    static func encodeUsage(_ u: StorageUsage) -> Data {
        var w = ByteWriter()
        w.int64(u.bytes)
        w.int64(u.count)
        return w.data
    }

    static func decodeUsage(_ d: Data) -> StorageUsage {
        var r = ByteReader(d)
        return StorageUsage(bytes: (try? r.int64()) ?? 0, count: (try? r.int64()) ?? 0)
    }
}

/// Little-endian writer for StorageBox values.
struct ByteWriter {
    var data = Data()
    mutating func uint8(_ v: UInt8) { data.append(v) }
    mutating func int64(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    mutating func int32(_ v: Int32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    mutating func bytes(_ b: [UInt8]) { int32(Int32(b.count)); data.append(contentsOf: b) }
}

/// Little-endian reader for StorageBox values; throws on truncation.
struct ByteReader {
    let buffer: [UInt8]
    var offset = 0
    init(_ data: Data) { buffer = [UInt8](data) }
    mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
        guard n >= 0, offset + n <= buffer.count else { throw MediaBoxError.corruptIndex("truncated value") }
        defer { offset += n }
        return buffer[offset..<(offset + n)]
    }
    mutating func uint8() throws -> UInt8 { try take(1).first! }
    mutating func int64() throws -> Int64 {
        Int64(bitPattern: try take(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }
    mutating func int32() throws -> Int32 {
        Int32(bitPattern: try take(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }
    mutating func bytes() throws -> [UInt8] {
        let n = Int(try int32())
        return Array(try take(n))
    }
}
