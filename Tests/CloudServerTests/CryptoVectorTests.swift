import CloudCrypto
import Foundation
import XCTest

/// libcrypto wrappers against published test vectors, and round trips.
final class CryptoVectorTests: XCTestCase {
    func hex(_ s: String) -> Data { Data(hexString: s.replacingOccurrences(of: " ", with: ""))! }

    // FIPS 180-2 appendix B / NIST CSRC examples.
    func testSHA256Vectors() {
        XCTAssertEqual(SHA256.hash(Data()).hexString, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hash(Data("abc".utf8)).hexString, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            SHA256.hash(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)).hexString,
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        var h = SHA256()
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { h.update(chunk) }
        let digest = h.finalize()
        XCTAssertEqual(digest.hexString, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Files hash as their bytes do: the FIPS million-`a` vector, a file of several read
    /// blocks, a prefix by length, without moving the descriptor; a missing file is its errno.
    func testSHA256OfFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sha256-files-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let million = dir.appendingPathComponent("a").path
        try Data(repeating: UInt8(ascii: "a"), count: 1_000_000).write(to: URL(fileURLWithPath: million))
        XCTAssertEqual(try SHA256.hash(contentsOfFile: million).hexString, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")

        let bytes = Data((0..<(3 << 20) + 12_345).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) })
        let large = dir.appendingPathComponent("large").path
        try bytes.write(to: URL(fileURLWithPath: large))
        XCTAssertEqual(try SHA256.hash(contentsOfFile: large), SHA256.hash(bytes))

        let fd = open(large, O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(lseek(fd, 100, SEEK_SET), 100)
        XCTAssertEqual(try SHA256.hash(fd: fd, length: 1_500_000), SHA256.hash(bytes.prefix(1_500_000)))
        XCTAssertEqual(try SHA256.hash(fd: fd, length: Int64(bytes.count) + 4096), SHA256.hash(bytes), "ends at the end of the file")
        XCTAssertEqual(lseek(fd, 0, SEEK_CUR), 100, "the descriptor's offset is left where it was")

        XCTAssertThrowsError(try SHA256.hash(contentsOfFile: dir.appendingPathComponent("missing").path)) { error in
            XCTAssertEqual(error as? SHA256.FileReadError, SHA256.FileReadError(code: ENOENT))
        }
    }

    func testMD5Vector() {
        XCTAssertEqual(MD5.hash(Data("abc".utf8)).hexString, "900150983cd24fb0d6963f7d28e17f72")
    }

    // FIPS-197 appendix C.3 (AES-256).
    func testAES256BlockVector() throws {
        let ct = try AESBlock.encrypt(hex("00112233445566778899aabbccddeeff"), key: hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"))
        XCTAssertEqual(ct.hexString, "8ea2b7ca516745bfeafc49904b496089")
    }

    // NIST SP 800-38A F.5.5 / F.5.6 (CTR-AES256).
    let ctrKey = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
    let ctrIV = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
    let ctrPlain = "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51 30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710"
    let ctrCipher = "601ec313775789a5b7a7f504bbf3d228 f443e3ca4d62b59aca84e990cacaf5c5 2b0930daa23de94ce87017ba2d84988d dfc9c58db67aada613c2dd08457941a6"

    func testAES256CTRVector() throws {
        let ct = try AESCTR.crypt(hex(ctrPlain), key: hex(ctrKey), iv: hex(ctrIV))
        XCTAssertEqual(ct, hex(ctrCipher))
        XCTAssertEqual(try AESCTR.crypt(ct, key: hex(ctrKey), iv: hex(ctrIV)), hex(ctrPlain))
    }

    func testAES256CTRStartsAtAnyAlignedOffset() throws {
        let plain = hex(ctrPlain), cipher = hex(ctrCipher)
        for block in 0..<4 {
            let r = block * 16..<(block + 1) * 16
            XCTAssertEqual(
                try AESCTR.crypt(plain.subdata(in: r), key: hex(ctrKey), iv: hex(ctrIV), offset: Int64(block * 16)),
                cipher.subdata(in: r), "block \(block)")
        }
        // Blocks 2…3 in one call starting at offset 32.
        XCTAssertEqual(try AESCTR.crypt(plain.subdata(in: 32..<64), key: hex(ctrKey), iv: hex(ctrIV), offset: 32), cipher.subdata(in: 32..<64))
        XCTAssertThrowsError(try AESCTR.crypt(plain, key: hex(ctrKey), iv: hex(ctrIV), offset: 8))
    }

    func testCTRCounterCarriesAcross128Bits() {
        let iv = Data(repeating: 0xFF, count: 16)
        XCTAssertEqual(AESCTR.counterBlock(iv: iv, blockIndex: 1), [UInt8](repeating: 0, count: 16))
        var ivB = Data(count: 16); ivB[15] = 0xFE; ivB[14] = 0xFF
        XCTAssertEqual(Data(AESCTR.counterBlock(iv: ivB, blockIndex: 3)).hexString, "00000000000000000000000000010001")
    }

    func testCTRLargeStreamEqualsPartsAtOffsets() throws {
        let key = SecureRandom.bytes(32), iv = SecureRandom.bytes(16)
        let data = SecureRandom.bytes(1 << 20)
        let whole = try AESCTR.crypt(data, key: key, iv: iv)
        for off in stride(from: 0, to: 1 << 20, by: 128 << 10) {
            let part = try AESCTR.crypt(data.subdata(in: off..<off + (128 << 10)), key: key, iv: iv, offset: Int64(off))
            XCTAssertEqual(part, whole.subdata(in: off..<off + (128 << 10)))
        }
    }

    // The published IGE vectors (Ben Laurie, "AES IGE"; OpenSSL test/igetest.c), AES-128.
    func testIGEPublishedVectors() throws {
        var iv = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
        let ct = try AESIGE.encrypt(Data(count: 32), key: hex("000102030405060708090a0b0c0d0e0f"), iv: &iv)
        XCTAssertEqual(ct.hexString, "1a8519a6557be652e9da8e43da4ef4453cf456b4ca488aa383c79c98b34797cb")

        var iv2 = hex("6d656e746174696f6e206f6620494745206d6f646520666f72204f70656e5353")
        let ct2 = try AESIGE.encrypt(
            hex("99706487a1cde613bc6de0b6f24b1c7aa448c8b9c3403e3467a8cad89340f53b"),
            key: hex("5468697320697320616e20696d706c65"), iv: &iv2)
        XCTAssertEqual(ct2.hexString, "4c2e204c6574277320686f70652042656e20676f74206974207269676874210a")
        var iv3 = hex("6d656e746174696f6e206f6620494745206d6f646520666f72204f70656e5353")
        XCTAssertEqual(
            try AESIGE.decrypt(ct2, key: hex("5468697320697320616e20696d706c65"), iv: &iv3).hexString,
            "99706487a1cde613bc6de0b6f24b1c7aa448c8b9c3403e3467a8cad89340f53b")
    }

    /// AES-256-IGE equals its definition c_i = E(p_i ⊕ c_{i−1}) ⊕ p_{i−1} (c_0 = iv[0..<16],
    /// p_0 = iv[16..<32]) built from the FIPS-197-checked block cipher.
    func testIGE256MatchesDefinition() throws {
        let key = SecureRandom.bytes(32), iv = SecureRandom.bytes(32)
        let plain = SecureRandom.bytes(16 * 40)
        var prevC = [UInt8](iv.prefix(16)), prevP = [UInt8](iv.suffix(16))
        var expected = Data()
        for i in 0..<40 {
            let p = [UInt8](plain.subdata(in: i * 16..<(i + 1) * 16))
            let x = Data(zip(p, prevC).map { $0 ^ $1 })
            let e = [UInt8](try AESBlock.encrypt(x, key: key))
            let c = zip(e, prevP).map { $0 ^ $1 }
            expected.append(contentsOf: c)
            prevC = c
            prevP = p
        }
        var ivCopy = iv
        XCTAssertEqual(try AESIGE.encrypt(plain, key: key, iv: &ivCopy), expected)
        XCTAssertEqual(ivCopy, Data(prevC + prevP), "the IV is updated in place to (last c, last p)")
    }

    func testIGEChunkedWithInPlaceIVEqualsOneShot() throws {
        let key = SecureRandom.bytes(32), iv = SecureRandom.bytes(32)
        let plain = SecureRandom.bytes(16 * 1000)
        var ivA = iv
        let whole = try AESIGE.encrypt(plain, key: key, iv: &ivA)
        var ivB = iv
        var chunked = Data()
        for r in [0..<4096, 4096..<4112, 4112..<16000] { chunked.append(try AESIGE.encrypt(plain.subdata(in: r), key: key, iv: &ivB)) }
        XCTAssertEqual(chunked, whole)
        var ivC = iv
        var dec = Data()
        for r in [0..<8192, 8192..<16000] { dec.append(try AESIGE.decrypt(whole.subdata(in: r), key: key, iv: &ivC)) }
        XCTAssertEqual(dec, plain)
    }

    func testIGEPaddingAndTrimmingRoundTrip() throws {
        let k = SecretFileKey.random()
        for size in [0, 1, 15, 16, 17, 31, 1000, 65_537] {
            let plain = SecureRandom.bytes(size)
            let container = try AESIGE.encryptPadded(plain, key: k.key, iv: k.iv)
            XCTAssertEqual(container.count % 16, 0)
            XCTAssertEqual(container.count, (size + 15) / 16 * 16)
            XCTAssertEqual(try AESIGE.decryptTrimmed(container, key: k.key, iv: k.iv, decryptedSize: size), plain, "size \(size)")
        }
        var iv = k.iv
        XCTAssertThrowsError(try AESIGE.encrypt(Data(count: 15), key: k.key, iv: &iv))
        XCTAssertThrowsError(try AESIGE.encrypt(Data(count: 16), key: Data(count: 7), iv: &iv))
    }

    func testSecretFileFingerprint() {
        let key = Data((0..<32).map { UInt8($0) }), iv = Data((32..<64).map { UInt8($0) })
        let d = [UInt8](MD5.hash(key + iv))
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(d[i] ^ d[i + 4]) << (8 * UInt32(i)) }
        XCTAssertEqual(SecretFileKey.fingerprint(key: key, iv: iv), Int32(bitPattern: v))
        XCTAssertNotEqual(SecretFileKey.fingerprint(key: key, iv: iv), SecretFileKey.fingerprint(key: key, iv: Data(count: 32)))
    }

    func testSecureRandomAndHex() {
        XCTAssertEqual(SecureRandom.bytes(33).count, 33)
        XCTAssertNotEqual(SecureRandom.bytes(16), SecureRandom.bytes(16))
        XCTAssertGreaterThan(SecureRandom.int64(), 0)
        XCTAssertEqual(Data(hexString: "00ffA0")?.hexString, "00ffa0")
        XCTAssertNil(Data(hexString: "abc"))
        XCTAssertNil(Data(hexString: "zz"))
    }
}
