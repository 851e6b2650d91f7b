import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import TestSupport
import XCTest

/// getFile against a real in-process server: every resource type byte-equal to the server's
/// SHA-256, part rules, migration, references and their expiry.
final class FileServingTests: XCTestCase {
    func testEveryResourceTypeDownloadsByteEqual() async throws {
        let server = try await TestCloud.start { $0.dataset.storiesPerPeer = 2 }
        do {
            let base = server.dcURLs[0]
            var checked: Set<String> = []
            // Messages of every peer: photos (each size), documents by kind, secret files.
            let dialogs = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest()).decode(GetDialogsResponse.self)
            XCTAssertEqual(dialogs.count, 5)
            for d in dialogs.dialogs {
                if let photo = d.peer.photo {
                    for s in [photo.small, photo.big] where !checked.contains("peerPhoto") || s.type == "c" {
                        try await check(server, s.location, photo.fileReference, s.size)
                        checked.insert("peerPhoto")
                    }
                }
                let h = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: d.peer.id)).decode(MessagesResponse.self)
                for m in h.messages {
                    for media in m.media {
                        if let p = media.photo, !checked.contains("photo") {
                            for s in p.sizes { try await check(server, s.location, p.fileReference, s.size) }
                            checked.insert("photo")
                        }
                        if let doc = media.document, !checked.contains(doc.kind.rawValue) {
                            try await check(server, doc.location, doc.fileReference, doc.size)
                            checked.insert(doc.kind.rawValue)
                        }
                        if let sf = media.secretFile, !checked.contains("secret") {
                            XCTAssertEqual(sf.location.type, .secret)
                            let dl = try await TestCloud.download(server, location: sf.location, reference: Data(), size: sf.size)
                            XCTAssertEqual(Int64(dl.data.count), sf.size)
                            XCTAssertEqual(SecretFileKey.fingerprint(key: sf.key, iv: sf.iv), sf.keyFingerprint)
                            let plain = try AESIGE.decryptTrimmed(dl.data, key: sf.key, iv: sf.iv, decryptedSize: Int(sf.decryptedSize))
                            let info = try await TestCloud.fileInfo(server, sf.id)
                            XCTAssertEqual(SHA256.hash(dl.data).hexString, info.sha256)
                            XCTAssertEqual(SHA256.hash(plain).hexString, info.plaintextSHA256)
                            checked.insert("secret")
                        }
                    }
                }
            }
            // Sticker set thumb and stickers, wallpapers, stories.
            let sets = try await TestHTTP.api(base, .getAllStickers, Empty()).decode(AllStickersResponse.self)
            XCTAssertFalse(sets.sets.isEmpty)
            let set = sets.sets[0]
            try await check(server, set.thumb!.location, set.fileReference, set.thumb!.size)
            try await check(server, set.stickers[0].location, set.stickers[0].fileReference, set.stickers[0].size)
            let wps = try await TestHTTP.api(base, .getWallPapers, Empty()).decode(WallpapersResponse.self)
            try await check(server, wps.wallpapers[0].document.location, wps.wallpapers[0].document.fileReference, wps.wallpapers[0].document.size)
            let storyPeer = dialogs.dialogs.first { $0.peer.kind == .contact }!.peer.id
            let stories = try await TestHTTP.api(base, .getPeerStories, GetPeerStoriesRequest(peerId: storyPeer)).decode(StoriesResponse.self)
            XCTAssertEqual(stories.stories.count, 2)
            for st in stories.stories {
                if let p = st.media.photo { try await check(server, p.sizes.last!.location, p.fileReference, p.sizes.last!.size) }
                if let d = st.media.document { try await check(server, d.location, d.fileReference, d.size) }
            }
            for kind in ["photo", "peerPhoto", "secret", "file", "video", "voice"] {
                XCTAssertTrue(checked.contains(kind), "no \(kind) in the dataset")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    private func check(_ server: CloudServer, _ loc: FileLocation, _ ref: Data, _ size: Int64, file: StaticString = #filePath, line: UInt = #line) async throws
    {
        let dl = try await TestCloud.download(server, location: loc, reference: ref, size: size)
        let info = try await TestCloud.fileInfo(server, loc.id)
        XCTAssertEqual(Int64(dl.data.count), size, file: file, line: line)
        XCTAssertEqual(info.size, size, file: file, line: line)
        XCTAssertEqual(SHA256.hash(dl.data).hexString, info.sha256, "file \(loc.id) (\(loc.type))", file: file, line: line)
        if loc.dcId != 1 { XCTAssertEqual(dl.migrations, 1, file: file, line: line) }
    }

    func testPartRulesMigrationAndLocationErrors() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let doc = try await firstDocument(server)
        let right = server.dcURLs[doc.dcId - 1]
        let wrong = server.dcURLs[doc.dcId % 3]
        func get(_ base: URL, _ loc: FileLocation, _ off: Int64, _ lim: Int64) async throws -> HTTPResult {
            try await TestHTTP.api(base, .getFile, GetFileRequest(location: loc, fileReference: doc.fileReference, offset: off, limit: lim))
        }
        var r = try await get(wrong, doc.location, 0, 4096)
        XCTAssertEqual(r.status, 303)
        XCTAssertEqual(r.errorName, .fileMigrate(doc.dcId))
        r = try await get(right, doc.location, 0, 3000)
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.errorName, .limitInvalid)
        r = try await get(right, doc.location, 100, 4096)
        XCTAssertEqual(r.errorName, .offsetInvalid)
        r = try await get(right, doc.location, (1 << 20) - 4096, 8192)
        XCTAssertEqual(r.errorName, .limitInvalid)
        var bad = doc.location
        bad.accessHash += 1
        r = try await get(right, bad, 0, 4096)
        XCTAssertEqual(r.errorName, .locationInvalid)
        r = try await get(right, doc.location, 0, 4096)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.body.count, Int(min(4096, doc.size)))
        XCTAssertEqual(r.headers["x-file-size"], String(doc.size))
        XCTAssertEqual(r.headers["x-part-sha256"], SHA256.hash(r.body).hexString)
        // Past the end: empty body.
        r = try await get(right, doc.location, (doc.size + 4096) / 4096 * 4096, 4096)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.body.count, 0)
        // Bad JSON and unknown method.
        r = try await TestHTTP.request(right.appendingPathComponent("api/upload.getFile"), method: "POST", body: Data("{".utf8))
        XCTAssertEqual(r.errorName, .badRequest)
        r = try await TestHTTP.request(right.appendingPathComponent("api/nope.nope"), method: "POST", body: Data("{}".utf8))
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.errorName, .methodInvalid)
    }

    func testReferencesExpireAndRevalidateThroughParent() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let doc = try await firstDocument(server)
        let (peerId, msgId) = try await messageOf(server, fileId: doc.id)
        let dc = server.dcURLs[doc.dcId - 1]
        func get(_ ref: Data) async throws -> HTTPResult {
            try await TestHTTP.api(dc, .getFile, GetFileRequest(location: doc.location, fileReference: ref, offset: 0, limit: 4096))
        }
        do { let v = try await get(doc.fileReference).status; XCTAssertEqual(v, 200) }
        do { let v = try await get(Data([1, 2, 3])).errorName; XCTAssertEqual(v, .fileReferenceExpired) }
        // A reference of another parent does not open this file.
        let wp = try await TestHTTP.api(dc, .getWallPapers, Empty()).decode(WallpapersResponse.self).wallpapers[0]
        do { let v = try await get(wp.document.fileReference).errorName; XCTAssertEqual(v, .fileReferenceExpired) }

        try await TestHTTP.adminPost(server, "counters/reset", Empty())
        try await TestHTTP.adminPost(server, "references/expire", Empty())
        let r = try await get(doc.fileReference)
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.errorName, .fileReferenceExpired)
        // Re-fetch the parent message: fresh reference works.
        let fresh = try await TestHTTP.api(dc, .getMessages, GetMessagesRequest(peerId: peerId, ids: [msgId])).decode(MessagesResponse.self)
        let newRef = fresh.messages[0].media.compactMap(\.document).first { $0.id == doc.id }!.fileReference
        XCTAssertNotEqual(newRef, doc.fileReference)
        do { let v = try await get(newRef).status; XCTAssertEqual(v, 200) }
        // Expire only this parent.
        try await TestHTTP.adminPost(server, "references/expire", ExpireReferencesRequest(parent: "message:\(peerId):\(msgId)"))
        do { let v = try await get(newRef).errorName; XCTAssertEqual(v, .fileReferenceExpired) }
        do { let v = try await get(wp.document.fileReference).errorName; XCTAssertEqual(v, .fileReferenceExpired, "still wrong parent") }
        let counters = try await TestHTTP.adminGet(server, "counters", as: CountersResponse.self)
        XCTAssertEqual(counters.parents["message:\(peerId):\(msgId)"], 1)
        XCTAssertEqual(counters.errors["FILE_REFERENCE_EXPIRED"], 3)
    }

    func testPerOffsetCountersProveResumedDownloads() async throws {
        let server = try await TestCloud.start { $0.dataset.bigFiles = [5 << 20] }
        addTeardownBlock { await server.stop() }
        let listing = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self)
        let f = listing.files.first { $0.size == 5 << 20 }!
        guard case .message(let peer, let mid) = ParentEntity(key: f.parent!)! else { return XCTFail() }
        let doc = try await TestHTTP.api(server.dcURLs[0], .getMessages, GetMessagesRequest(peerId: peer, ids: [mid]))
            .decode(MessagesResponse.self).messages[0].media[0].document!
        let dc = server.dcURLs[doc.dcId - 1]
        let part: Int64 = 1 << 20, partInt = 1 << 20
        // Each part fetched once: each offset counted once (a resume test checks only missing offsets grew).
        for k in Int64(0)..<5 {
            let off = k * part
            let r = try await TestHTTP.api(dc, .getFile, GetFileRequest(location: doc.location, fileReference: doc.fileReference, offset: off, limit: part))
            XCTAssertEqual(r.body.count, partInt)
        }
        let c = try await TestHTTP.adminGet(server, "counters/files/\(doc.id)", as: FilePartCounters.self)
        XCTAssertEqual(c.parts, 5)
        XCTAssertEqual(c.bytes, 5 << 20)
        XCTAssertEqual(c.offsets, ["0": 1, "1048576": 1, "2097152": 1, "3145728": 1, "4194304": 1])
        let all = try await TestHTTP.adminGet(server, "counters", as: CountersResponse.self)
        XCTAssertEqual(all.fileParts[String(doc.id)], 5)
    }

    func testReferenceTTL() async throws {
        let server = try await TestCloud.start { $0.referenceTTL = 1 }
        addTeardownBlock { await server.stop() }
        let doc = try await firstDocument(server)
        let dc = server.dcURLs[doc.dcId - 1]
        let req = GetFileRequest(location: doc.location, fileReference: doc.fileReference, offset: 0, limit: 4096)
        do { let v = try await TestHTTP.api(dc, .getFile, req).status; XCTAssertEqual(v, 200) }
        try await Task.sleep(for: .milliseconds(1300))
        do { let v = try await TestHTTP.api(dc, .getFile, req).errorName; XCTAssertEqual(v, .fileReferenceExpired) }
    }

    func testBundleMessageAndBenchFiles() async throws {
        let server = try await TestCloud.start {
            $0.dataset.bundleSize = 100
            $0.dataset.bulkFiles = [BulkFileSpec(count: 20, minSize: 10_000, maxSize: 200_000)]
            $0.dataset.bigFiles = [3 << 20]
        }
        addTeardownBlock { await server.stop() }
        let listing = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self)
        let bundle = ParentEntity(key: listing.bundleMessage!)!
        guard case .message(let peer, let mid) = bundle else { return XCTFail() }
        let m = try await TestHTTP.api(server.dcURLs[0], .getMessages, GetMessagesRequest(peerId: peer, ids: [mid])).decode(MessagesResponse.self)
        XCTAssertEqual(m.messages[0].media.count, 100)
        let bench = listing.benchPeerId!
        XCTAssertEqual(listing.messageCounts[String(bench)], 21)
        let benchFiles = listing.files.filter { $0.parent?.hasPrefix("message:\(bench):") == true }
        XCTAssertEqual(benchFiles.count, 21)
        XCTAssertTrue(benchFiles.filter { $0.size != 3 << 20 }.allSatisfy { (10_000...200_000).contains($0.size) })
        XCTAssertTrue(benchFiles.allSatisfy { !$0.cdn })
    }

    func firstDocument(_ server: CloudServer) async throws -> Document {
        let base = server.dcURLs[0]
        let dialogs = try await TestHTTP.api(base, .getDialogs, GetDialogsRequest()).decode(GetDialogsResponse.self)
        for d in dialogs.dialogs {
            let h = try await TestHTTP.api(base, .getHistory, GetHistoryRequest(peerId: d.peer.id)).decode(MessagesResponse.self)
            for m in h.messages {
                if let doc = m.media.compactMap(\.document).first(where: { $0.kind != .sticker && $0.size > 4096 }) {
                    let info = try await TestCloud.fileInfo(server, doc.id)
                    if !info.cdn { return doc }
                }
            }
        }
        throw FixtureMissing("no non-CDN document in the seeded dataset")
    }

    func messageOf(_ server: CloudServer, fileId: Int64) async throws -> (Int64, Int32) {
        let info = try await TestCloud.fileInfo(server, fileId)
        guard case .message(let p, let m) = ParentEntity(key: info.parents[0])! else { throw FixtureMissing("file \(fileId) is not held by a message") }
        return (p, m)
    }
}
