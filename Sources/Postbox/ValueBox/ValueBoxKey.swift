import Foundation

/// A key in a `ValueBox` table: raw bytes compared lexicographically (memcmp, shorter prefix
/// first), with big-endian helpers so composite keys sort by their leading fields.
///
/// A message key is `peerId(8) namespace(4) timestamp(4) id(4)`: a range scan over it follows
/// peer → namespace → time → id. Signed integers are stored with their sign bit flipped so that
/// negative values sort before positive ones.
public struct ValueBoxKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init(length: Int) { self.bytes = [UInt8](repeating: 0, count: length) }
    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init<S: Sequence>(_ bytes: S) where S.Element == UInt8 { self.bytes = Array(bytes) }
    /// An 8-byte key holding `value` (the form used by `.int64` tables).
    public init(_ value: Int64) {
        self.init(length: 8)
        self.setInt64(0, value: value)
    }
    /// The UTF-8 bytes of `string` (no terminator).
    public init(string: String) { self.bytes = Array(string.utf8) }

    public var length: Int { bytes.count }

    // MARK: Big-endian fields (sign bit flipped for order)

    public mutating func setInt64(_ offset: Int, value: Int64) {
        setUInt64(offset, value: UInt64(bitPattern: value) ^ (1 << 63))
    }
    public mutating func setUInt64(_ offset: Int, value: UInt64) {
        for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64(i))) }
    }
    public mutating func setInt32(_ offset: Int, value: Int32) {
        setUInt32(offset, value: UInt32(bitPattern: value) ^ (1 << 31))
    }
    public mutating func setUInt32(_ offset: Int, value: UInt32) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(i))) }
    }
    public mutating func setUInt8(_ offset: Int, value: UInt8) { bytes[offset] = value }

    public func getInt64(_ offset: Int) -> Int64 { Int64(bitPattern: getUInt64(offset) ^ (1 << 63)) }
    public func getUInt64(_ offset: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<8 { v = (v << 8) | UInt64(bytes[offset + i]) }
        return v
    }
    public func getInt32(_ offset: Int) -> Int32 { Int32(bitPattern: getUInt32(offset) ^ (1 << 31)) }
    public func getUInt32(_ offset: Int) -> UInt32 {
        var v: UInt32 = 0
        for i in 0..<4 { v = (v << 8) | UInt32(bytes[offset + i]) }
        return v
    }
    public func getUInt8(_ offset: Int) -> UInt8 { bytes[offset] }

    /// The bytes in `range` as a new key (e.g. the peer prefix of a message key).
    public func prefix(_ count: Int) -> ValueBoxKey { ValueBoxKey(bytes: Array(bytes.prefix(count))) }
    public func suffix(from offset: Int) -> ValueBoxKey { ValueBoxKey(bytes: Array(bytes[offset...])) }
    public func string(from offset: Int = 0) -> String { String(decoding: bytes[offset...], as: UTF8.self) }

    /// The smallest key greater than every key that starts with `self` — the exclusive upper
    /// bound of a prefix scan — or nil when `self` is all 0xff (no such key exists).
    public var prefixUpperBound: ValueBoxKey? {
        var b = bytes
        while let last = b.last {
            if last == 0xff { b.removeLast() } else { b[b.count - 1] = last + 1; return ValueBoxKey(bytes: b) }
        }
        return nil
    }

    /// The next key of the same length (for fixed-length keys: the exclusive bound that admits
    /// `self` in a descending scan). An all-0xff key has none and yields itself plus one byte.
    public var successor: ValueBoxKey {
        var b = bytes
        var i = b.count - 1
        while i >= 0 {
            if b[i] < 0xff { b[i] += 1; return ValueBoxKey(bytes: b) }
            b[i] = 0
            i -= 1
        }
        return ValueBoxKey(bytes: bytes + [0])
    }

    /// The previous key of the same length (for fixed-length keys: the exclusive bound that
    /// admits `self` in an ascending scan). The all-zero key yields the empty key.
    public var predecessor: ValueBoxKey {
        var b = bytes
        var i = b.count - 1
        while i >= 0 {
            if b[i] > 0 { b[i] -= 1; return ValueBoxKey(bytes: b) }
            b[i] = 0xff
            i -= 1
        }
        return ValueBoxKey(bytes: [])
    }

    public static func + (lhs: ValueBoxKey, rhs: ValueBoxKey) -> ValueBoxKey { ValueBoxKey(bytes: lhs.bytes + rhs.bytes) }

    public static func < (lhs: ValueBoxKey, rhs: ValueBoxKey) -> Bool {
        let n = Swift.min(lhs.bytes.count, rhs.bytes.count)
        let c = lhs.bytes.withUnsafeBufferPointer { l in
            rhs.bytes.withUnsafeBufferPointer { r in n == 0 ? 0 : memcmp(l.baseAddress!, r.baseAddress!, n) }
        }
        return c != 0 ? c < 0 : lhs.bytes.count < rhs.bytes.count
    }

    public var description: String { bytes.map { String(format: "%02x", $0) }.joined() }
}
