import CloudCore
import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox
import Postbox
import XCTest

/// Resource types: stable, safe ids; secrets never in descriptions; parent mappings.
final class ResourceTests: XCTestCase {
    let reference = Data((0..<24).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })

    func document(id: Int64 = 123456, dc: Int = 2) -> Document {
        Document(
            id: id, accessHash: 99, dcId: dc, kind: .file, size: 5000, mimeType: "application/pdf", fileName: "../../etc/passwd",
            date: 0, location: FileLocation(type: .document, id: id, accessHash: 99, dcId: dc), fileReference: reference)
    }

    func testIdsAreStableAndSafe() throws {
        let parent = MediaResourceReference.message(MessageId(peerId: PeerId(7), id: 3))
        let a = CloudDocumentMediaResource(document: document(), reference: parent)
        var changed = document()
        changed.fileReference = Data([1, 2, 3])
        let b = CloudDocumentMediaResource(document: changed, reference: .standalone)
        XCTAssertEqual(a.id, b.id, "the id does not depend on the reference or the parent")
        XCTAssertEqual(a.id.stringRepresentation, "telegram-cloud-document-2-123456")
        let photo = Photo(
            id: 5, accessHash: 1, dcId: 1, date: 0,
            sizes: [PhotoSize(type: "x", w: 800, h: 600, size: 1000, location: FileLocation(type: .photo, id: 51, accessHash: 1, dcId: 1, thumbSize: "x"))],
            fileReference: reference)
        let ps = CloudPhotoSizeMediaResource(photo: photo, size: photo.sizes[0], reference: parent)
        XCTAssertEqual(ps.id.stringRepresentation, "telegram-cloud-photo-size-1-5-x")
        let peerPhoto = PeerPhoto(
            photoId: 9, dcId: 3,
            small: PhotoSize(
                type: "a", w: 160, h: 160, size: 100, location: FileLocation(type: .peerPhoto, id: 91, accessHash: 1, dcId: 3, thumbSize: "a", peerId: 77)),
            big: PhotoSize(
                type: "c", w: 640, h: 640, size: 900, location: FileLocation(type: .peerPhoto, id: 92, accessHash: 1, dcId: 3, thumbSize: "c", peerId: 77)),
            fileReference: reference)
        let small = CloudPeerPhotoSizeMediaResource(peerId: 77, photo: peerPhoto, big: false)
        let big = CloudPeerPhotoSizeMediaResource(peerId: 77, photo: peerPhoto, big: true)
        XCTAssertNotEqual(small.id, big.id)
        XCTAssertEqual(small.reference, .avatar(PeerId(77)))
        let url = try XCTUnwrap(HTTPURLMediaResource(url: "https://example.org/a/../b?token=SECRET123"))
        XCTAssertFalse(url.id.stringRepresentation.contains("SECRET123"))
        XCTAssertEqual(url.id, HTTPURLMediaResource(url: "https://example.org/a/../b?token=SECRET123")!.id)
        XCTAssertNil(HTTPURLMediaResource(url: "file:///etc/passwd"))
        XCTAssertNil(HTTPURLMediaResource(url: "not a url"))
        let ids: [MediaResourceId] = [a.id, ps.id, small.id, big.id, url.id]
        XCTAssertEqual(Set(ids).count, ids.count)
        for id in ids {
            let name = id.safeFileName
            XCTAssertFalse(name.contains("/"))
            XCTAssertFalse(name.contains(".."))
            XCTAssertLessThanOrEqual(name.utf8.count, MediaResourceId.maxFileNameLength)
        }
    }

    func testSecretsNeverInDescriptions() throws {
        let key = SecretFileKey.random()
        let sf = SecretFile(
            id: 4, accessHash: 1, dcId: 1, size: 32, decryptedSize: 20, key: key.key, iv: key.iv,
            keyFingerprint: key.fingerprint, mimeType: "image/jpeg",
            location: FileLocation(type: .secret, id: 4, accessHash: 1, dcId: 1))
        let secret = SecretFileMediaResource(secretFile: sf)
        let doc = CloudDocumentMediaResource(document: document(), reference: .message(MessageId(peerId: PeerId(1), id: 2)))
        let texts = [
            String(describing: secret), String(reflecting: secret), String(describing: secret.fetchSource),
            String(describing: doc), String(reflecting: doc), String(describing: doc.fetchSource),
            String(describing: doc.fileReference), String(reflecting: doc.fileReference),
            "\(Mirror(reflecting: doc.fileReference).children.map { "\($0.value)" })",
            String(describing: MultipartFetchError.fileReferenceExpired(resourceId: doc.id, parent: doc.reference)),
        ]
        for t in texts {
            for secretBytes in [key.key, key.iv, reference] {
                XCTAssertFalse(t.contains(secretBytes.base64EncodedString()), t)
                XCTAssertFalse(t.contains(secretBytes.hexString), t)
                XCTAssertFalse(t.contains("\(Array(secretBytes))"), t)
            }
        }
        XCTAssertEqual(secret.size, 20, "stored size is the decrypted size")
    }

    /// The shared media tier (a bucket every host and operator of the fleet reads) never takes a
    /// secret chat's file, only the cloud's own files.
    func testTheSharedMediaTierNeverTakesASecretChatsFile() {
        let key = SecretFileKey.random()
        let sf = SecretFile(
            id: 5, accessHash: 1, dcId: 1, size: 32, decryptedSize: 20, key: key.key, iv: key.iv,
            keyFingerprint: key.fingerprint, mimeType: "image/jpeg",
            location: FileLocation(type: .secret, id: 5, accessHash: 1, dcId: 1))
        XCTAssertFalse(SharedMediaTier.isShareable(SecretFileMediaResource(secretFile: sf)))
        XCTAssertTrue(SharedMediaTier.isShareable(CloudDocumentMediaResource(document: document(), reference: .standalone)))
    }

    func testParentMappings() {
        let cases: [(MediaResourceReference, MediaParent, String)] = [
            (.message(MessageId(peerId: PeerId(1000001), id: 5)), .message(MessageId(peerId: PeerId(1000001), id: 5)), "message:1000001:5"),
            (.avatar(PeerId(42)), .peerAvatar(PeerId(42)), "avatar:42"),
            (.stickerPack(id: 500), .stickerSet(id: 500), "stickerset:500"),
            (.wallpaper(id: 700), .wallpaper(id: 700), "wallpaper:700"),
            (.story(peerId: PeerId(9), id: 2), .story(peerId: PeerId(9), id: 2), "story:9:2"),
        ]
        for (ref, parent, key) in cases {
            XCTAssertEqual(ref.mediaParent, parent)
            XCTAssertEqual(MediaResourceReference(parent), ref)
            XCTAssertEqual(ref.parentEntity?.key, key)
            XCTAssertEqual(MediaResourceReference(ParentEntity(key: key)!), ref)
            XCTAssertEqual(ref.description, key)
        }
        XCTAssertNil(MediaResourceReference.standalone.mediaParent)
        XCTAssertNil(MediaResourceReference.standalone.parentEntity)
    }

    func testMessageResourcesCarryTheirParent() {
        let doc = document()
        let message = CloudProtocol.Message(id: 8, peerId: 33, date: 0, text: "", media: [MessageMedia(document: doc)])
        let rs = CloudResources.resources(of: message)
        XCTAssertEqual(rs.count, 1)
        guard case .cloud(let location, let ref, let parent) = rs[0].fetchSource else { return XCTFail() }
        XCTAssertEqual(location, doc.location)
        XCTAssertEqual(ref.bytes, reference)
        XCTAssertEqual(parent, .message(MessageId(peerId: PeerId(33), id: 8)))
    }
}
