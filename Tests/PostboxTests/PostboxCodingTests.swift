import Foundation
import Postbox
import XCTest

/// Every field type, as an older version of a record would write it.
struct AllFieldsV1: PostboxCoding, Equatable {
    var i32: Int32 = -7
    var i64: Int64 = .min
    var flag = true
    var real = 3.25
    var text = "héllo ✓"
    var blob = Data([0, 1, 255])
    var i32s: [Int32] = [1, -2, 3]
    var i64s: [Int64] = [.max, 0]
    var texts = ["a", "", "ç"]
    var blobs = [Data(), Data([9])]
    var child: ImagePart? = ImagePart(width: 10)
    var children: [any PostboxCoding] = [ImagePart(width: 1), FilePart(name: "x")]

    static let postboxTypeName = "AllFields"

    init() {}
    init(decoder d: PostboxDecoder) throws {
        i32 = d.decodeInt32(forKey: "i32") ?? 0
        i64 = d.decodeInt64(forKey: "i64") ?? 0
        flag = d.decodeBool(forKey: "b") ?? false
        real = d.decodeDouble(forKey: "d") ?? 0
        text = d.decodeString(forKey: "s") ?? ""
        blob = d.decodeBytes(forKey: "bytes") ?? Data()
        i32s = d.decodeInt32Array(forKey: "i32s") ?? []
        i64s = d.decodeInt64Array(forKey: "i64s") ?? []
        texts = d.decodeStringArray(forKey: "ss") ?? []
        blobs = d.decodeBytesArray(forKey: "bs") ?? []
        child = try d.decodeObject(ImagePart.self, forKey: "o")
        children = try d.decodeObjectArray(forKey: "os")
    }
    func encode(_ e: PostboxEncoder) {
        e.encode(i32, forKey: "i32")
        e.encode(i64, forKey: "i64")
        e.encode(flag, forKey: "b")
        e.encode(real, forKey: "d")
        e.encode(text, forKey: "s")
        e.encode(blob, forKey: "bytes")
        e.encode(i32s, forKey: "i32s")
        e.encode(i64s, forKey: "i64s")
        e.encode(texts, forKey: "ss")
        e.encode(blobs, forKey: "bs")
        e.encodeIfPresent(child, forKey: "o")
        e.encodeObjectArray(children, forKey: "os")
    }
    static func == (a: AllFieldsV1, b: AllFieldsV1) -> Bool {
        a.i32 == b.i32 && a.i64 == b.i64 && a.flag == b.flag && a.real == b.real && a.text == b.text && a.blob == b.blob
            && a.i32s == b.i32s && a.i64s == b.i64s && a.texts == b.texts && a.blobs == b.blobs && a.child == b.child
            && a.children.count == b.children.count
    }
}

/// The same record as a newer version writes it: extra fields of known and future types.
struct AllFieldsV2: PostboxCoding {
    var v1 = AllFieldsV1()
    static let postboxTypeName = "AllFields"
    init() {}
    init(decoder: PostboxDecoder) throws { v1 = try AllFieldsV1(decoder: decoder) }
    func encode(_ e: PostboxEncoder) {
        e.encode("added in v2", forKey: "newText")
        v1.encode(e)
        e.encode(Int64(42), forKey: "newNumber")
        e.encodeObject(UnregisteredThing(), forKey: "newObject")
        e.encodeNil(forKey: "newNil")
    }
}

struct ImagePart: PostboxCoding, Equatable {
    var width: Int32
    init(width: Int32) { self.width = width }
    init(decoder: PostboxDecoder) throws { width = decoder.decodeInt32(forKey: "w") ?? 0 }
    func encode(_ e: PostboxEncoder) { e.encode(width, forKey: "w") }
}

struct FilePart: PostboxCoding, Equatable {
    var name: String
    init(name: String) { self.name = name }
    init(decoder: PostboxDecoder) throws { name = decoder.decodeString(forKey: "n") ?? "" }
    func encode(_ e: PostboxEncoder) { e.encode(name, forKey: "n") }
}

/// A type this reader never registers (as if a newer build had added it).
struct UnregisteredThing: PostboxCoding {
    init() {}
    init(decoder: PostboxDecoder) throws {}
    func encode(_ e: PostboxEncoder) { e.encode(Int32(1), forKey: "x") }
}

final class PostboxCodingTests: XCTestCase {
    override func setUp() {
        PostboxTypeRegistry.register(ImagePart.self)
        PostboxTypeRegistry.register(FilePart.self)
        PostboxTypeRegistry.register(AllFieldsV1.self)
    }

    func testRoundTripOfEveryFieldType() throws {
        let original = AllFieldsV1()
        let data = PostboxEncoder.encode(original)
        let decoded = try PostboxDecoder.decode(AllFieldsV1.self, from: data)
        XCTAssertEqual(decoded, original)
        XCTAssertTrue(decoded.children[0] is ImagePart)
        XCTAssertEqual((decoded.children[1] as? FilePart)?.name, "x")
    }

    func testPolymorphicDecodingThroughTheRegistry() throws {
        let data = PostboxEncoder.encode(FilePart(name: "doc.pdf"))
        let any = try PostboxDecoder.decodeAny(from: data)
        XCTAssertEqual((any as? FilePart)?.name, "doc.pdf")
        XCTAssertNil(try PostboxDecoder.decodeAny(from: PostboxEncoder.encode(UnregisteredThing())), "an unknown type decodes as nil, not an error")
        XCTAssertThrowsError(try PostboxDecoder.decode(ImagePart.self, from: data), "a typed decode of another type is refused")
    }

    func testOlderReaderDecodesNewerRecord() throws {
        let data = PostboxEncoder.encode(AllFieldsV2())
        let decoded = try PostboxDecoder.decode(AllFieldsV1.self, from: data)
        XCTAssertEqual(decoded, AllFieldsV1(), "extra fields are ignored")
    }

    func testNewerReaderSeesMissingFieldsAsNil() throws {
        let e = PostboxEncoder()
        e.encodeRootObject(ImagePart(width: 3))
        let decoded = try PostboxDecoder.decode(AllFieldsV1.self, from: e.makeData().replacingTypeHash(with: AllFieldsV1.postboxTypeHash))
        XCTAssertEqual(decoded.i32, 0)
        XCTAssertEqual(decoded.text, "")
    }

    func testFutureFieldTypeIsSkippedByLength() throws {
        // A field with tag 70 (a future type) carrying 3 bytes, between two known fields.
        var body: [UInt8] = []
        func key(_ k: String, _ tag: UInt8) { body.append(UInt8(k.utf8.count)); body += Array(k.utf8); body.append(tag) }
        key("w", 0); body += [5, 0, 0, 0]
        key("future", 70); body += [3, 0, 0, 0, 1, 2, 3]
        var record: [UInt8] = []
        withUnsafeBytes(of: ImagePart.postboxTypeHash.littleEndian) { record += $0 }
        withUnsafeBytes(of: Int32(body.count).littleEndian) { record += $0 }
        record += body
        XCTAssertEqual(try PostboxDecoder.decode(ImagePart.self, from: Data(record)).width, 5)
    }

    func testCorruptRecordsThrowInsteadOfCrashing() {
        let good = PostboxEncoder.encode(AllFieldsV1())
        for cut in [0, 3, 8, 9, 20, good.count - 1] {
            XCTAssertThrowsError(try PostboxDecoder.decode(AllFieldsV1.self, from: good.prefix(cut)), "truncated at \(cut)")
        }
        var lying = good
        lying[4] = 0xff; lying[5] = 0xff; lying[6] = 0xff; lying[7] = 0x7f
        XCTAssertThrowsError(try PostboxDecoder.decode(AllFieldsV1.self, from: lying))
    }

    func testTypeHashIsStable() {
        // FNV-1a of "AllFields": changing the hash function would orphan every stored object.
        XCTAssertEqual(typeNameHash("AllFields"), Int32(bitPattern: 0x92bbf071))
    }

    func testDefaultTypeNameIsTheTypesPrintedName() {
        // The default name is the hash's input for every stored record type that keeps it: it
        // must stay the text `String(describing:)` prints, or stored objects stop decoding.
        XCTAssertEqual(ImagePart.postboxTypeName, "ImagePart")
        XCTAssertEqual(Message.postboxTypeName, "Message")
        XCTAssertEqual(JobRunRecord.postboxTypeName, "JobRunRecord")
        XCTAssertEqual(JobRunRecord.postboxTypeHash, typeNameHash("JobRunRecord"))
        func printed<T: PostboxCoding>(_ type: T.Type) -> Bool { T.postboxTypeName == String(describing: type) }
        XCTAssertTrue(printed(ImagePart.self))
        XCTAssertTrue(printed(UnregisteredThing.self))
        XCTAssertTrue(printed(Message.self))
        XCTAssertTrue(printed(Peer.self))
        XCTAssertTrue(printed(PeerSyncState.self))
        XCTAssertTrue(printed(MediaReferenceRecord.self))
        XCTAssertTrue(printed(RevalidationLease.self))
        XCTAssertTrue(printed(SharedMediaTierEntry.self))
        XCTAssertTrue(printed(UploadItem.self))
        XCTAssertTrue(printed(JobRunRecord.self))
    }
}

extension Data {
    func replacingTypeHash(with hash: Int32) -> Data {
        var d = self
        Swift.withUnsafeBytes(of: hash.littleEndian) { for i in 0..<4 { d[i] = $0[i] } }
        return d
    }
}
