import Foundation

/// Reads records written by `PostboxEncoder`. Fields are found by name, so unknown fields are
/// skipped and missing ones read as `nil`; a field of an unexpected type also reads as `nil`.
/// The structure is validated when the decoder is made, so lookups never read out of bounds.
public final class PostboxDecoder {
    /// One copy of the record, shared by the decoders of its nested objects.
    final class Storage {
        let pointer: UnsafeMutableRawPointer
        let count: Int
        init(_ data: Data) {
            count = data.count
            pointer = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 8)
            data.withUnsafeBytes { if count > 0 { pointer.copyMemory(from: $0.baseAddress!, byteCount: count) } }
        }
        deinit { pointer.deallocate() }
    }

    /// nil when the decoder borrows a buffer it does not own (`decode(_:borrowing:)`).
    private let storage: Storage?
    private let bytes: UnsafeRawPointer
    private let start: Int
    private let end: Int
    private var cursor: Int

    /// A decoder over the fields in `storage[start..<end]` (validated).
    init(storage: Storage?, bytes: UnsafeRawPointer, start: Int, end: Int) throws {
        self.storage = storage
        self.bytes = bytes
        self.start = start
        self.end = end
        self.cursor = start
        try validate()
    }

    /// Decodes a root record of type `T` (as written by `encodeRootObject`).
    public static func decode<T: PostboxCoding>(_ type: T.Type, from data: Data) throws -> T {
        let (hash, decoder) = try rootDecoder(data)
        guard hash == T.postboxTypeHash else {
            throw PostboxError.decoding("expected \(T.postboxTypeName), found type hash \(hash)")
        }
        return try T(decoder: decoder)
    }

    /// Decodes a root record of whatever registered type it holds, or nil if its type is unknown.
    public static func decodeAny(from data: Data) throws -> (any PostboxCoding)? {
        let (hash, decoder) = try rootDecoder(data)
        guard let make = PostboxTypeRegistry.decoder(for: hash) else { return nil }
        return try make(decoder)
    }

    private static func rootDecoder(_ data: Data) throws -> (Int32, PostboxDecoder) {
        guard data.count >= 8 else { throw PostboxError.decoding("record shorter than its header (\(data.count) bytes)") }
        let storage = Storage(data)
        let hash = readInt32(storage.pointer, 0)
        let length = Int(readInt32(storage.pointer, 4))
        guard length >= 0, 8 + length <= data.count else { throw PostboxError.decoding("record length \(length) exceeds \(data.count - 8) bytes") }
        return (hash, try PostboxDecoder(storage: storage, bytes: storage.pointer, start: 8, end: 8 + length))
    }

    /// Decodes a root record of type `T` from a buffer lent for the duration of the call (a
    /// range scan's row), without copying it. `T.init(decoder:)` must not keep the decoder.
    public static func decode<T: PostboxCoding>(_ type: T.Type, borrowing buffer: UnsafeRawBufferPointer) throws -> T {
        guard buffer.count >= 8, let base = buffer.baseAddress else { throw PostboxError.decoding("record shorter than its header (\(buffer.count) bytes)") }
        let hash = readInt32(base, 0)
        let length = Int(readInt32(base, 4))
        guard length >= 0, 8 + length <= buffer.count else { throw PostboxError.decoding("record length \(length) exceeds \(buffer.count - 8) bytes") }
        guard hash == T.postboxTypeHash else { throw PostboxError.decoding("expected \(T.postboxTypeName), found type hash \(hash)") }
        return try T(decoder: PostboxDecoder(storage: nil, bytes: base, start: 8, end: 8 + length))
    }

    // MARK: Layout

    @inline(__always) static func readInt32(_ b: UnsafeRawPointer, _ o: Int) -> Int32 {
        Int32(littleEndian: b.loadUnaligned(fromByteOffset: o, as: Int32.self))
    }
    @inline(__always) static func readInt64(_ b: UnsafeRawPointer, _ o: Int) -> Int64 {
        Int64(littleEndian: b.loadUnaligned(fromByteOffset: o, as: Int64.self))
    }
    @inline(__always) private func byte(_ o: Int) -> UInt8 { bytes.load(fromByteOffset: o, as: UInt8.self) }
    @inline(__always) private func raw(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: bytes + range.lowerBound, count: range.count)
    }

    /// Size of the payload of a field of `type` starting at `offset`, or nil if it runs past `end`.
    private func payloadSize(_ type: UInt8, at offset: Int) -> Int? {
        func need(_ n: Int) -> Int? { offset + n <= end ? n : nil }
        func counted(_ elementSize: Int) -> Int? {
            guard offset + 4 <= end else { return nil }
            let count = Int(Self.readInt32(bytes, offset))
            guard count >= 0 else { return nil }
            return need(4 + count * elementSize)
        }
        func lengthPrefixedList(itemHeader: Int) -> Int? {
            guard offset + 4 <= end else { return nil }
            let count = Int(Self.readInt32(bytes, offset))
            guard count >= 0 else { return nil }
            var p = offset + 4
            for _ in 0..<count {
                guard p + itemHeader <= end else { return nil }
                let len = Int(Self.readInt32(bytes, p + itemHeader - 4))
                guard len >= 0, p + itemHeader + len <= end else { return nil }
                p += itemHeader + len
            }
            return p - offset
        }
        switch PostboxValueType(rawValue: type) {
        case .int32: return need(4)
        case .int64, .double: return need(8)
        case .bool: return need(1)
        case .nil_: return 0
        case .string, .bytes:
            guard offset + 4 <= end else { return nil }
            let len = Int(Self.readInt32(bytes, offset))
            return len >= 0 ? need(4 + len) : nil
        case .object:
            guard offset + 8 <= end else { return nil }
            let len = Int(Self.readInt32(bytes, offset + 4))
            return len >= 0 ? need(8 + len) : nil
        case .int32Array: return counted(4)
        case .int64Array: return counted(8)
        case .stringArray, .bytesArray: return lengthPrefixedList(itemHeader: 4)
        case .objectArray: return lengthPrefixedList(itemHeader: 8)
        case nil:
            // Future types carry their length so that this reader can skip them.
            guard type >= PostboxValueType.firstExtensionTag, offset + 4 <= end else { return nil }
            let len = Int(Self.readInt32(bytes, offset))
            return len >= 0 ? need(4 + len) : nil
        }
    }

    private func validate() throws {
        var p = start
        while p < end {
            let keyLength = Int(byte(p))
            guard p + 1 + keyLength + 1 <= end else { throw PostboxError.decoding("truncated field name at byte \(p)") }
            let type = byte(p + 1 + keyLength)
            guard let size = payloadSize(type, at: p + 2 + keyLength) else {
                throw PostboxError.decoding("truncated or unknown field (type \(type)) at byte \(p)")
            }
            p += 2 + keyLength + size
        }
    }

    /// The payload offset of field `key` of type `type`, searching from the last position found
    /// (fields are usually read in the order written) and wrapping around once.
    private func find(_ key: String, _ type: PostboxValueType) -> Int? {
        var k = key
        return k.withUTF8 { keyBytes -> Int? in
            var p = cursor
            var wrapped = false
            while true {
                if p >= end {
                    if wrapped || cursor == start { return nil }
                    wrapped = true
                    p = start
                }
                if wrapped && p >= cursor { return nil }
                let keyLength = Int(byte(p))
                let fieldType = byte(p + 1 + keyLength)
                let payload = p + 2 + keyLength
                let size = payloadSize(fieldType, at: payload)!
                if keyLength == keyBytes.count && fieldType == type.rawValue {
                    let same = keyLength == 0 || memcmp(bytes + p + 1, keyBytes.baseAddress!, keyLength) == 0
                    if same {
                        cursor = payload + size
                        return payload
                    }
                }
                p = payload + size
            }
        }
    }

    // MARK: Fields

    public func decodeInt32(forKey key: String) -> Int32? { find(key, .int32).map { Self.readInt32(bytes, $0) } }
    public func decodeInt64(forKey key: String) -> Int64? { find(key, .int64).map { Self.readInt64(bytes, $0) } }
    public func decodeBool(forKey key: String) -> Bool? { find(key, .bool).map { byte($0) != 0 } }
    public func decodeDouble(forKey key: String) -> Double? {
        find(key, .double).map { Double(bitPattern: UInt64(bitPattern: Self.readInt64(bytes, $0))) }
    }
    public func decodeString(forKey key: String) -> String? {
        find(key, .string).map { p in
            let len = Int(Self.readInt32(bytes, p))
            return String(decoding: raw((p + 4)..<(p + 4 + len)), as: UTF8.self)
        }
    }
    public func decodeBytes(forKey key: String) -> Data? {
        find(key, .bytes).map { p in
            let len = Int(Self.readInt32(bytes, p))
            return Data(raw((p + 4)..<(p + 4 + len)))
        }
    }
    public func decodeInt32Array(forKey key: String) -> [Int32]? {
        find(key, .int32Array).map { p in
            (0..<Int(Self.readInt32(bytes, p))).map { Self.readInt32(bytes, p + 4 + 4 * $0) }
        }
    }
    public func decodeInt64Array(forKey key: String) -> [Int64]? {
        find(key, .int64Array).map { p in
            (0..<Int(Self.readInt32(bytes, p))).map { Self.readInt64(bytes, p + 4 + 8 * $0) }
        }
    }
    public func decodeStringArray(forKey key: String) -> [String]? {
        lengthPrefixedItems(key, .stringArray).map { $0.map { String(decoding: raw($0), as: UTF8.self) } }
    }
    public func decodeBytesArray(forKey key: String) -> [Data]? {
        lengthPrefixedItems(key, .bytesArray).map { $0.map { Data(raw($0)) } }
    }
    public func decodeIsNil(forKey key: String) -> Bool { find(key, .nil_) != nil }

    private func lengthPrefixedItems(_ key: String, _ type: PostboxValueType) -> [Range<Int>]? {
        guard let p = find(key, type) else { return nil }
        var items: [Range<Int>] = []
        var q = p + 4
        for _ in 0..<Int(Self.readInt32(bytes, p)) {
            let len = Int(Self.readInt32(bytes, q))
            items.append((q + 4)..<(q + 4 + len))
            q += 4 + len
        }
        return items
    }

    /// An embedded object of any registered type, or nil if absent or of an unregistered type.
    public func decodeObject(forKey key: String) throws -> (any PostboxCoding)? {
        guard let p = find(key, .object) else { return nil }
        return try objectAt(p).map { $0.0 }
    }

    /// An embedded object of type `T`, or nil if absent or of another type.
    public func decodeObject<T: PostboxCoding>(_ type: T.Type, forKey key: String) throws -> T? {
        guard let p = find(key, .object) else { return nil }
        return try typedObjectAt(p, T.self)
    }

    /// The objects of an array whose types are registered; unknown types are left out.
    public func decodeObjectArray(forKey key: String) throws -> [any PostboxCoding] {
        guard let p = find(key, .objectArray) else { return [] }
        var out: [any PostboxCoding] = []
        var q = p + 4
        for _ in 0..<Int(Self.readInt32(bytes, p)) {
            if let (object, _) = try objectAt(q) { out.append(object) }
            q += 8 + Int(Self.readInt32(bytes, q + 4))
        }
        return out
    }

    /// The objects of type `T` in an array (others are left out).
    public func decodeObjectArray<T: PostboxCoding>(_ type: T.Type, forKey key: String) throws -> [T] {
        guard let p = find(key, .objectArray) else { return [] }
        var out: [T] = []
        var q = p + 4
        for _ in 0..<Int(Self.readInt32(bytes, p)) {
            if let object = try typedObjectAt(q, T.self) { out.append(object) }
            q += 8 + Int(Self.readInt32(bytes, q + 4))
        }
        return out
    }

    private func objectAt(_ p: Int) throws -> (any PostboxCoding, Int32)? {
        let hash = Self.readInt32(bytes, p)
        guard let make = PostboxTypeRegistry.decoder(for: hash) else { return nil }
        let len = Int(Self.readInt32(bytes, p + 4))
        return (try make(PostboxDecoder(storage: storage, bytes: bytes, start: p + 8, end: p + 8 + len)), hash)
    }

    private func typedObjectAt<T: PostboxCoding>(_ p: Int, _ type: T.Type) throws -> T? {
        guard Self.readInt32(bytes, p) == T.postboxTypeHash else { return nil }
        let len = Int(Self.readInt32(bytes, p + 4))
        return try T(decoder: PostboxDecoder(storage: storage, bytes: bytes, start: p + 8, end: p + 8 + len))
    }
}
