import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import XCTest

/// Plain Range URLs (also via curl) and the fault knobs.
final class PlainAndFaultTests: XCTestCase {
    func testPlainRangesHeadAnd416() async throws {
        let server = try await TestCloud.start { $0.dataset.bigFiles = [5_000_000] }
        addTeardownBlock { await server.stop() }
        let listing = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self)
        let f = listing.files.first { $0.size == 5_000_000 }!
        let info = try await TestCloud.fileInfo(server, f.id)
        let url = server.dcURLs[2].appendingPathComponent("plain/\(f.id)")
        let full = try await TestHTTP.request(url)
        XCTAssertEqual(full.status, 200)
        XCTAssertEqual(SHA256.hash(full.body).hexString, info.sha256)
        XCTAssertEqual(full.headers["accept-ranges"], "bytes")
        let part = try await TestHTTP.request(url, headers: ["Range": "bytes=1000-2999"])
        XCTAssertEqual(part.status, 206)
        XCTAssertEqual(part.headers["content-range"], "bytes 1000-2999/5000000")
        XCTAssertEqual(part.body, full.body.subdata(in: 1000..<3000))
        let tail = try await TestHTTP.request(url, headers: ["Range": "bytes=-10"])
        XCTAssertEqual(tail.body, full.body.suffix(10))
        let open = try await TestHTTP.request(url, headers: ["Range": "bytes=4999990-"])
        XCTAssertEqual(open.body.count, 10)
        let bad = try await TestHTTP.request(url, headers: ["Range": "bytes=5000000-"])
        XCTAssertEqual(bad.status, 416)
        XCTAssertEqual(bad.headers["content-range"], "bytes */5000000")
        let head = try await TestHTTP.request(url, method: "HEAD")
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.headers["content-length"], "5000000")
        XCTAssertEqual(head.body.count, 0)
        do { let v = try await TestHTTP.request(server.dcURLs[0].appendingPathComponent("plain/12")).status; XCTAssertEqual(v, 404) }
    }

    func testPrefixURLServesTheFirstBytesAsAWholeFile() async throws {
        let server = try await TestCloud.start { $0.dataset.bigFiles = [5_000_000] }
        addTeardownBlock { await server.stop() }
        let f = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).files.first { $0.size == 5_000_000 }!
        let base = server.dcURLs[0].appendingPathComponent("plain/\(f.id)").absoluteString
        let full = try await TestHTTP.request(URL(string: base)!)
        let prefix = try await TestHTTP.request(URL(string: base + "?prefix=2097152")!)
        XCTAssertEqual(prefix.status, 200)
        XCTAssertEqual(prefix.headers["content-length"], "2097152")
        XCTAssertEqual(prefix.body, full.body.prefix(2_097_152))
        let inside = try await TestHTTP.request(URL(string: base + "?prefix=2097152")!, headers: ["Range": "bytes=2097150-"])
        XCTAssertEqual(inside.status, 206)
        XCTAssertEqual(inside.headers["content-range"], "bytes 2097150-2097151/2097152")
        XCTAssertEqual(inside.body, full.body.subdata(in: 2_097_150..<2_097_152))
        let beyond = try await TestHTTP.request(URL(string: base + "?prefix=9000000")!, method: "HEAD")
        XCTAssertEqual(beyond.headers["content-length"], "5000000", "a prefix beyond the end is the whole file")
    }

    func testCurlFetchesTheSameBytesWithRanges() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else { throw XCTSkip("curl not installed") }
        let server = try await TestCloud.start { $0.dataset.bigFiles = [3_000_000] }
        addTeardownBlock { await server.stop() }
        let f = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).files.first { $0.size == 3_000_000 }!
        let info = try await TestCloud.fileInfo(server, f.id)
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: out) }
        let url = server.dcURLs[0].appendingPathComponent("plain/\(f.id)").absoluteString
        // First half, then resume with -C -.
        XCTAssertEqual(try run("/usr/bin/curl", ["-sf", "-r", "0-1499999", "-o", out.path, url]), 0)
        XCTAssertEqual(try run("/usr/bin/curl", ["-sf", "-C", "-", "-o", out.path, url]), 0)
        XCTAssertEqual(SHA256.hash(try Data(contentsOf: out)).hexString, info.sha256)
    }

    func run(_ exe: String, _ args: [String]) throws -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = args
        try p.run()
        p.waitUntilExit()
        return p.terminationStatus
    }

    func testCorruptDropErrorFloodAndRevalidationFaults() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let listing = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self)
        let f = listing.files.first { $0.type == .document && !$0.cdn && $0.size > 200_000 && $0.parent?.hasPrefix("message:") == true }!
        let info = try await TestCloud.fileInfo(server, f.id)
        guard case .message(let peer, let mid) = ParentEntity(key: info.parents[0])! else { return XCTFail() }
        let msg = try await TestHTTP.api(server.dcURLs[0], .getMessages, GetMessagesRequest(peerId: peer, ids: [mid])).decode(MessagesResponse.self)
        let doc = msg.messages[0].media.compactMap(\.document).first { $0.id == f.id }!
        let dc = server.dcURLs[doc.dcId - 1]
        let req = GetFileRequest(location: doc.location, fileReference: doc.fileReference, offset: 0, limit: 128 << 10)

        try await TestHTTP.adminPost(server, "faults", FaultConfig(corruptRate: 1))
        let c = try await TestHTTP.api(dc, .getFile, req)
        XCTAssertEqual(c.status, 200)
        XCTAssertEqual(c.body.count, 128 << 10)
        XCTAssertNotEqual(c.headers["x-part-sha256"], SHA256.hash(c.body).hexString, "corruption is detectable")

        try await TestHTTP.adminPost(server, "faults", FaultConfig(corruptRate: 0, dropRate: 1))
        do {
            let d = try await TestHTTP.api(dc, .getFile, req)
            XCTAssertLessThan(d.body.count, 128 << 10, "dropped connection must not deliver a full body")
        } catch {
            // URLSession reports the closed connection as an error: expected.
        }

        try await TestHTTP.adminPost(server, "faults", FaultConfig(errorRate: 1, dropRate: 0))
        let e = try await TestHTTP.api(dc, .getFile, req)
        XCTAssertEqual(e.status, 500)
        XCTAssertEqual(e.errorName, .internalError)

        try await TestHTTP.adminPost(server, "faults", FaultConfig(errorRate: 0, floodWaitRate: 1, floodWaitSeconds: 3))
        let fw = try await TestHTTP.api(dc, .getFile, req)
        XCTAssertEqual(fw.status, 420)
        XCTAssertEqual(fw.errorName, .floodWait(3))
        XCTAssertEqual(fw.headers["retry-after"], "3")

        try await TestHTTP.adminPost(server, "faults", FaultConfig(floodWaitRate: 0, failRevalidation: true))
        do { let v = try await TestHTTP.api(dc, .getMessages, GetMessagesRequest(peerId: peer, ids: [mid])).status; XCTAssertEqual(v, 500) }
        do { let v = try await TestHTTP.api(dc, .getFile, req).status; XCTAssertEqual(v, 200, "non-revalidation calls unaffected") }
        // Admin is never faulted.
        try await TestHTTP.adminPost(server, "faults", FaultConfig(errorRate: 1))
        do { let v = try await TestHTTP.request(server.adminURL.appendingPathComponent("admin/counters")).status; XCTAssertEqual(v, 200) }
        let cfg = try await TestHTTP.adminGet(server, "faults", as: FaultConfig.self)
        XCTAssertEqual(cfg.errorRate, 1)
        XCTAssertEqual(cfg.failRevalidation, true)

        try await TestHTTP.adminPost(server, "faults", FaultConfig(errorRate: 0, failRevalidation: false))
    }

    func testMalformedAnswers() async throws {
        let server = try await TestCloud.start { $0.dataset.bigFiles = [1 << 20] }
        addTeardownBlock { await server.stop() }
        let f = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).files.first { $0.size == 1 << 20 }!
        guard case .message(let peer, let mid) = ParentEntity(key: f.parent!)! else { return XCTFail() }
        let doc = try await TestHTTP.api(server.dcURLs[0], .getMessages, GetMessagesRequest(peerId: peer, ids: [mid]))
            .decode(MessagesResponse.self).messages[0].media[0].document!
        let dc = server.dcURLs[doc.dcId - 1]
        let req = GetFileRequest(location: doc.location, fileReference: doc.fileReference, offset: 0, limit: 128 << 10)
        func knob(_ m: MalformedAnswer) async throws { try await TestHTTP.adminPost(server, "faults", FaultConfig(malformed: m, malformedRate: 1)) }

        try await knob(.badJSON)
        let bj = try await TestHTTP.api(dc, .getHistory, GetHistoryRequest(peerId: peer))
        XCTAssertEqual(bj.status, 200)
        XCTAssertThrowsError(try JSONDecoder().decode(MessagesResponse.self, from: bj.body))
        try await knob(.unknownError)
        let ue = try await TestHTTP.api(dc, .getHistory, GetHistoryRequest(peerId: peer))
        XCTAssertEqual(ue.status, 400)
        XCTAssertEqual(ue.errorName, .other("WEIRD_ERROR_42"))
        try await knob(.shortPart)
        let sp = try await TestHTTP.api(dc, .getFile, req)
        XCTAssertEqual(sp.body.count, 64 << 10)
        XCTAssertNotEqual(sp.headers["x-part-sha256"], SHA256.hash(sp.body).hexString)
        try await knob(.oversizePart)
        let op = try await TestHTTP.api(dc, .getFile, req)
        XCTAssertEqual(op.body.count, (128 << 10) + 4096)
        // JSON answers are not touched by the part kinds.
        do { let v = try await TestHTTP.api(dc, .getHistory, GetHistoryRequest(peerId: peer)).status; XCTAssertEqual(v, 200) }
        try await knob(.none)
        let ok = try await TestHTTP.api(dc, .getFile, req)
        XCTAssertEqual(ok.headers["x-part-sha256"], SHA256.hash(ok.body).hexString)
    }

    func testLatencyAndBandwidth() async throws {
        let server = try await TestCloud.start { $0.dataset.bigFiles = [400_000] }
        addTeardownBlock { await server.stop() }
        let f = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self).files.first { $0.size == 400_000 }!
        try await TestHTTP.adminPost(server, "faults", FaultConfig(latencyMs: 150, bandwidthBytesPerSecond: 1_000_000))
        let t0 = ContinuousClock.now
        let r = try await TestHTTP.request(server.dcURLs[0].appendingPathComponent("plain/\(f.id)"))
        let elapsed = ContinuousClock.now - t0
        XCTAssertEqual(r.body.count, 400_000)
        XCTAssertGreaterThan(elapsed, .milliseconds(450), "150 ms latency + 0.4 s at 1 MB/s")
    }
    /// The bandwidth holds both ways: a request body (a plain PUT, an upload part) is read at it,
    /// arrives intact, and an unpaced server reads the same body at once.
    func testRequestBodiesArePacedByTheBandwidth() async throws {
        let server = try await TestCloud.start()
        addTeardownBlock { await server.stop() }
        let dc = server.dcURLs[0]
        let data = SecureRandom.bytes(600_000)
        func put(_ name: String) async throws -> (PlainUploadInfo, Duration) {
            let t0 = ContinuousClock.now
            let r = try await TestHTTP.request(
                dc.appendingPathComponent("plain/upload/\(name)"), method: "PUT", body: data,
                headers: ["Content-Type": "application/octet-stream"])
            let elapsed = ContinuousClock.now - t0
            XCTAssertEqual(r.status, 201)
            return (try r.decode(PlainUploadInfo.self), elapsed)
        }
        let (fast, unpacedTime) = try await put("unpaced.bin")
        XCTAssertEqual(fast.sha256, SHA256.hash(data).hexString)

        try await TestHTTP.adminPost(server, "faults", FaultConfig(latencyMs: 0, bandwidthBytesPerSecond: 1_000_000))
        let (paced, pacedTime) = try await put("paced.bin")
        XCTAssertEqual(paced.size, Int64(data.count))
        XCTAssertEqual(paced.sha256, SHA256.hash(data).hexString)
        XCTAssertGreaterThanOrEqual(pacedTime, .milliseconds(570), "600 KB at 1 MB/s")
        XCTAssertLessThan(unpacedTime, pacedTime)

        // An upload part (512 KiB) takes its time at the bandwidth too.
        let part = SecureRandom.bytes(512 << 10)
        let t0 = ContinuousClock.now
        let saved = try await UploadTests.savePart(dc, fileId: 77, part: 0, part)
        XCTAssertEqual(saved.status, 200)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - t0, .milliseconds(500), "524 KB at 1 MB/s")
    }
}
