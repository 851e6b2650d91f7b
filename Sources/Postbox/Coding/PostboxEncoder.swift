import Foundation

/// Writes a record as a sequence of named, typed fields (little-endian), the format
/// `PostboxDecoder` reads. Reuse one encoder with `reset()` to avoid allocations in hot loops.
public final class PostboxEncoder {
    // A manually grown buffer: appending a field is a bounds check and a store, no generic
    // collection machinery (encoding is on the hot path of every write).
    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    private var count = 0

    public init(capacity: Int = 128) {
        self.capacity = max(capacity, 16)
        storage = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit { storage.deallocate() }

    public func reset() { count = 0 }

    /// The encoded bytes so far.
    public var bytes: [UInt8] { [UInt8](UnsafeRawBufferPointer(start: storage, count: count)) }

    /// The encoded bytes so far, as `Data`.
    public func makeData() -> Data { Data(bytes: storage, count: count) }

    /// Calls `body` with the encoded bytes, without copying them.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage, count: count))
    }

    // MARK: Primitives

    @inline(__always) private func reserve(_ n: Int) {
        if count + n <= capacity { return }
        var newCapacity = capacity * 2
        while newCapacity < count + n { newCapacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        grown.copyMemory(from: storage, byteCount: count)
        storage.deallocate()
        storage = grown
        capacity = newCapacity
    }

    @inline(__always) func appendByte(_ v: UInt8) {
        reserve(1)
        storage.storeBytes(of: v, toByteOffset: count, as: UInt8.self)
        count += 1
    }
    @inline(__always) func appendInt32(_ v: Int32) {
        reserve(4)
        storage.storeBytes(of: v.littleEndian, toByteOffset: count, as: Int32.self)
        count += 4
    }
    @inline(__always) func appendInt64(_ v: Int64) {
        reserve(8)
        storage.storeBytes(of: v.littleEndian, toByteOffset: count, as: Int64.self)
        count += 8
    }
    @inline(__always) func appendRaw(_ raw: UnsafeRawBufferPointer) {
        guard raw.count > 0 else { return }
        reserve(raw.count)
        (storage + count).copyMemory(from: raw.baseAddress!, byteCount: raw.count)
        count += raw.count
    }

    @inline(__always) private func appendKey(_ key: String, _ type: PostboxValueType) {
        var key = key
        key.withUTF8 { utf8 in
            precondition(utf8.count < 256, "Postbox field names are at most 255 bytes")
            appendByte(UInt8(utf8.count))
            appendRaw(UnsafeRawBufferPointer(utf8))
        }
        appendByte(type.rawValue)
    }

    func appendLengthPrefixed(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            appendInt32(Int32(utf8.count))
            appendRaw(UnsafeRawBufferPointer(utf8))
        }
    }

    private func appendLengthPrefixed(_ data: Data) {
        appendInt32(Int32(data.count))
        data.withUnsafeBytes { appendRaw($0) }
    }

    // MARK: Fields

    public func encode(_ value: Int32, forKey key: String) { appendKey(key, .int32); appendInt32(value) }
    public func encode(_ value: Int64, forKey key: String) { appendKey(key, .int64); appendInt64(value) }
    public func encode(_ value: Bool, forKey key: String) { appendKey(key, .bool); appendByte(value ? 1 : 0) }
    public func encode(_ value: Double, forKey key: String) { appendKey(key, .double); appendInt64(Int64(bitPattern: value.bitPattern)) }
    public func encode(_ value: String, forKey key: String) { appendKey(key, .string); appendLengthPrefixed(value) }
    public func encode(_ value: Data, forKey key: String) { appendKey(key, .bytes); appendLengthPrefixed(value) }
    public func encode(_ value: [Int32], forKey key: String) {
        appendKey(key, .int32Array)
        appendInt32(Int32(value.count))
        for v in value { appendInt32(v) }
    }
    public func encode(_ value: [Int64], forKey key: String) {
        appendKey(key, .int64Array)
        appendInt32(Int32(value.count))
        for v in value { appendInt64(v) }
    }
    public func encode(_ value: [String], forKey key: String) {
        appendKey(key, .stringArray)
        appendInt32(Int32(value.count))
        for v in value { appendLengthPrefixed(v) }
    }
    public func encode(_ value: [Data], forKey key: String) {
        appendKey(key, .bytesArray)
        appendInt32(Int32(value.count))
        for v in value { appendLengthPrefixed(v) }
    }
    public func encodeNil(forKey key: String) { appendKey(key, .nil_) }

    /// An embedded object: its type hash, then its fields (so it decodes polymorphically).
    public func encodeObject(_ value: any PostboxCoding, forKey key: String) {
        appendKey(key, .object)
        appendObjectBody(value)
    }

    public func encodeObjectArray(_ values: [any PostboxCoding], forKey key: String) {
        appendKey(key, .objectArray)
        appendObjectArrayPayload(values)
    }

    /// An object array without its field name: the count, then each object's type hash,
    /// length and fields (what `PostboxDecoder.objectArray(borrowing:at:end:as:)` reads).
    func appendObjectArrayPayload(_ values: [any PostboxCoding]) {
        appendInt32(Int32(values.count))
        for v in values { appendObjectBody(v) }
    }

    // Optional conveniences: nil writes nothing, so the reader sees a missing field.
    public func encodeIfPresent(_ value: Int32?, forKey key: String) { if let value { encode(value, forKey: key) } }
    public func encodeIfPresent(_ value: Int64?, forKey key: String) { if let value { encode(value, forKey: key) } }
    public func encodeIfPresent(_ value: String?, forKey key: String) { if let value { encode(value, forKey: key) } }
    public func encodeIfPresent(_ value: Data?, forKey key: String) { if let value { encode(value, forKey: key) } }
    public func encodeIfPresent(_ value: (any PostboxCoding)?, forKey key: String) { if let value { encodeObject(value, forKey: key) } }

    private func appendObjectBody(_ value: any PostboxCoding) {
        appendInt32(type(of: value).postboxTypeHash)
        let lengthOffset = count
        appendInt32(0)
        value.encode(self)
        let length = Int32(count - lengthOffset - 4)
        storage.storeBytes(of: length.littleEndian, toByteOffset: lengthOffset, as: Int32.self)
    }

    /// Encodes `value` as a root record (type hash, length, fields): what tables store.
    public func encodeRootObject(_ value: any PostboxCoding) { appendObjectBody(value) }

    /// One-shot: the root encoding of `value`.
    public static func encode(_ value: any PostboxCoding) -> Data {
        let e = PostboxEncoder()
        e.encodeRootObject(value)
        return e.makeData()
    }
}
