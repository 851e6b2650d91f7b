import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import Postbox
import TestSupport
import XCTest

/// `UploadQueue` + `MultipartUpload` against a real in-process cloudd: every size arrives
/// byte-equal (the server's SHA-256), secret uploads decrypt to the original, bad inputs are
/// refused with clear errors, and a repeated send never creates a second message.
final class MultipartUploadTests: XCTestCase {
    func testSizesArriveByteEqualWithTheRightLayout() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let cases: [(Int, Int, Int, Bool)] = [  // size, part size, parts, big
            (1, 512 << 10, 1, false),
            (128 << 10, 512 << 10, 1, false),
            (512 << 10, 512 << 10, 1, false),  // one part: a small file is two requests
            (3 * (128 << 10) + 1, 512 << 10, 1, false),
            (9_900_000, 512 << 10, 19, false),
            (10 << 20, 512 << 10, 20, false),
            (10_100_000, 512 << 10, 20, false),  // 10.1 MB is still under 10 MiB
            (10_590_618, 512 << 10, 21, true),  // 10.1 MiB: big-file mode
            (21 * (512 << 10), 512 << 10, 21, true),
        ]
        let upload = f.upload()
        f.server.resetCounters()
        for (size, partSize, parts, big) in cases {
            let path = try f.makeFile("f\(size).bin", size: size)
            let sha = SHA256.hash(try Data(contentsOf: URL(fileURLWithPath: path))).hexString
            let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, caption: "size \(size)"))
            XCTAssertEqual(item.sha256, sha)
            XCTAssertEqual(item.size, Int64(size))
            let r = try await upload.upload(itemId: item.id)
            let done = try await f.item(item.id)
            XCTAssertEqual(done.state, .sent, "size \(size)")
            XCTAssertEqual(done.messageId, r.messageId)
            XCTAssertEqual(Int(done.partSize), partSize, "size \(size)")
            XCTAssertEqual(Int(done.totalParts), parts, "size \(size)")
            XCTAssertEqual(r.partsSent, parts)
            XCTAssertEqual(r.bytesSent, Int64(size))
            let info = try XCTUnwrap(try f.server.fileInfo(id: r.documentId))
            XCTAssertEqual(info.size, Int64(size))
            XCTAssertEqual(info.sha256, sha, "size \(size) arrives byte-equal")
            XCTAssertEqual(f.server.uploadInfo(fileId: r.fileId)?.partReceipts.count, parts)
            XCTAssertEqual(f.server.uploadInfo(fileId: r.fileId)?.partReceipts.values.max(), 1, "no part sent twice")
            let method = big ? "upload.saveBigFilePart" : "upload.saveFilePart"
            XCTAssertEqual(f.server.counters().methods[method, default: 0], parts, "size \(size) uses \(method)")
            XCTAssertEqual(
                f.server.counters().methods["container", default: 0], parts == 1 ? 1 : 0,
                "size \(size): a one-part file goes with its sendMedia in one container")
            XCTAssertEqual(f.server.counters().methods["messages.sendMedia", default: 0], 1)
            f.server.resetCounters()
            let acked = try await f.acked(item.id)
            XCTAssertEqual(acked, [], "part rows are dropped once sent")
        }
    }

    func testEmptyMissingUnreadableAndUnknownPeerAreClearErrors() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let empty = try f.makeFile("empty.bin", size: 0)
        await XCTAssertThrowsUploadError(try await f.queue.enqueue(UploadRequest(path: empty, peerId: f.peer))) {
            guard case .emptyFile = $0 else { return false }
            return $0.description.contains("empty (0 bytes)")
        }
        await XCTAssertThrowsUploadError(try await f.queue.enqueue(UploadRequest(path: f.directory.file("nope.bin"), peerId: f.peer))) {
            guard case .fileNotFound = $0 else { return false }
            return $0.description.contains("nope.bin")
        }
        await XCTAssertThrowsUploadError(try await f.queue.enqueue(UploadRequest(path: f.directory.path, peerId: f.peer))) {
            guard case .fileUnreadable = $0 else { return false }
            return $0.description.contains("directory")
        }
        if geteuid() != 0 {
            let locked = try f.makeFile("locked.bin", size: 10)
            chmod(locked, 0)
            await XCTAssertThrowsUploadError(try await f.queue.enqueue(UploadRequest(path: locked, peerId: f.peer))) {
                guard case .fileUnreadable = $0 else { return false }
                return true
            }
        }
        let queued = try await f.queue.items().count
        XCTAssertEqual(queued, 0, "nothing was queued")

        // A peer the server does not know: refused before any part is sent.
        let path = try f.makeFile("a.bin", size: 1000)
        let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: 424242))
        f.server.resetCounters()
        await XCTAssertThrowsUploadError(try await f.upload().upload(itemId: item.id)) {
            guard case .peerNotFound(424242, _) = $0 else { return false }
            return $0.isPermanent && $0.description.contains("PEER_ID_INVALID")
        }
        XCTAssertEqual(f.server.counters().methods["upload.saveFilePart", default: 0], 0)

        // With peers synced into Postbox, an unknown peer is refused at enqueue.
        let known = try await f.client.getDialogs(limit: 5).dialogs.map(\.peer)
        try await f.postbox.transaction { tx in
            for p in known { try tx.peers.set(UploadTestStoredPeer(id: PeerId(p.id), category: PeerCategory.privateChat, title: p.title)) }
        }
        await XCTAssertThrowsUploadError(try await f.queue.enqueue(UploadRequest(path: path, peerId: 777))) {
            guard case .peerNotFound(777, _) = $0 else { return false }
            return $0.description.contains("synced")
        }
    }

    /// A peer not synced into Postbox is checked with the server once per upload instance (one
    /// run), not once per item: a run of many small files to one chat costs no request per file.
    func testEachPeerIsCheckedOncePerUploadInstance() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let peers = f.server.dataset().peers.prefix(2).map(\.id)
        var items: [Int64] = []
        for (i, peer) in [peers[0], peers[0], peers[0], peers[1], peers[1]].enumerated() {
            let path = try f.makeFile("p\(i).bin", size: 1000 + i)
            items.append(try await f.queue.enqueue(UploadRequest(path: path, peerId: peer)).id)
        }
        let unknown = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("u.bin", size: 10), peerId: 424242)).id
        let queued = try await f.queue.openItems().map(\.id)
        XCTAssertEqual(queued, items + [unknown])
        f.server.resetCounters()
        let upload = f.upload()
        for id in items { _ = try await upload.upload(itemId: id) }
        let stillOpen = try await f.queue.openItems().map(\.id)
        XCTAssertEqual(stillOpen, [unknown], "the sent items are no longer open")
        // A refusal is not remembered as a confirmation: the unknown peer is asked about each time.
        for _ in 0..<2 {
            await XCTAssertThrowsUploadError(try await upload.upload(itemId: unknown)) {
                guard case .peerNotFound(424242, _) = $0 else { return false }
                return true
            }
        }
        let methods = f.server.counters().methods
        XCTAssertEqual(methods["messages.getHistory"], 2 + 2, "one check per existing peer, one per attempt for the unknown one")
        XCTAssertEqual(methods["messages.sendMedia"], items.count)
    }

    func testChangedOrMissingStagedFileFailsTheItem() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        // Hard-linked: an in-place change of the source is the staged file changing.
        let path = try f.makeFile("c.bin", size: 200_000)
        let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, staging: .link))
        XCTAssertEqual(item.staging, .link)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.seek(toOffset: 1000)
        try h.write(contentsOf: Data([1, 2, 3, 4]))
        try h.close()
        await XCTAssertThrowsUploadError(try await f.upload().upload(itemId: item.id)) {
            guard case .fileChanged = $0 else { return false }
            return $0.isPermanent && $0.description.contains("SHA-256")
        }
        // Same size change detected; a different size too.
        let grown = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, staging: .link))
        let h2 = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h2.seekToEnd()
        try h2.write(contentsOf: Data([9]))
        try h2.close()
        await XCTAssertThrowsUploadError(try await f.upload().upload(itemId: grown.id)) {
            guard case .fileChanged = $0 else { return false }
            return $0.description.contains("200001")
        }
        // Copied: the source may vanish; the copy is private (0600) and uploads.
        let copied = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, staging: .copy))
        var st = stat()
        XCTAssertEqual(stat(copied.stagedPath, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        var dst = stat()
        XCTAssertEqual(stat(f.queue.directory, &dst), 0)
        XCTAssertEqual(dst.st_mode & 0o777, 0o700)
        try FileManager.default.removeItem(atPath: path)
        let r = try await f.upload().upload(itemId: copied.id)
        XCTAssertEqual(try f.server.fileInfo(id: r.documentId)?.sha256, copied.sha256)
        // A staged file removed from the root: a clear error naming it.
        let other = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("d.bin", size: 10), peerId: f.peer))
        try FileManager.default.removeItem(atPath: other.stagedPath)
        await XCTAssertThrowsUploadError(try await f.upload().upload(itemId: other.id)) {
            guard case .stagedFileMissing = $0 else { return false }
            return $0.description.contains(other.stagedPath)
        }
    }

    func testACopiedStagingOfSeveralReadBlocksIsWholeAndHashedWhole() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        // Three blocks of the 1 MiB read buffer, the last of one byte; and a file under one block.
        for size in [(2 << 20) + 1, 5000] {
            let path = try f.makeFile("copy-\(size).bin", size: size)
            let source = try Data(contentsOf: URL(fileURLWithPath: path))
            let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, staging: .copy))
            XCTAssertEqual(item.sha256, SHA256.hash(source).hexString, "size \(size)")
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: item.stagedPath)), source, "size \(size)")
            try FileManager.default.removeItem(atPath: path)
            let r = try await f.upload().upload(itemId: item.id)
            XCTAssertEqual(try f.server.fileInfo(id: r.documentId)?.sha256, item.sha256, "size \(size)")
        }
    }

    func testSecretUploadsDecryptToTheOriginal() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let upload = f.upload()
        for size in [1, 15, 16, 17, 128 << 10, 300_000, 10_100_000] {
            let path = try f.makeFile("s\(size).bin", size: size)
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, secret: true))
            let r = try await upload.upload(itemId: item.id)
            let done = try await f.item(item.id)
            XCTAssertEqual(done.secretDecryptedSize, Int64(size))
            let container = try f.storedBytes(documentId: r.documentId)
            XCTAssertEqual(container.count, (size + 15) / 16 * 16)
            // A ciphertext byte equals its plaintext byte by chance once in 256, so a 1-byte file
            // made this check fail now and then; over 15 bytes or more it never does by chance.
            // The larger sizes show the server holds ciphertext; every size must decrypt below.
            if size >= 15 { XCTAssertNotEqual(container.prefix(min(size, 64)), original.prefix(64), "the server holds ciphertext") }
            XCTAssertEqual(try UploadFixture.decrypt(container, item: done), original, "size \(size) decrypts to the original")
        }
    }

    /// A secret item stored by an earlier build keeps its key material as hex in `extra`: the
    /// upload encrypts with that key (a resumed upload must re-create the bytes it sent), and
    /// the item is stored again with the material typed and the hex gone.
    func testASecretItemWithItsKeyStoredAsHexIsSentWithThatKeyAndStoredTyped() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let path = try f.makeFile("legacy.bin", size: 100)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let queued = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, secret: true, staging: .link))
        let key = Data((0..<32).map { UInt8($0 &+ 40) })
        let iv = Data((0..<32).map { UInt8($0 &+ 90) })
        let padding = Data(repeating: 7, count: 12)  // 100 bytes fill 112 with 12 bytes of padding
        try await f.queue.postbox.transaction { tx in
            guard let item = try tx.uploadQueue.get(queued.id) else { return }
            // The row exactly as an earlier build wrote it: the key material as hex in the map.
            let earlier = EarlierUploadRow(
                item,
                strings: [
                    "staging": "link", "stat.mtimeNs": item.stagedMtimeNs.map { String($0) } ?? "", "secret.key": key.hexString, "secret.iv": iv.hexString,
                    "secret.padding": padding.hexString, "secret.decryptedSize": "100", "secret.keyFingerprint": "1", "secret.containerSize": "112",
                ])
            let read = try earlier.decoded()
            XCTAssertNil(read.secretKey)
            try tx.uploadQueue.set(read)
        }
        let r = try await f.upload().upload(itemId: queued.id)
        let done = try await f.item(queued.id)
        XCTAssertEqual(done.state, .sent, done.failureReason ?? "")
        XCTAssertEqual(done.secretKey, SecretKeyMaterial(key: key, iv: iv, padding: padding), "the stored key, now typed")
        XCTAssertNil(done.legacySecretKey, "the hex is gone")
        let container = try f.storedBytes(documentId: r.documentId)
        XCTAssertEqual(try AESIGE.decryptTrimmed(container, key: key, iv: iv, decryptedSize: 100), original, "encrypted with the stored key")
    }

    /// A queue written by an earlier build keeps an item's later fields as strings in the row's
    /// map: such a row is claimed, sent with its MIME type, and stored again with the fields typed
    /// under the same names.
    func testAnItemStoredByAnEarlierBuildWithItsFieldsAsStringsIsClaimedAndSent() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let path = try f.makeFile("earlier.bin", size: 70_000)
        let queued = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, staging: .copy))
        let mtime = try XCTUnwrap(queued.stagedMtimeNs)
        let earlier = EarlierUploadRow(
            queued, strings: ["staging": "copy", "stat.mtimeNs": String(mtime), "mimeType": "application/x-earlier", "interruptions": "2"])
        try await f.queue.postbox.transaction { tx in
            let read = try earlier.decoded()
            XCTAssertEqual(PostboxEncoder.encode(read), earlier.bytes, "the stored row is the earlier build's, byte for byte")
            try tx.uploadQueue.set(read)
        }
        let lease = UploadLease(holder: UploadLeaseHolder.current(tag: "earlier"), duration: 60)
        guard case .item(let claimed) = try await f.queue.claim(lease: lease) else { return XCTFail("the earlier row is not claimable") }
        XCTAssertEqual(claimed.id, queued.id)
        XCTAssertEqual(claimed.interruptions, 2, "a queued item's count is kept until an attempt settles")
        let r = try await f.upload { $0.lease = lease }.upload(itemId: queued.id)
        let done = try await f.item(queued.id)
        XCTAssertEqual(done.state, .sent, done.failureReason ?? "")
        XCTAssertEqual(done.documentId, r.documentId)
        XCTAssertEqual(done.interruptions, 0, "settled")
        XCTAssertEqual(try f.storedBytes(documentId: r.documentId), try Data(contentsOf: URL(fileURLWithPath: path)))
        let history = try await f.client.getHistory(peerId: f.peer, limit: 100)
        let sent = try XCTUnwrap(history.messages.first { $0.randomId == queued.randomId })
        XCTAssertEqual(sent.media.first?.document?.mimeType, "application/x-earlier", "sent with the MIME type the earlier row held")
        let strings = try await f.queue.postbox.read { tx in try tx.uploadQueue.get(queued.id).map { PostboxEncoder.encode($0) } }
        let reread = try PostboxDecoder.decode(EarlierUploadRow.self, from: try XCTUnwrap(strings)).strings
        XCTAssertEqual(reread["documentId"], String(r.documentId), "an earlier build finds the document id where it kept it")
        XCTAssertEqual(reread["mimeType"], "application/x-earlier")
    }

    /// A secret file staged as a copy is staged as its encrypted container: no 4 KiB block of
    /// the plaintext is in the uploads directory, the source may vanish, and what the server
    /// gets still decrypts to the original.
    func testASecretCopyIsStagedEncryptedAndStillDecryptsToTheOriginal() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        for size in [17, 300_000, 10_100_000] {
            let path = try f.makeFile("c\(size).bin", size: size)
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, secret: true, staging: .copy))
            XCTAssertEqual(item.size, Int64(size))
            XCTAssertEqual(item.sha256, CloudCrypto.SHA256.hash(original).hexString, "the item records the plaintext's digest")
            let staged = try Data(contentsOf: URL(fileURLWithPath: item.stagedPath))
            XCTAssertEqual(staged.count, (size + 15) / 16 * 16, "the container is staged")
            for offset in stride(from: 0, to: original.count, by: 4096) {
                let block = original.subdata(in: offset..<min(offset + 4096, original.count))
                guard block.count >= 16 else { continue }
                XCTAssertNil(staged.range(of: block), "plaintext block at \(offset) of \(size) staged in clear")
            }
            try FileManager.default.removeItem(atPath: path)
            let r = try await f.upload().upload(itemId: item.id)
            let done = try await f.item(item.id)
            XCTAssertEqual(try UploadFixture.decrypt(try f.storedBytes(documentId: r.documentId), item: done), original, "size \(size)")
        }
    }

    func testLargeFileArrivesByteEqualWith30PartsInFlight() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let size = 64 << 20
        let path = try f.makeFile("large.bin", size: size)
        let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer))
        let started = Date()
        let r = try await f.upload().upload(itemId: item.id)
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(r.partsSent, 128)
        XCTAssertEqual(try f.server.fileInfo(id: r.documentId)?.sha256, item.sha256)
        print("64 MiB uploaded in \(String(format: "%.2f", seconds)) s")
    }

    func testARepeatedSendReturnsTheSameMessage() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let path = try f.makeFile("i.bin", size: 400_000)
        let item = try await f.queue.enqueue(UploadRequest(path: path, peerId: f.peer, staging: .copy))
        let first = try await f.upload().upload(itemId: item.id)
        // A crash after the server answered but before the item was marked sent: the parts are
        // recorded as acknowledged, the state still uploading.
        try await f.postbox.transaction { tx in
            var it = try tx.uploadQueue.get(item.id)!
            it.state = .uploading
            it.messageId = nil
            try tx.uploadQueue.set(it)
            for p in 0..<it.totalParts { try tx.uploadQueue.acknowledge(item: item.id, part: p) }
        }
        let second = try await f.upload().upload(itemId: item.id)
        XCTAssertEqual(second.messageId, first.messageId)
        XCTAssertEqual(second.partsSent, 0)
        let count = try await f.messages(randomId: item.randomId)
        XCTAssertEqual(count, 1, "one message for the random id")
        XCTAssertEqual(f.cloud.methodCount(.sendMedia), 2)
        // And an item already sent is not touched again.
        let third = try await f.upload().upload(itemId: item.id)
        XCTAssertTrue(third.alreadySent)
        XCTAssertEqual(f.cloud.methodCount(.sendMedia), 2)
    }
}

/// Asserts `body` throws a `MultipartUploadError` accepted by `check`.
func XCTAssertThrowsUploadError<T>(
    _ body: @autoclosure () async throws -> T, file: StaticString = #filePath, line: UInt = #line,
    _ check: (MultipartUploadError) -> Bool
) async {
    do {
        _ = try await body()
        XCTFail("expected an upload error", file: file, line: line)
    } catch let error as MultipartUploadError {
        XCTAssertTrue(check(error), "unexpected error: \(error)", file: file, line: line)
    } catch {
        XCTFail("unexpected error type: \(error)", file: file, line: line)
    }
}

/// Leases, settling and the crash sweep of `UploadQueue`.
final class UploadQueueLeaseTests: XCTestCase {
    func testLeasesKeepWorkersApartAndDeadHoldersHoldNothing() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let a = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("a.bin", size: 100), peerId: f.peer))
        let b = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("b.bin", size: 100), peerId: f.peer))
        let lease = UploadLease(holder: UploadLeaseHolder.current(tag: "t"), duration: 60)
        guard case .item(let first) = try await f.queue.claim(lease: lease) else { return XCTFail() }
        guard case .item(let second) = try await f.queue.claim(lease: lease) else { return XCTFail() }
        XCTAssertEqual([first.id, second.id], [a.id, b.id], "a live lease (even our own) is never handed out twice")
        guard case .none = try await f.queue.claim(lease: lease) else { return XCTFail("nothing left") }

        // A holder whose process is gone holds nothing.
        try await f.postbox.transaction { tx in
            var it = try tx.uploadQueue.get(a.id)!
            it.leaseHolder = "\(UploadLeaseHolder.current(tag: "x").split(separator: "/")[0])/999999/1/dead"
            try tx.uploadQueue.set(it)
        }
        guard case .item(let taken) = try await f.queue.claim(lease: lease) else { return XCTFail("dead holder's item") }
        XCTAssertEqual(taken.id, a.id)
        XCTAssertEqual(taken.attempts, 1, "the dead holder's unsettled attempt is not the item's: only this one counts")
        XCTAssertEqual(taken.interruptions, 1)

        // Retry with backoff, then give up after maxAttempts; interrupted gives the attempt back.
        let retry = try await f.queue.settle(b.id, lease: lease, outcome: .retry(reason: "boom", backoff: 10, maxAttempts: 5))
        XCTAssertEqual(retry, .queued)
        let waiting = try await f.item(b.id)
        XCTAssertGreaterThan(waiting.notBefore, MultipartUpload.nowMs() + 9000)
        guard case .waiting(let until) = try await f.queue.claim(lease: lease) else { return XCTFail("b waits") }
        XCTAssertEqual(until, waiting.notBefore)
        let gaveUp = try await f.queue.settle(a.id, lease: lease, outcome: .retry(reason: "boom", backoff: 1, maxAttempts: 1))
        XCTAssertEqual(gaveUp, .failed)
        let failed = try await f.item(a.id)
        XCTAssertTrue(failed.failureReason?.contains("gave up after 1 attempts") == true, failed.failureReason ?? "")
        let other = UploadLease(holder: "someone-else", duration: 60)
        let notMine = try await f.queue.settle(a.id, lease: other, outcome: .failed(reason: "x"))
        XCTAssertNil(notMine, "only the holder settles")
    }

    func testSweepRemovesStagedFilesOfSentItems() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let item = try await f.queue.enqueue(UploadRequest(path: try f.makeFile("s.bin", size: 1000), peerId: f.peer, staging: .copy))
        _ = try await f.upload().upload(itemId: item.id)
        XCTAssertTrue(FileManager.default.fileExists(atPath: item.stagedPath), "the library leaves removal to the queue")
        let removed = try await f.queue.sweep()
        XCTAssertEqual(removed, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: item.stagedPath))
    }

    func testSweepRemovesOldFetchCopiesAndEnqueueJournalsOnly() async throws {
        let f = try await UploadFixture.start()
        addTeardownBlock { await f.stop() }
        let dir = f.queue.directory
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let names = ["7.fetching", ".s3-enqueue-ab.journal", "8.fetching", ".s3-enqueue-cd.journal"]
        for name in names { XCTAssertTrue(FileManager.default.createFile(atPath: dir + "/" + name, contents: Data([1]))) }
        let twoHours = Date().addingTimeInterval(-7200)
        let twoDays = Date().addingTimeInterval(-2 * 86_400)
        try FileManager.default.setAttributes([.modificationDate: twoHours], ofItemAtPath: dir + "/7.fetching")
        try FileManager.default.setAttributes([.modificationDate: twoHours], ofItemAtPath: dir + "/.s3-enqueue-ab.journal")
        try FileManager.default.setAttributes([.modificationDate: twoDays], ofItemAtPath: dir + "/.s3-enqueue-cd.journal")
        let removed = try await f.queue.sweep()
        XCTAssertEqual(removed, 2)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        XCTAssertEqual(left, ["8.fetching", ".s3-enqueue-ab.journal"], "young leftovers may belong to work in progress")
    }
}
