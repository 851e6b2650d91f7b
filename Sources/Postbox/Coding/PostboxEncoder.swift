import Foundation

/// Writes a record as a sequence of named, typed fields (little-endian), the format
/// `PostboxDecoder` reads. Reuse one encoder with `reset()` to avoid allocations in hot loops.
public final class PostboxEncoder {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    public func reset() { bytes.removeAll(keepingCapacity: true) }

    /// The encoded bytes so far.
    public func makeData() -> Data { Data(bytes) }

    // MARK: Primitives

    @inline(__always) func appendInt32(_ v: Int32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    @inline(__always) func appendInt64(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }

    @inline(__always) private func appendKey(_ key: String, _ type: PostboxValueType) {
        let utf8 = key.utf8
        precondition(utf8.count < 256, "Postbox field names are at most 255 bytes")
        bytes.append(UInt8(utf8.count))
        bytes.append(contentsOf: utf8)
        bytes.append(type.rawValue)
    }

    private func appendLengthPrefixed<C: Collection>(_ c: C) where C.Element == UInt8 {
        appendInt32(Int32(c.count))
        bytes.append(contentsOf: c)
    }

    // MARK: Fields

    public func encode(_ value: Int32, forKey key: String) { appendKey(key, .int32); appendInt32(value) }
    public func encode(_ value: Int64, forKey key: String) { appendKey(key, .int64); appendInt64(value) }
    public func encode(_ value: Bool, forKey key: String) { appendKey(key, .bool); bytes.append(value ? 1 : 0) }
    public func encode(_ value: Double, forKey key: String) { appendKey(key, .double); appendInt64(Int64(bitPattern: value.bitPattern)) }
    public func encode(_ value: String, forKey key: String) { appendKey(key, .string); appendLengthPrefixed(value.utf8) }
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
        for v in value { appendLengthPrefixed(v.utf8) }
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
        let lengthOffset = bytes.count
        appendInt32(0)
        value.encode(self)
        let length = Int32(bytes.count - lengthOffset - 4)
        withUnsafeBytes(of: length.littleEndian) { raw in
            for i in 0..<4 { bytes[lengthOffset + i] = raw[i] }
        }
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
