import Foundation
import Postbox
import TestSupport
import XCTest

/// The typed fields of an upload item: key material that never prints, and a staging location
/// read the same from rows written before it was typed.
final class UploadItemFieldsTests: XCTestCase {
    private func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    private func item() -> UploadItem {
        UploadItem(
            id: 3, peerId: PeerId(9), stagedPath: "/root/account-0/uploads/3", originalName: "a.jpg", size: 100, sha256: "ab",
            isSecret: true, randomId: 5, enqueuedAt: 6)
    }

    func testKeyMaterialNeverPrintsWhereverTheItemIsShown() throws {
        let key = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
        let iv = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) })
        let material = SecretKeyMaterial(key: key, iv: iv, padding: Data([0xAB, 0xCD]))
        var secret = item()
        secret.secretKey = material
        var dumped = ""
        dump(secret, to: &dumped)
        var dumpedMaterial = ""
        dump(material, to: &dumpedMaterial)
        let shown = ["\(secret)", String(reflecting: secret), dumped, "\(material)", String(reflecting: material), dumpedMaterial]
        for text in shown {
            XCTAssertFalse(text.contains(hex(key)) || text.contains(hex(iv)) || text.contains("abcd"), text)
            // Nor as the bytes' decimal values (how `dump` shows a byte array).
            XCTAssertFalse(text.contains("\(key[1])") && text.contains("\(key[2])") && text.contains("\(key[3])") && text.contains("\(iv[1])"), text)
        }
        XCTAssertEqual(material.description, "SecretKeyMaterial(redacted)")
        XCTAssertTrue(dumped.contains("redacted"), dumped)
        // The value itself is intact for the code that needs it.
        let decoded = try PostboxDecoder.decode(UploadItem.self, from: PostboxEncoder.encode(secret))
        XCTAssertEqual(decoded.secretKey?.key, key)
        XCTAssertEqual(decoded.secretKey?.iv, iv)
        XCTAssertEqual(decoded, secret)
    }

    func testAStagingLocationStoredAsStringsBeforeItWasTypedReadsTheSame() throws {
        // A row of an earlier build: the location only as entries of the string map.
        let old = EarlierUploadRow(
            item(), strings: ["staging": "bucket", "staging.s3Key": "jobrun/uploads/account-0/0f3a", "staging.s3Bucket": "fleet", "mimeType": "image/jpeg"])
        let decoded = try old.decoded()
        XCTAssertEqual(decoded.staging, .bucket(S3StagedObject(key: "jobrun/uploads/account-0/0f3a", bucket: "fleet")))
        XCTAssertEqual(decoded.mimeType, "image/jpeg")
        // Written again, it is stored under the same names: an earlier build reads it too.
        let bytes = PostboxEncoder.encode(decoded)
        XCTAssertEqual(try PostboxDecoder.decode(UploadItem.self, from: bytes), decoded)
        XCTAssertEqual(bytes, old.bytes, "the same bytes as the earlier row")

        for (word, location) in [("link", UploadStagingLocation.link), ("copy", .copy)] {
            XCTAssertEqual(try EarlierUploadRow(item(), strings: ["staging": word]).decoded().staging, location)
        }
        var sent = decoded
        sent.staging = sent.staging?.released
        let reread = try PostboxDecoder.decode(UploadItem.self, from: PostboxEncoder.encode(sent))
        XCTAssertEqual(reread.staging, .bucket(nil), "a sent item's object is gone, the location stays a bucket")
    }

    func testAStagedInodeAndItsChangeTimeAreStoredAndARowWithoutThemReadsNil() throws {
        var linked = item()
        linked.stagedInode = 1_234_567
        linked.stagedChangeTimeNs = 1_700_000_000_987_654_321
        let reread = try PostboxDecoder.decode(UploadItem.self, from: PostboxEncoder.encode(linked))
        XCTAssertEqual(reread.stagedInode, 1_234_567)
        XCTAssertEqual(reread.stagedChangeTimeNs, 1_700_000_000_987_654_321)
        XCTAssertEqual(reread, linked)
        let earlier = try EarlierUploadRow(item(), strings: ["staging": "link", "stat.mtimeNs": "5"]).decoded()
        XCTAssertNil(earlier.stagedInode, "a row written before they were recorded: the uploader hashes the file again")
        XCTAssertNil(earlier.stagedChangeTimeNs)
    }

    func testEveryFieldAnEarlierBuildStoredAsStringsReadsTyped() throws {
        let strings = [
            "staging": "copy", "stat.mtimeNs": "1700000000123456789", "mimeType": "video/mp4", "documentId": "-42", "interruptions": "3",
            "secret.decryptedSize": "100", "secret.stagedContainer": "1", "secret.containerSHA256": "c0ffee",
        ]
        let old = EarlierUploadRow(item(), strings: strings)
        let decoded = try old.decoded()
        XCTAssertEqual(decoded.staging, .copy)
        XCTAssertEqual(decoded.stagedMtimeNs, 1_700_000_000_123_456_789)
        XCTAssertEqual(decoded.mimeType, "video/mp4")
        XCTAssertEqual(decoded.documentId, -42)
        XCTAssertEqual(decoded.interruptions, 3)
        XCTAssertEqual(decoded.secretDecryptedSize, 100)
        XCTAssertEqual(decoded.stagedContainerSHA256, "c0ffee")
        XCTAssertNil(decoded.legacySecretKey)
        XCTAssertEqual(PostboxEncoder.encode(decoded), old.bytes, "stored again under the earlier names, byte for byte")
        // The earlier build's reading of a row this build wrote: the same entries.
        XCTAssertEqual(try PostboxDecoder.decode(EarlierUploadRow.self, from: PostboxEncoder.encode(decoded)).strings, strings)

        // Entries derived from the key (an earlier build wrote them, nothing reads them) are
        // dropped; a fresh item stores no entry at all.
        let derived = try EarlierUploadRow(item(), strings: ["secret.keyFingerprint": "123", "secret.containerSize": "112"]).decoded()
        XCTAssertEqual(try PostboxDecoder.decode(EarlierUploadRow.self, from: PostboxEncoder.encode(derived)).strings, [:])
        XCTAssertEqual(derived, item())
        XCTAssertEqual(decoded.interruptions, 3)
        var settled = decoded
        settled.interruptions = 0
        XCTAssertNil(try PostboxDecoder.decode(EarlierUploadRow.self, from: PostboxEncoder.encode(settled)).strings["interruptions"])
    }

    func testKeyMaterialAnEarlierBuildStoredAsHexIsKeptUnprintedUntilConverted() throws {
        let keyHex = String(repeating: "5a", count: 32)
        let ivHex = String(repeating: "c3", count: 32)
        let old = EarlierUploadRow(
            item(), strings: ["secret.key": keyHex, "secret.iv": ivHex, "secret.padding": "0707", "secret.decryptedSize": "100"])
        let decoded = try old.decoded()
        XCTAssertEqual(decoded.legacySecretKey, LegacySecretKeyText(key: keyHex, iv: ivHex, padding: "0707"))
        XCTAssertNil(decoded.secretKey)
        var dumped = ""
        dump(decoded, to: &dumped)
        for text in ["\(decoded)", String(reflecting: decoded), dumped, "\(decoded.legacySecretKey!)"] {
            XCTAssertFalse(text.contains(keyHex) || text.contains(ivHex) || text.contains("5a5a"), text)
        }
        XCTAssertEqual(PostboxEncoder.encode(decoded), old.bytes, "unconverted, it is stored as it was")
    }
}
