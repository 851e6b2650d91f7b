import Foundation

/// Reads records written by `PostboxEncoder`. Fields are found by name, so unknown fields are
/// skipped and missing ones read as `nil`; a field of an unexpected type also reads as `nil`.
/// The structure is validated before any field is read, so lookups never read out of bounds:
/// when the decoder is made, or — for the rows of a `PostboxRowDecoder` — field by field as
/// `forEachField` reaches them (one pass instead of two), or at the first lookup by name.
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

    // Mutable only so that one decoder can be pointed at row after row (`PostboxRowDecoder`);
    // a decoder is used from one thread at a time, so the per-access exclusivity checks
    // (a third of the decode time) are switched off for its fields.

    /// nil when the decoder borrows a buffer it does not own (`decode(_:borrowing:)`).
    @exclusivity(unchecked) private var storage: Storage?
    @exclusivity(unchecked) private var bytes: UnsafeRawPointer
    @exclusivity(unchecked) private var start: Int
    @exclusivity(unchecked) private var end: Int

    // The field index, built by `validate()` in the same pass that checks the structure: per
    // field one packed word (type, name length, first six name bytes; see `pack`) and the offset
    // of its payload. A lookup compares words — no re-walking of the record, no payload sizes,
    // no dictionary — and a missing field costs one pass over the words. Up to
    // `inlineFields` entries live inside the decoder object (no allocation); more spill over.
    @inline(__always) private static var inlineFields: Int { 16 }
    @exclusivity(unchecked) private var fieldCount = 0
    @exclusivity(unchecked) private var fieldKeys = InlineArray<16, UInt64>(repeating: 0)
    @exclusivity(unchecked) private var fieldOffsets = InlineArray<16, Int>(repeating: 0)
    @exclusivity(unchecked) private var moreKeys: [UInt64] = []
    @exclusivity(unchecked) private var moreOffsets: [Int] = []
    /// The field after the last one found: lookups start there, since fields are usually read
    /// in the order they were written, and wrap around once.
    @exclusivity(unchecked) private var nextField = 0
    /// False for a row not indexed yet (`reset(borrowing:start:end:)`): `forEachField` validates
    /// each field as it reads it, a lookup by name validates and indexes the whole row first.
    @exclusivity(unchecked) private var indexed = true
    /// The structural error a lookup by name found while indexing a row (a lookup cannot throw;
    /// it reads `nil` and `PostboxRowDecoder` throws this after the type's initializer returns).
    @exclusivity(unchecked) private var deferredError: PostboxError?
    /// Every field of the row has been validated (walked to the end, or indexed).
    @exclusivity(unchecked) private var checked = true

    /// A decoder over the fields in `storage[start..<end]` (validated).
    init(storage: Storage?, bytes: UnsafeRawPointer, start: Int, end: Int) throws {
        self.storage = storage
        self.bytes = bytes
        self.start = start
        self.end = end
        try validate()
    }

    /// An empty decoder, to be pointed at rows with `reset(borrowing:start:end:)`.
    init() {
        storage = nil
        bytes = UnsafeRawPointer(bitPattern: 8)!
        start = 0
        end = 0
    }

    /// Points this decoder at the fields in `bytes[start..<end]` (a lent buffer). They are
    /// validated as they are read (see `indexed`), not here.
    func reset(borrowing bytes: UnsafeRawPointer, start: Int, end: Int) {
        self.storage = nil
        self.bytes = bytes
        self.start = start
        self.end = end
        fieldCount = 0
        nextField = 0
        indexed = false
        checked = false
        deferredError = nil
    }

    /// After a row's type has read it: throws what a lookup found wrong, and validates the rest
    /// of a row the type did not walk to its end, so a malformed row never decodes.
    func finishRow() throws {
        if let deferredError { throw deferredError }
        if !checked { try validate() }
    }

    /// Validates and indexes a row on its first lookup by name; a malformed row reads as having
    /// no fields and records the error for `PostboxRowDecoder`.
    private func indexRow() {
        indexed = true
        checked = true
        do {
            try validate()
        } catch {
            fieldCount = 0
            deferredError = error as? PostboxError ?? PostboxError.decoding("\(error)")
        }
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
    /// To decode many rows of one type, `PostboxRowDecoder` is cheaper (one decoder for all).
    public static func decode<T: PostboxCoding>(_ type: T.Type, borrowing buffer: UnsafeRawBufferPointer) throws -> T {
        let (base, length) = try rootHeader(buffer, expecting: T.postboxTypeHash, T.self)
        return try T(decoder: PostboxDecoder(storage: nil, bytes: base, start: 8, end: 8 + length))
    }

    /// Checks a root record's header: its base address and field length.
    @inline(__always)
    static func rootHeader<T: PostboxCoding>(_ buffer: UnsafeRawBufferPointer, expecting hash: Int32, _: T.Type) throws -> (UnsafeRawPointer, Int) {
        guard buffer.count >= 8, let base = buffer.baseAddress else { throw PostboxError.decoding("record shorter than its header (\(buffer.count) bytes)") }
        let found = readInt32(base, 0)
        let length = Int(readInt32(base, 4))
        guard length >= 0, 8 + length <= buffer.count else { throw PostboxError.decoding("record length \(length) exceeds \(buffer.count - 8) bytes") }
        guard found == hash else { throw PostboxError.decoding("expected \(T.postboxTypeName), found type hash \(found)") }
        return (base, length)
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

    /// Size of the payload of a field of `type` starting at `offset`, or nil if it runs past `end`
    /// (tags as in `PostboxValueType`).
    @inline(__always)
    private func payloadSize(_ type: UInt8, at offset: Int) -> Int? { Self.payloadSize(type, at: offset, in: bytes, end: end) }

    /// The size of the payload of a field of `type` at `bytes[offset..<end]`, or nil if it runs
    /// past `end`.
    @inline(__always)
    private static func payloadSize(_ type: UInt8, at offset: Int, in bytes: UnsafeRawPointer, end: Int) -> Int? {
        @inline(__always) func need(_ n: Int) -> Int? { offset + n <= end ? n : nil }
        @inline(__always) func lengthPrefixed(at o: Int, header: Int) -> Int? {
            guard offset + header <= end else { return nil }
            let len = Int(Self.readInt32(bytes, o))
            return len >= 0 ? need(header + len) : nil
        }
        switch type {
        case 0: return need(4)  // int32
        case 1, 3: return need(8)  // int64, double
        case 2: return need(1)  // bool
        case 10: return 0  // nil
        case 4, 9: return lengthPrefixed(at: offset, header: 4)  // string, bytes
        case 5: return lengthPrefixed(at: offset + 4, header: 8)  // object: hash, length
        case 6, 7:  // [Int32], [Int64]
            guard offset + 4 <= end else { return nil }
            let count = Int(Self.readInt32(bytes, offset))
            guard count >= 0 else { return nil }
            return need(4 + count * (type == 6 ? 4 : 8))
        case 8, 11, 12:  // [Object], [String], [Bytes]
            let itemHeader = type == 8 ? 8 : 4
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
        default:
            // Future types carry their length so that this reader can skip them.
            guard type >= PostboxValueType.firstExtensionTag else { return nil }
            return lengthPrefixed(at: offset, header: 4)
        }
    }

    /// A field's identity as one word: type tag, name length and the first six name bytes.
    /// Names of up to six bytes (all of Postbox's own) are fully identified by it; longer ones
    /// are confirmed with a byte comparison.
    @inline(__always)
    private static func pack(type: UInt8, name: UnsafeRawPointer?, length: Int) -> UInt64 {
        var word = UInt64(type) | UInt64(truncatingIfNeeded: length) << 8
        let n = Swift.min(length, 6)
        var i = 0
        while i < n {
            word |= UInt64(name.unsafelyUnwrapped.load(fromByteOffset: i, as: UInt8.self)) << UInt64(16 + 8 * i)
            i += 1
        }
        return word
    }

    /// The field starting at `p`: its identity word, payload offset and the offset after it,
    /// after checking that it lies inside the record.
    @inline(__always)
    private func field(at p: Int) throws -> (word: UInt64, payload: Int, next: Int) {
        // Offsets are at most `end` (an Int32 length plus a small header) plus a 255-byte name
        // plus an Int32 length: far from overflowing Int, so wrapping arithmetic is exact here.
        let end = self.end
        let bytes = self.bytes
        let keyLength = Int(bytes.load(fromByteOffset: p, as: UInt8.self))
        let payload = p &+ 2 &+ keyLength
        guard payload <= end else { throw PostboxError.decoding("truncated field name at byte \(p)") }
        let type = bytes.load(fromByteOffset: payload &- 1, as: UInt8.self)
        let size: Int
        // Fixed-size payloads first (most fields), without the general switch.
        if type <= 3 {
            size = type == 2 ? 1 : (type == 0 ? 4 : 8)
            guard payload &+ size <= end else { throw PostboxError.decoding("truncated or unknown field (type \(type)) at byte \(p)") }
        } else {
            guard let s = payloadSize(type, at: payload) else {
                throw PostboxError.decoding("truncated or unknown field (type \(type)) at byte \(p)")
            }
            size = s
        }
        let word: UInt64
        if p &+ 9 <= end {
            // The name's first bytes in one load (it may run into later bytes of the record,
            // never past its end), masked to the name's length, at most six bytes.
            let loaded = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: p &+ 1, as: UInt64.self))
            let mask: UInt64 = keyLength >= 6 ? 0xffff_ffff_ffff : (1 &<< UInt64(8 &* keyLength)) &- 1
            word = UInt64(type) | UInt64(truncatingIfNeeded: keyLength) &<< 8 | (loaded & mask) &<< 16
        } else {
            word = Self.pack(type: type, name: bytes + p + 1, length: keyLength)
        }
        return (word, payload, payload &+ size)
    }

    /// Checks that every field lies inside the record and indexes them.
    private func validate() throws {
        fieldCount = 0
        nextField = 0
        if !moreKeys.isEmpty {
            moreKeys.removeAll(keepingCapacity: true)
            moreOffsets.removeAll(keepingCapacity: true)
        }
        var p = start
        let end = self.end
        var count = 0
        while p < end {
            let (word, payload, next) = try field(at: p)
            if count < Self.inlineFields {
                fieldKeys[count] = word
                fieldOffsets[count] = payload
            } else {
                moreKeys.append(word)
                moreOffsets.append(payload)
            }
            count &+= 1
            p = next
        }
        fieldCount = count
    }

    /// The payload offset of field `key` of type `type`, searching from the field after the last
    /// one found and wrapping around once.
    @inline(__always)
    private func find(_ key: String, _ type: PostboxValueType) -> Int? {
        // Borrow the name's UTF-8 in place (small names live inside the String value): copying
        // the String for `withUTF8` costs a retain and a release per field read.
        if let found = key.utf8.withContiguousStorageIfAvailable({ find(UnsafeRawBufferPointer($0), type.rawValue) }) {
            return found
        }
        var k = key
        return k.withUTF8 { find(UnsafeRawBufferPointer($0), type.rawValue) }
    }

    @inline(__always)
    private func find(_ name: UnsafeRawBufferPointer, _ type: UInt8) -> Int? {
        if !indexed { indexRow() }
        let n = name.count
        guard n < 256 else { return nil }
        let wanted = Self.pack(type: type, name: name.baseAddress, length: n)
        // The usual case: the field written right after the last one read.
        let i = nextField
        if i < fieldCount && i < Self.inlineFields && fieldKeys[i] == wanted && n <= 6 {
            nextField = i + 1
            return fieldOffsets[i]
        }
        return search(name, wanted)
    }

    private func search(_ name: UnsafeRawBufferPointer, _ wanted: UInt64) -> Int? {
        let n = name.count
        let count = fieldCount
        var i = nextField
        for _ in 0..<count {
            if i >= count { i = 0 }
            let word = i < Self.inlineFields ? fieldKeys[i] : moreKeys[i - Self.inlineFields]
            if word == wanted {
                let payload = i < Self.inlineFields ? fieldOffsets[i] : moreOffsets[i - Self.inlineFields]
                if n <= 6 || memcmp(bytes + (payload - 1 - n), name.baseAddress!, n) == 0 {
                    nextField = i + 1
                    return payload
                }
            }
            i += 1
        }
        return nil
    }

    // MARK: Fields in one pass (hot types of this module)

    /// A field's identity word as `validate()` computes it: compare it with the words
    /// `forEachField` reports. (Hot types write theirs as literals; a test checks them.)
    static func fieldWord(_ name: StaticString, _ type: PostboxValueType) -> UInt64 {
        name.withUTF8Buffer { pack(type: type.rawValue, name: UnsafeRawPointer($0.baseAddress), length: $0.count) }
    }

    /// Calls `body` with each field's identity word and payload offset, in written order, so a
    /// type decoded in bulk reads every field in one pass instead of one lookup per name. A row
    /// not indexed yet is validated field by field as it is walked: `body` only ever sees a
    /// field that lies inside the record, and a malformed field throws when it is reached.
    /// Words of names longer than six bytes are not unique: such names must be looked up by name.
    @inline(__always)
    func forEachField(_ body: (UInt64, Int) throws -> Void) throws {
        if !indexed {
            var p = start
            let end = self.end
            while p < end {
                let (word, payload, next) = try field(at: p)
                try body(word, payload)
                p = next
            }
            checked = true
            return
        }
        let count = fieldCount
        var i = 0
        while i < count {
            if i < Self.inlineFields {
                try body(fieldKeys[i], fieldOffsets[i])
            } else {
                try body(moreKeys[i - Self.inlineFields], moreOffsets[i - Self.inlineFields])
            }
            i += 1
        }
    }

    @inline(__always) func int32(at p: Int) -> Int32 { Self.readInt32(bytes, p) }
    @inline(__always) func int64(at p: Int) -> Int64 { Self.readInt64(bytes, p) }
    @inline(__always) func string(at p: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(start: bytes + p + 4, count: Int(Self.readInt32(bytes, p))), as: UTF8.self)
    }
    @inline(__always) func objectArray<P>(at p: Int, of type: P.Type) throws -> [P] { try objectArray(at: p, as: type) }

    /// The payload bytes of a field of `type` at `offset` (as `forEachField` reports it), for
    /// copying a field verbatim; nil if it does not fit in the record.
    func payload(at offset: Int, type: PostboxValueType) -> UnsafeRawBufferPointer? {
        guard let size = payloadSize(type.rawValue, at: offset) else { return nil }
        return raw(offset..<(offset + size))
    }

    /// The object array written by `PostboxEncoder.appendObjectArrayPayload` at `bytes[p..<end]`,
    /// lent for the call (a record that is not a field list, e.g. `MessageRecord`): its structure
    /// is checked before any object is read, each object is validated as it is decoded, and
    /// objects of unregistered types or not `P` are left out. Returns the objects and the offset
    /// just after the array.
    static func objectArray<P>(borrowing bytes: UnsafeRawPointer, at p: Int, end: Int, as type: P.Type) throws -> ([P], Int) {
        let decoder = PostboxDecoder()
        decoder.reset(borrowing: bytes, start: p, end: end)
        guard let size = decoder.payloadSize(PostboxValueType.objectArray.rawValue, at: p) else {
            throw PostboxError.decoding("object array at byte \(p) runs past the record's \(end) bytes")
        }
        return (try decoder.objectArray(at: p, as: type), p + size)
    }

    /// The byte size of the object array at `bytes[p..<end]` (its structure walked, no object
    /// decoded), or nil if it runs past `end`.
    static func objectArraySize(borrowing bytes: UnsafeRawPointer, at p: Int, end: Int) -> Int? {
        payloadSize(PostboxValueType.objectArray.rawValue, at: p, in: bytes, end: end)
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
    /// The bytes of a field lent for the call (no copy), or nil if there is none.
    func withBytes<R>(forKey key: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard let p = find(key, .bytes) else { return nil }
        return try body(raw((p + 4)..<(p + 4 + Int(Self.readInt32(bytes, p)))))
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

    /// The objects of an array whose types are registered and are `P` (e.g. `(any Media).self`);
    /// others are left out. An empty array costs no allocation.
    public func decodeObjectArray<P>(forKey key: String, as type: P.Type) throws -> [P] {
        guard let p = find(key, .objectArray) else { return [] }
        return try objectArray(at: p, as: type)
    }

    @inline(__always)
    private func objectArray<P>(at p: Int, as _: P.Type) throws -> [P] {
        let count = Int(Self.readInt32(bytes, p))
        if count == 0 { return [] }
        var out: [P] = []
        out.reserveCapacity(count)
        var q = p + 4
        for _ in 0..<count {
            if let (object, _) = try objectAt(q), let typed = object as? P { out.append(typed) }
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

/// Decodes a run of rows of one type lent one at a time (a range scan), reusing one decoder
/// object and looking the type hash up once, instead of allocating and hashing per row.
///
/// As with `PostboxDecoder.decode(_:borrowing:)`, each buffer need only live for the call. If a
/// `T.init(decoder:)` keeps its decoder anyway, the next row gets a fresh one.
public struct PostboxRowDecoder<T: PostboxCoding> {
    private let hash: Int32
    private var decoder: PostboxDecoder

    public init(_ type: T.Type = T.self) {
        hash = T.postboxTypeHash
        decoder = PostboxDecoder()
    }

    public mutating func decode(_ buffer: UnsafeRawBufferPointer) throws -> T {
        let (base, length) = try PostboxDecoder.rootHeader(buffer, expecting: hash, T.self)
        if !isKnownUniquelyReferenced(&decoder) { decoder = PostboxDecoder() }
        let decoder = Unmanaged.passUnretained(self.decoder)
        decoder._withUnsafeGuaranteedRef { $0.reset(borrowing: base, start: 8, end: 8 + length) }
        let value = try decoder._withUnsafeGuaranteedRef { try T(decoder: $0) }
        try decoder._withUnsafeGuaranteedRef { try $0.finishRow() }
        return value
    }
}
