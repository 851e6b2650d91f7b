import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import XCTest

/// saveFilePart / saveBigFilePart / sendMedia: byte-equal files, idempotent random ids,
/// missing parts, forgotten uploads, plain PUT uploads.
final class UploadTests: XCTestCase {
    static func savePart(_ base: URL, fileId: Int64, part: Int, total: Int? = nil, _ data: Data) async throws -> HTTPResult {
        var c = URLComponents(
            url: base.appendingPathComponent(total == nil ? "api/upload.saveFilePart" : "api/upload.saveBigFilePart"), resolvingAgainstBaseURL: false)!
        c.queryItems = [URLQueryItem(name: "fileId", value: String(fileId)), URLQueryItem(name: "part", value: String(part))]
        if let total { c.queryItems!.append(URLQueryItem(name: "totalParts", value: String(total))) }
        return try await TestHTTP.request(c.url!, method: "POST", body: data, headers: ["Content-Type": "application/octet-stream"])
    }

    func testSmallUploadSendIsIdempotentAndByteEqual() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[1]
        let peer = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).peers[0].id
        let data = SecureRandom.bytes(300_000)
        let fileId = SecureRandom.int64()
        let ps = 128 << 10
        // Parts out of order, one sent twice.
        for p in [2, 0, 1, 1] {
            let r = try await Self.savePart(base, fileId: fileId, part: p, data.subdata(in: p * ps..<min(data.count, (p + 1) * ps)))
            XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        }
        let info = try await TestHTTP.adminGet(server, "uploads/\(fileId)", as: UploadInfo.self)
        XCTAssertEqual(info.partReceipts["1"], 2)
        XCTAssertEqual(info.storedParts, 3)
        XCTAssertEqual(info.bytes, 300_000)
        let before = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer, limit: 1)).decode(MessagesResponse.self).count
        let randomId = SecureRandom.int64()
        let send = SendMediaRequest(
            peerId: peer, randomId: randomId,
            file: InputFile(id: fileId, parts: 3, name: "a.bin", big: false, md5: MD5.hash(data).hexString, sha256: SHA256.hash(data).hexString))
        let m1 = try await TestHTTP.api(base, .sendMedia, send).decode(SendMediaResponse.self).message
        let m2 = try await TestHTTP.api(server.dcURLs[0], .sendMedia, send).decode(SendMediaResponse.self).message
        XCTAssertEqual(m1.id, m2.id)
        XCTAssertEqual(m1.randomId, randomId)
        let after = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer, limit: 1)).decode(MessagesResponse.self)
        XCTAssertEqual(after.count, before + 1)
        XCTAssertEqual(after.messages[0].id, m1.id)
        let doc = m1.media[0].document!
        XCTAssertEqual(doc.size, 300_000)
        XCTAssertEqual(doc.dcId, 2)
        let fi = try await TestCloud.fileInfo(server, doc.id)
        XCTAssertEqual(fi.sha256, SHA256.hash(data).hexString)
        // And it downloads back.
        let dl = try await TestCloud.download(server, location: doc.location, reference: doc.fileReference, size: doc.size)
        XCTAssertEqual(dl.data, data)
    }

    func testConcurrentSendsWithOneRandomIdCreateOneMessage() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[0]
        let peer = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).peers[3].id
        let data = SecureRandom.bytes(50_000)
        let fileId = SecureRandom.int64()
        do { let v = try await Self.savePart(base, fileId: fileId, part: 0, data).status; XCTAssertEqual(v, 200) }
        let send = SendMediaRequest(peerId: peer, randomId: SecureRandom.int64(), file: InputFile(id: fileId, parts: 1, name: "c.bin", big: false))
        let ids = try await withThrowingTaskGroup(of: Int32.self) { g in
            for i in 0..<6 {
                g.addTask { try await TestHTTP.api(server.dcURLs[i % 3], .sendMedia, send).decode(SendMediaResponse.self).message.id }
            }
            var out: [Int32] = []
            for try await id in g { out.append(id) }
            return out
        }
        XCTAssertEqual(Set(ids).count, 1)
        let h = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: peer, limit: 3)).decode(MessagesResponse.self)
        XCTAssertEqual(h.messages.filter { $0.randomId == send.randomId }.count, 1)
    }

    func testMissingPartsChecksumsAndForget() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[0]
        let peer = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).peers[1].id
        let fileId = SecureRandom.int64()
        let part = SecureRandom.bytes(64 << 10)
        do { let v = try await Self.savePart(base, fileId: fileId, part: 0, part).status; XCTAssertEqual(v, 200) }
        do { let v = try await Self.savePart(base, fileId: fileId, part: 2, part).status; XCTAssertEqual(v, 200) }
        func send(_ parts: Int, sha: String? = nil, random: Int64 = SecureRandom.int64()) async throws -> HTTPResult {
            try await TestHTTP.api(
                base, .sendMedia,
                SendMediaRequest(peerId: peer, randomId: random, file: InputFile(id: fileId, parts: parts, name: "x", big: false, sha256: sha)))
        }
        do { let v = try await send(3).errorName; XCTAssertEqual(v, .filePartMissing(1)) }
        do { let v = try await Self.savePart(base, fileId: fileId, part: 1, part).status; XCTAssertEqual(v, 200) }
        do { let v = try await send(3, sha: String(repeating: "0", count: 64)).errorName; XCTAssertEqual(v, .checksumInvalid) }
        do { let v = try await send(2).errorName; XCTAssertEqual(v, .filePartsInvalid, "more parts stored than declared") }
        try await TestHTTP.adminPost(server, "uploads/forget", ForgetUploadRequest(fileId: fileId))
        do { let v = try await send(3).errorName; XCTAssertEqual(v, .filePartMissing(0)) }
        do { let v = try await TestHTTP.adminGet(server, "uploads/\(fileId)", as: UploadInfo.self).forgotten; XCTAssertTrue(v) }
        // Bad part sizes and ids.
        do { let v = try await Self.savePart(base, fileId: fileId, part: 0, Data(count: (512 << 10) + 1)).errorName; XCTAssertEqual(v, .filePartSizeInvalid) }
        do { let v = try await Self.savePart(base, fileId: 0, part: 0, part).errorName; XCTAssertEqual(v, .fileIdInvalid) }
        do { let v = try await Self.savePart(base, fileId: fileId, part: 0, Data()).errorName; XCTAssertEqual(v, .filePartSizeInvalid) }
        // Unequal part sizes.
        let f2 = SecureRandom.int64()
        do { let v = try await Self.savePart(base, fileId: f2, part: 0, Data(count: 4096)).status; XCTAssertEqual(v, 200) }
        do { let v = try await Self.savePart(base, fileId: f2, part: 1, Data(count: 8192)).status; XCTAssertEqual(v, 200) }
        let r = try await TestHTTP.api(base, .sendMedia, SendMediaRequest(peerId: peer, randomId: 9, file: InputFile(id: f2, parts: 2, name: "y", big: false)))
        XCTAssertEqual(r.errorName, .filePartsInvalid)
    }

    func testBigModeUpload() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let base = server.dcURLs[2]
        let peer = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).peers[2].id
        let ps = 512 << 10
        let data = SecureRandom.bytes(11 << 20 + 12345)
        let total = UploadPartRules.partCount(fileSize: Int64(data.count), partSize: ps)
        let fileId = SecureRandom.int64()
        // Small mode refused for > 10 MiB.
        try await withThrowingTaskGroup(of: Int.self) { g in
            for p in 0..<total {
                g.addTask {
                    try await Self.savePart(base, fileId: fileId, part: p, total: total, data.subdata(in: p * ps..<min(data.count, (p + 1) * ps))).status
                }
            }
            for try await s in g { XCTAssertEqual(s, 200) }
        }
        let wrong = try await TestHTTP.api(
            base, .sendMedia, SendMediaRequest(peerId: peer, randomId: 1, file: InputFile(id: fileId, parts: total, name: "big", big: false)))
        XCTAssertEqual(wrong.errorName, .filePartsInvalid)
        let m = try await TestHTTP.api(
            base, .sendMedia, SendMediaRequest(peerId: peer, randomId: 2, file: InputFile(id: fileId, parts: total, name: "big", big: true))
        ).decode(SendMediaResponse.self).message
        let fi = try await TestCloud.fileInfo(server, m.media[0].document!.id)
        XCTAssertEqual(fi.sha256, SHA256.hash(data).hexString)
        XCTAssertEqual(fi.size, Int64(data.count))
        // Parts are on disk, not in the answer path.
        let dir = server.uploadDirectory
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/files/\(fi.id)"))
    }

    func testPlainPutUpload() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let data = SecureRandom.bytes(2 << 20)
        let r = try await TestHTTP.request(
            server.dcURLs[0].appendingPathComponent("plain/upload/test.bin"), method: "PUT", body: data,
            headers: ["Content-Type": "application/octet-stream"])
        XCTAssertEqual(r.status, 201)
        let info = try r.decode(PlainUploadInfo.self)
        XCTAssertEqual(info.size, Int64(data.count))
        XCTAssertEqual(info.sha256, SHA256.hash(data).hexString)
        do { let v = try await TestHTTP.adminGet(server, "plain-uploads/test.bin", as: PlainUploadInfo.self); XCTAssertEqual(v, info) }
    }
}
