import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import Synchronization
import TestSupport
import XCTest

/// A real in-process cloudd and a `CloudClient` on a real libcurl transport over loopback.
final class ClientFixture: @unchecked Sendable {
    let server: CloudServer
    let events = Mutex<[CloudClientEvent]>([])

    static func start(_ configure: (inout CloudServerConfig) -> Void = { _ in }) async throws -> ClientFixture {
        var c = CloudServerConfig()
        c.seed = 7
        c.dcCount = 3
        c.dataset.peers = 5
        c.dataset.messagesPerPeer = 16
        c.dataset.maxMediaSize = 1 << 20
        configure(&c)
        return ClientFixture(server: try await CloudServer.start(c))
    }

    private init(server: CloudServer) { self.server = server }

    func stop() async { await server.stop() }

    var datacenters: [Int: String] {
        Dictionary(uniqueKeysWithValues: server.dcURLs.enumerated().map { ($0.offset + 1, $0.element.absoluteString) })
    }

    /// Fast retries so the tests do not sleep for seconds.
    func config(_ tweak: (inout CloudAccountConfig) -> Void = { _ in }) -> CloudAccountConfig {
        var c = CloudAccountConfig(
            datacenters: datacenters, cdnURL: server.cdnURL.absoluteString, mainDc: 1, authToken: "tok-secret-123",
            requestTimeout: 20)
        c.retry = CloudRetryPolicy(maxAttempts: 4, baseDelay: 0.02, maxDelay: 0.1, jitter: 0.5, maxFloodWait: 5, maxFloodWaits: 5)
        tweak(&c)
        return c
    }

    func client(_ tweak: (inout CloudAccountConfig) -> Void = { _ in }) throws -> CloudClient {
        try CloudClient(config: config(tweak), observer: { [weak self] e in self?.events.withLock { $0.append(e) } })
    }

    /// A dataset document in a message (on the CDN or not) of `minSize…maxSize` bytes, as a
    /// fresh `getMessages` gives it, with the server's info.
    func messageDocument(_ client: CloudClient, minSize: Int64, maxSize: Int64, cdn: Bool = false) async throws -> (Document, FileInfo, Int64) {
        for file in server.dataset().files where file.type == .document && file.cdn == cdn && file.size >= minSize && file.size <= maxSize {
            guard let key = file.parent, case .message(let peer, let id)? = ParentEntity(key: key) else { continue }
            let message = try await client.getMessages(peerId: peer, ids: [id]).messages[0]
            guard let document = message.media.compactMap(\.document).first(where: { $0.location.id == file.id }),
                let info = try server.fileInfo(id: file.id)
            else { continue }
            return (document, info, peer)
        }
        throw FixtureMissing("no message document of \(minSize)…\(maxSize) bytes in the seeded dataset")
    }

    func methodCount(_ m: CloudMethod) -> Int { server.counters().methods[m.rawValue] ?? 0 }

    /// Asserts `body` throws a `CloudClientError` and returns it.
    static func expectError(_ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line) async -> CloudClientError? {
        do {
            try await body()
            XCTFail("expected an error", file: file, line: line)
            return nil
        } catch let e as CloudClientError {
            return e
        } catch {
            XCTFail("expected CloudClientError, got \(error)", file: file, line: line)
            return nil
        }
    }
}

/// The client core: configuration, typed calls and paging, error mapping, retries, flood waits,
/// migration, and refusal of bad answers.
final class CloudClientTests: XCTestCase {
    func testConfigurationIsValidatedAndNeverShowsTheToken() throws {
        var c = CloudAccountConfig(datacenters: [1: "http://127.0.0.1:1", 2: "ftp://x"], mainDc: 3, authToken: "s3cr3t-token")
        XCTAssertTrue(c.problems.contains { $0.contains("datacenter 2 URL") })
        XCTAssertTrue(c.problems.contains { $0.contains("mainDc 3") })
        XCTAssertThrowsError(try CloudClient(config: c)) { error in
            guard case .config(let message)? = error as? CloudClientError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("mainDc"))
        }
        c = CloudAccountConfig(datacenters: [1: "http://127.0.0.1:1"], authToken: "s3cr3t-token")
        XCTAssertEqual(c.problems, [])
        XCTAssertEqual(c.mainDc, 1)
        for text in [
            c.description, c.debugDescription, String(reflecting: c), "\(c)",
            {
                var s = ""; dump(c, to: &s); return s
            }(),
        ] {
            XCTAssertFalse(text.contains("s3cr3t"), text)
        }
        c.retry.maxAttempts = 0
        XCTAssertTrue(c.problems.contains { $0.contains("maxAttempts") })
    }

    func testDialogsHistoryAndMessagesPaging() async throws {
        let f = try await ClientFixture.start {
            $0.dataset.peers = 7; $0.dataset.messagesPerPeer = 23
        }
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        let p1 = try await client.getDialogs(offset: 0, limit: 4)
        XCTAssertEqual(p1.dialogs.count, 4)
        XCTAssertEqual(p1.nextOffset, 4)
        let p2 = try await client.getDialogs(offset: 4, limit: 4)
        XCTAssertEqual(p2.dialogs.count, 3)
        XCTAssertNil(p2.nextOffset)
        let peer = p1.dialogs[0].peer.id
        var ids: [Int32] = []
        var offsetId: Int32 = 0
        while true {
            let page = try await client.getHistory(peerId: peer, offsetId: offsetId, limit: 10)
            if page.messages.isEmpty { break }
            ids += page.messages.map(\.id)
            offsetId = page.messages.last!.id
        }
        XCTAssertEqual(ids, Array((1...23).reversed()))
        let newer = try await client.getHistory(peerId: peer, minId: 20, limit: 100)
        XCTAssertEqual(newer.messages.map(\.id), [23, 22, 21])
        let byId = try await client.getMessages(peerId: peer, ids: [3, 1, 999])
        XCTAssertEqual(byId.messages.map(\.id), [3, 1])

        // More than 100 ids is refused before anything is sent.
        let before = f.methodCount(.getMessages)
        let tooMany = await ClientFixture.expectError { _ = try await client.getMessages(peerId: peer, ids: Array(1...101)) }
        guard case .invalidRequest? = tooMany else { return XCTFail("\(String(describing: tooMany))") }
        XCTAssertEqual(f.methodCount(.getMessages), before)

        // A protocol error comes back typed, with its name.
        let unknownPeer = await ClientFixture.expectError { _ = try await client.getHistory(peerId: 42, limit: 10) }
        XCTAssertEqual(unknownPeer?.errorName, .peerIdInvalid)
        XCTAssertEqual(unknownPeer?.cloudError?.code, 400)
        XCTAssertEqual(unknownPeer?.isCloudUnavailable, false)
        let config = try await client.getConfig(dc: 2)
        XCTAssertEqual(config.thisDc, 2)
    }

    func testEntityCallsAndIdempotentUpload() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        let listing = f.server.dataset()
        let withAvatar = try XCTUnwrap(listing.peers.first { $0.photo != nil })
        let peer = try await client.getPeerPhoto(peerId: withAvatar.id)
        XCTAssertEqual(peer.id, withAvatar.id)
        XCTAssertNotNil(peer.photo)
        let setId = try XCTUnwrap(listing.stickerSetIds.first)
        let set = try await client.getStickerSet(id: setId)
        XCTAssertEqual(set.id, setId)
        let sets = try await client.getAllStickers()
        XCTAssertEqual(sets.count, listing.stickerSetIds.count)
        let wallpaperId = try XCTUnwrap(listing.wallpaperIds.first)
        let wallpaper = try await client.getWallPaper(id: wallpaperId)
        XCTAssertEqual(wallpaper.id, wallpaperId)
        let wallpapers = try await client.getWallPapers()
        XCTAssertEqual(wallpapers.count, listing.wallpaperIds.count)
        let storyKey = try XCTUnwrap(listing.stories.first).split(separator: ":")
        let storyPeer = try XCTUnwrap(Int64(storyKey[0])), storyId = try XCTUnwrap(Int32(storyKey[1]))
        let story = try await client.getStory(peerId: storyPeer, id: storyId)
        XCTAssertEqual(story.id, storyId)
        let stories = try await client.getPeerStories(peerId: storyPeer)
        XCTAssertTrue(stories.contains { $0.id == storyId })
        let gone = await ClientFixture.expectError { _ = try await client.getStickerSet(id: 1) }
        XCTAssertEqual(gone?.errorName, .stickerSetInvalid)
        XCTAssertEqual(f.server.counters().parents["stickerset:\(setId)"], 1)

        // Upload two parts, then send twice with one random id: one message.
        let bytes = Data((0..<(200 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let fileId = Int64.random(in: 1...Int64.max)
        try await client.saveFilePart(fileId: fileId, part: 1, body: .data(bytes.suffix(from: 128 << 10)))
        try await client.saveFilePart(fileId: fileId, part: 0, body: .data(bytes.prefix(128 << 10)))
        let request = SendMediaRequest(
            peerId: withAvatar.id, randomId: 777_001,
            file: InputFile(id: fileId, parts: 2, name: "a.bin", big: false, sha256: SHA256.hash(bytes).hexString))
        let m1 = try await client.sendMedia(request)
        let m2 = try await client.sendMedia(request)
        XCTAssertEqual(m1.id, m2.id)
        XCTAssertEqual(m1.media.first?.document?.size, Int64(bytes.count))
        let emptyPart = await ClientFixture.expectError { try await client.saveFilePart(fileId: fileId, part: 0, body: .none) }
        guard case .invalidRequest? = emptyPart else { return XCTFail("\(String(describing: emptyPart))") }
    }

    func testFloodWaitIsHonouredThenTheCallSucceeds() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        f.server.updateFaults(FaultConfig(floodWaitRate: 1, floodWaitSeconds: 1))
        let server = f.server
        let clear = Task {
            try await Task.sleep(for: .milliseconds(1500))
            server.updateFaults(FaultConfig(floodWaitRate: 0))
        }
        let t0 = ContinuousClock.now
        let page = try await client.getDialogs(limit: 10)
        let elapsed = ContinuousClock.now - t0
        _ = try await clear.value
        XCTAssertEqual(page.dialogs.count, 5)
        XCTAssertGreaterThanOrEqual(client.stats.floodWaits, 1)
        XCTAssertGreaterThanOrEqual(elapsed, .seconds(1), "the client waited as told")
        XCTAssertTrue(f.events.withLock { $0 }.contains(.floodWait(method: "messages.getDialogs", endpoint: "main DC", seconds: 1)))

        // A wait longer than the policy allows fails at once with the server's name.
        f.server.updateFaults(FaultConfig(floodWaitRate: 1, floodWaitSeconds: 120))
        let t1 = ContinuousClock.now
        let error = await ClientFixture.expectError { _ = try await client.getDialogs(limit: 10) }
        XCTAssertEqual(error?.errorName, .floodWait(120))
        XCTAssertLessThan(ContinuousClock.now - t1, .seconds(3))
        XCTAssertTrue(error?.description.contains("FLOOD_WAIT_120") ?? false)
    }

    func testServerErrorsAreRetriedWithBackoffAndThenReportedUnavailable() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client { $0.retry.maxAttempts = 30 }
        f.server.updateFaults(FaultConfig(errorRate: 1))
        let server = f.server
        let clear = Task {
            try await Task.sleep(for: .milliseconds(400))
            server.updateFaults(FaultConfig(errorRate: 0))
        }
        let page = try await client.getDialogs(limit: 3)
        _ = try await clear.value
        XCTAssertEqual(page.dialogs.count, 3)
        XCTAssertGreaterThanOrEqual(client.stats.retries, 2)
        XCTAssertTrue(
            f.events.withLock { $0 }.contains {
                if case .retry(_, _, _, _, let reason) = $0 { return reason == "500 INTERNAL" }; return false
            })

        // Always failing: after maxAttempts the 500 comes back, marked as unavailability.
        f.server.updateFaults(FaultConfig(errorRate: 1))
        let quick = try f.client { $0.retry.maxAttempts = 3 }
        let before = f.methodCount(.getDialogs)
        let error = await ClientFixture.expectError { _ = try await quick.getDialogs(limit: 3) }
        XCTAssertEqual(error?.errorName, .internalError)
        XCTAssertEqual(error?.isCloudUnavailable, true)
        XCTAssertEqual(f.methodCount(.getDialogs) - before, 3, "exactly maxAttempts requests")
    }

    func testUnreachableCloudIsUnavailableAfterRetries() async throws {
        // A port with nothing listening: bind, read the port, close.
        let listener = try LoopbackListener { fd in close(fd) }
        let port = listener.port
        listener.stop()
        var c = CloudAccountConfig(datacenters: [1: "http://127.0.0.1:\(port)"], connectTimeout: 2)
        c.retry = CloudRetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.05)
        let client = try CloudClient(config: c)
        let error = await ClientFixture.expectError { _ = try await client.getDialogs() }
        guard case .unavailable(let method, _, let attempts, _)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(method, "messages.getDialogs")
        XCTAssertEqual(attempts, 3)
        XCTAssertEqual(error?.isCloudUnavailable, true)
        XCTAssertTrue(error!.description.hasPrefix("cloud unavailable"), error!.description)
    }

    func testFileMigrateIsFollowedAndPartsAreChecked() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()
        let (document, info, _) = try await f.messageDocument(client, minSize: 10_000, maxSize: 500_000)
        let wrongDc = document.dcId % 3 + 1
        var data = Data()
        var offset: Int64 = 0
        var dc = wrongDc
        let part = FilePartRules.preferredPartSize(fileSize: document.size)
        while true {
            let answer = try await client.getFilePart(location: document.location, fileReference: document.fileReference, offset: offset, limit: part, dc: dc)
            guard case .part(let bytes, let size, let answeredDc) = answer else { return XCTFail("unexpected CDN redirect") }
            XCTAssertEqual(size, document.size)
            data.append(bytes)
            dc = answeredDc
            offset += Int64(bytes.count)
            if Int64(bytes.count) < part || offset >= size { break }
        }
        XCTAssertEqual(dc, document.dcId)
        XCTAssertEqual(SHA256.hash(data).hexString, info.sha256)
        XCTAssertEqual(client.stats.migrations, 1, "one migration, then the right DC is used")
        XCTAssertTrue(f.events.withLock { $0 }.contains(.migrate(method: "upload.getFile", from: "DC \(wrongDc)", to: document.dcId)))

        // Part rules are checked before sending.
        let bad = await ClientFixture.expectError {
            _ = try await client.getFilePart(location: document.location, fileReference: document.fileReference, offset: 100, limit: 4096)
        }
        guard case .invalidRequest? = bad else { return XCTFail("\(String(describing: bad))") }

        // Corrupt parts are fetched again until one matches its hash.
        f.server.updateFaults(FaultConfig(corruptRate: 0.5))
        let patient = try f.client { $0.retry.maxAttempts = 40 }
        for _ in 0..<6 {
            let answer = try await patient.getFilePart(location: document.location, fileReference: document.fileReference, offset: 0, limit: 4096)
            guard case .part(let bytes, _, _) = answer else { return XCTFail() }
            XCTAssertEqual(bytes, data.prefix(4096))
        }
        // Always corrupt: a clear error after the policy's attempts, nothing returned.
        f.server.updateFaults(FaultConfig(corruptRate: 1))
        let corrupt = await ClientFixture.expectError {
            _ = try await client.getFilePart(location: document.location, fileReference: document.fileReference, offset: 0, limit: 4096)
        }
        XCTAssertTrue(corrupt?.description.contains("SHA-256") ?? false, "\(String(describing: corrupt))")
    }

    func testBadAnswersGiveClearErrors() async throws {
        let f = try await ClientFixture.start()
        addTeardownBlock { await f.stop() }
        let client = try f.client()

        f.server.updateFaults(FaultConfig(malformed: .badJSON, malformedRate: 1))
        let badJSON = await ClientFixture.expectError { _ = try await client.getDialogs() }
        guard case .badAnswer(let method, _, let reason)? = badJSON else { return XCTFail("\(String(describing: badJSON))") }
        XCTAssertEqual(method, "messages.getDialogs")
        XCTAssertTrue(reason.contains("not valid JSON"), reason)

        f.server.updateFaults(FaultConfig(malformed: .unknownError, malformedRate: 1))
        let unknown = await ClientFixture.expectError { _ = try await client.getHistory(peerId: 1, limit: 5) }
        guard case .badAnswer(_, _, let reason2)? = unknown else { return XCTFail("\(String(describing: unknown))") }
        XCTAssertTrue(reason2.contains("unknown error name WEIRD_ERROR_42"), reason2)

        // Part bodies of the wrong length.
        f.server.updateFaults(FaultConfig(malformed: MalformedAnswer.none, malformedRate: 0))
        let (document, _, peer) = try await f.messageDocument(client, minSize: 300_000, maxSize: 1 << 30)
        f.server.updateFaults(FaultConfig(malformed: .shortPart, malformedRate: 1))
        let short = await ClientFixture.expectError {
            _ = try await client.getFilePart(location: document.location, fileReference: document.fileReference, offset: 0, limit: 131_072)
        }
        guard case .badAnswer(_, _, let reason3)? = short else { return XCTFail("\(String(describing: short))") }
        XCTAssertTrue(reason3.contains("expected 131072"), reason3)
        f.server.updateFaults(FaultConfig(malformed: .oversizePart, malformedRate: 1))
        let oversize = await ClientFixture.expectError {
            _ = try await client.getFilePart(location: document.location, fileReference: document.fileReference, offset: 0, limit: 131_072)
        }
        guard case .badAnswer(_, _, let reason4)? = oversize else { return XCTFail("\(String(describing: oversize))") }
        XCTAssertTrue(reason4.contains("more than the limit"), reason4)

        // An answer larger than the configured maximum.
        f.server.updateFaults(FaultConfig(malformed: MalformedAnswer.none, malformedRate: 0))
        let small = try f.client { $0.maxAnswerSize = 1024 }
        let tooLarge = await ClientFixture.expectError { _ = try await small.getHistory(peerId: peer, limit: 50) }
        guard case .badAnswer(_, _, let reason5)? = tooLarge else { return XCTFail("\(String(describing: tooLarge))") }
        XCTAssertTrue(reason5.contains("too large"), reason5)

        // No message names a reference, key or the token.
        for e in [badJSON, unknown, short, oversize, tooLarge].compactMap({ $0 }) {
            XCTAssertFalse(e.description.contains("tok-secret-123"))
            XCTAssertFalse(e.description.contains(document.fileReference.base64EncodedString()))
        }
    }

    func testCdnRedirectHashesAndReupload() async throws {
        let f = try await ClientFixture.start {
            $0.cdnFraction = 1; $0.cdnReuploadFraction = 1
        }
        addTeardownBlock { await f.stop() }
        let client = try f.client { $0.cdnURL = nil }
        let (document, _, _) = try await f.messageDocument(client, minSize: 1, maxSize: 1 << 30, cdn: true)
        let answer = try await client.getFilePart(location: document.location, fileReference: document.fileReference, offset: 0, limit: 131_072)
        guard case .cdnRedirect(let redirect) = answer else { return XCTFail("expected a CDN redirect") }
        XCTAssertEqual(redirect.size, document.size)
        // The CDN does not have it yet: the typed error, then reupload at the master DC.
        let notYet = await ClientFixture.expectError { _ = try await client.getCdnFilePart(fileToken: redirect.fileToken, offset: 0, limit: 131_072) }
        XCTAssertEqual(notYet?.errorName, .fileReuploadNeeded)
        let hashes = try await client.reuploadCdnFile(fileToken: redirect.fileToken, masterDc: redirect.masterDcId)
        XCTAssertFalse(hashes.isEmpty)
        let part = try await client.getCdnFilePart(fileToken: redirect.fileToken, offset: 0, limit: 131_072)  // `.cdn` learnt from the redirect
        XCTAssertEqual(part.fileSize, document.size)
        let plain = try AESCTR.crypt(part.data, key: redirect.encryptionKey, iv: redirect.encryptionIv, offset: 0)
        XCTAssertEqual(SHA256.hash(plain), hashes[0].hash)
        let again = try await client.getCdnFileHashes(fileToken: redirect.fileToken, offset: 0, masterDc: redirect.masterDcId)
        XCTAssertEqual(again.first, hashes.first)
    }

    func testRequestPacerSpacesRequests() async throws {
        let pacer = CloudRequestPacer(rate: 50)
        let t0 = ContinuousClock.now
        for _ in 0..<6 { try await pacer.wait() }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - t0, .milliseconds(95), "6 requests at 50/s take at least 100 ms")
        let unlimited = CloudRequestPacer(rate: nil)
        let t1 = ContinuousClock.now
        for _ in 0..<100 { try await unlimited.wait() }
        XCTAssertLessThan(ContinuousClock.now - t1, .milliseconds(50))
    }
}
