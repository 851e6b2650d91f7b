import Foundation
import Postbox
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
        var old = item()
        old.extra = ["staging": "bucket", "staging.s3Key": "jobrun/uploads/account-0/0f3a", "staging.s3Bucket": "fleet", "mimeType": "image/jpeg"]
        let decoded = try PostboxDecoder.decode(UploadItem.self, from: PostboxEncoder.encode(old))
        XCTAssertEqual(decoded.staging, .bucket(S3StagedObject(key: "jobrun/uploads/account-0/0f3a", bucket: "fleet")))
        XCTAssertEqual(decoded.extra, ["mimeType": "image/jpeg"], "the typed field is no longer among the extras")
        // Written again, it is stored under the same names: an earlier build reads it too.
        let bytes = PostboxEncoder.encode(decoded)
        XCTAssertEqual(try PostboxDecoder.decode(UploadItem.self, from: bytes), decoded)
        XCTAssertEqual(bytes, PostboxEncoder.encode(old), "the same bytes as the earlier row")

        for (word, location) in [("link", UploadStagingLocation.link), ("copy", .copy)] {
            var row = item()
            row.extra = ["staging": word]
            XCTAssertEqual(try PostboxDecoder.decode(UploadItem.self, from: PostboxEncoder.encode(row)).staging, location)
        }
        var sent = decoded
        sent.staging = sent.staging?.released
        let reread = try PostboxDecoder.decode(UploadItem.self, from: PostboxEncoder.encode(sent))
        XCTAssertEqual(reread.staging, .bucket(nil), "a sent item's object is gone, the location stays a bucket")
    }
}
