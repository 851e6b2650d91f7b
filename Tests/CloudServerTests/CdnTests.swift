import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import XCTest

/// CDN redirect, AES-256-CTR parts, per-128 KiB hashes, FILE_REUPLOAD_NEEDED and reupload.
final class CdnTests: XCTestCase {
    func cdnDocuments(_ server: CloudServer) async throws -> [(Document, FileInfo)] {
        var out: [(Document, FileInfo)] = []
        let base = server.dcURLs[0]
        let dialogs = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest()).decode(GetDialogsResponse.self)
        for d in dialogs.dialogs {
            let h = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: d.peer.id)).decode(MessagesResponse.self)
            for doc in h.messages.flatMap({ $0.media.compactMap(\.document) }) {
                let info = try await TestCloud.fileInfo(server, doc.id)
                if info.cdn { out.append((doc, info)) }
            }
        }
        return out
    }

    func testRedirectDecryptVerifyAndReupload() async throws {
        let server = try await TestCloud.start {
            $0.cdnFraction = 1
            $0.cdnReuploadFraction = 0.5
            $0.dataset.maxMediaSize = 12 << 20
        }
        addTeardownBlock { await server.stop() }
        let docs = try await cdnDocuments(server)
        XCTAssertFalse(docs.isEmpty)
        var sawReupload = false, sawDirect = false, sawBeyondWindow = false
        for (doc, info) in docs.prefix(12) {
            let dl = try await TestCloud.download(server, location: doc.location, reference: doc.fileReference, size: doc.size)
            XCTAssertEqual(SHA256.hash(dl.data).hexString, info.sha256)
            XCTAssertGreaterThan(dl.cdnParts, 0)
            if info.cdnNeedsReupload { XCTAssertEqual(dl.reuploads, 1); sawReupload = true } else { XCTAssertEqual(dl.reuploads, 0); sawDirect = true }
            if doc.size > Int64(CdnHashWindow.blocks) * FilePartRules.cdnHashBlockSize { sawBeyondWindow = true }
        }
        XCTAssertTrue(sawReupload)
        XCTAssertTrue(sawDirect)
        _ = sawBeyondWindow
        let counters = try await TestHTTP.adminGet(server, "counters", as: CountersResponse.self)
        XCTAssertGreaterThan(counters.methods["upload.getCdnFile"] ?? 0, 0)
        XCTAssertGreaterThan(counters.methods["upload.reuploadCdnFile"] ?? 0, 0)
        XCTAssertGreaterThan(counters.errors["FILE_REUPLOAD_NEEDED"] ?? 0, 0)
    }

    func testCdnTokenHashesAndMethodPlacement() async throws {
        let server = try await TestCloud.start {
            $0.cdnFraction = 1; $0.cdnReuploadFraction = 0
        }
        addTeardownBlock { await server.stop() }
        let (doc, _) = try await cdnDocuments(server)[0]
        let master = server.dcURLs[doc.dcId - 1]
        let r = try await TestHTTP.api(master, .getFile, GetFileRequest(location: doc.location, fileReference: doc.fileReference, offset: 0, limit: 4096))
        XCTAssertEqual(r.headers["x-cloud-result"], "cdnRedirect")
        let rd = try r.decode(GetFileRedirect.self).cdnRedirect
        XCTAssertEqual(rd.encryptionKey.count, 32)
        XCTAssertEqual(rd.encryptionIv.count, 16)
        XCTAssertEqual(rd.masterDcId, doc.dcId)
        XCTAssertEqual(rd.cdnURL, server.cdnURL.absoluteString)
        XCTAssertEqual(rd.fileHashes.first?.offset, 0)
        // A forged token.
        var forged = rd.fileToken
        forged[0] ^= 1
        let bad = try await TestHTTP.api(server.cdnURL, .getCdnFile, GetCdnFileRequest(fileToken: forged, offset: 0, limit: 4096))
        XCTAssertEqual(bad.errorName, .fileTokenInvalid)
        // Part rules apply at the CDN too.
        let lim = try await TestHTTP.api(server.cdnURL, .getCdnFile, GetCdnFileRequest(fileToken: rd.fileToken, offset: 0, limit: 5000))
        XCTAssertEqual(lim.errorName, .limitInvalid)
        // The CDN serves only getCdnFile; DCs do not serve it.
        do { let v = try await TestHTTP.api(server.cdnURL, .getConfig, Empty()).errorName; XCTAssertEqual(v, .methodInvalid) }
        do {
            let v = try await TestHTTP.api(master, .getCdnFile, GetCdnFileRequest(fileToken: rd.fileToken, offset: 0, limit: 4096)).errorName;
            XCTAssertEqual(v, .methodInvalid)
        }
        // Hashes at an offset start at the containing block.
        if doc.size > 200_000 {
            let h = try await TestHTTP.api(master, .getCdnFileHashes, GetCdnFileHashesRequest(fileToken: rd.fileToken, offset: 150_000)).decode(
                CdnFileHashesResponse.self)
            XCTAssertEqual(h.hashes.first?.offset, 131_072)
        }
        // Encrypted part differs from plaintext and decrypts to it.
        let enc = try await TestHTTP.api(server.cdnURL, .getCdnFile, GetCdnFileRequest(fileToken: rd.fileToken, offset: 0, limit: 4096))
        XCTAssertEqual(enc.status, 200)
        XCTAssertEqual(enc.headers["x-part-sha256"], SHA256.hash(enc.body).hexString)
        let plainURL = server.dcURLs[0].appendingPathComponent("plain/\(doc.id)")
        let plain = try await TestHTTP.request(plainURL, headers: ["Range": "bytes=0-\(enc.body.count - 1)"])
        XCTAssertNotEqual(enc.body, plain.body)
        XCTAssertEqual(try AESCTR.crypt(enc.body, key: rd.encryptionKey, iv: rd.encryptionIv, offset: 0), plain.body)
    }
}
