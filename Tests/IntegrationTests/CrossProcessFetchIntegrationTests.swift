import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox
import TestSupport
import XCTest

/// Two `jobrun fetch` processes on one resource against a real `cloudd`: the second asks the
/// first for its ranges instead of downloading them, answers before the first is done, and the
/// cloud's part counters show every part downloaded once.
final class CrossProcessFetchIntegrationTests: XCTestCase {
    /// The streamable videos in the cloud's messages, largest first.
    func videos(_ cloud: ClouddProcess) throws -> [Document] {
        var found: [Int64: Document] = [:]
        let listing = try cloud.dataset()
        for peer in listing.peers {
            for id in 1...(listing.messageCounts[String(peer.id)] ?? 0) {
                struct Found: Decodable { let message: CloudProtocol.Message }
                let m = try cloud.admin("messages/\(peer.id)/\(id)", as: Found.self).message
                for doc in m.media.compactMap(\.document) where (doc.headerSize ?? 0) > 0 { found[doc.id] = doc }
            }
        }
        return found.values.sorted { $0.size > $1.size }
    }

    func heldRanges(_ h: JobrunHarness, _ id: String) throws -> RangeMap {
        try MediaBox(basePath: h.root + "/account-0/postbox/media", readOnly: true).heldRanges(MediaResourceId(id))?.ranges ?? RangeMap()
    }

    /// Starts `jobrun fetch` for `id` and waits until its partial file holds some bytes.
    func startFetch(_ h: JobrunHarness, _ id: String, _ extra: [String]) throws -> ChildProcess {
        let p = try h.start(["fetch", "--resource", id, "--json"] + extra)
        let deadline = Date().addingTimeInterval(60)
        while try heldRanges(h, id).totalBytes == 0, p.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        XCTAssertTrue(p.isRunning, "still fetching: \(p.stdout) \(p.stderr)")
        return p
    }

    /// Every part of `video` answered exactly once, and the bytes held equal what was served.
    func assertEveryPartOnce(_ cloud: ClouddProcess, _ h: JobrunHarness, _ video: Document, file: StaticString = #filePath, line: UInt = #line) throws {
        let counters = try cloud.filePartCounters(video.id)
        XCTAssertTrue(counters.offsets.values.allSatisfy { $0 == 1 }, "\(counters.offsets)", file: file, line: line)
        XCTAssertEqual(counters.bytes, try heldRanges(h, "telegram-cloud-document-\(video.dcId)-\(video.id)").totalBytes, file: file, line: line)
    }

    func testSecondProcessGetsItsRangesFromTheFirstEveryPartOnce() throws {
        // 256 KB/s per answer: a whole video takes the first process several seconds.
        let cloud = try startCloudd([
            "--seed", "51", "--dcs", "1", "--peers", "4", "--messages-per-peer", "20", "--cdn-fraction", "0",
            "--max-media-size", "8MiB", "--bandwidth", "256K",
        ])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: 20)
        let all = try videos(cloud)
        XCTAssertGreaterThanOrEqual(all.count, 2)
        let (video, other) = (all[0], all[1])
        XCTAssertGreaterThan(video.size, 4 << 20, "a video large enough for a long background fetch")
        try cloud.resetCounters()

        // A: the whole video in the background. B: its tail at maximum priority, while A runs.
        let id = "telegram-cloud-document-\(video.dcId)-\(video.id)"
        let a = try startFetch(h, id, [])
        let tail = (video.size - (300 << 10))..<(video.size - (100 << 10))
        let b = try h.run(["fetch", "--resource", id, "--range", "\(tail.lowerBound)-\(tail.upperBound - 1)", "--priority", "maximum", "--json"])
        XCTAssertEqual(b.status, 0, b.stdout + b.stderr)
        XCTAssertTrue(a.isRunning, "B did not wait for A's whole fetch")
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(b.stdout.utf8)) as? [String: Any], b.stdout)
        XCTAssertEqual(shown["complete"] as? Bool, false)
        XCTAssertTrue((shown["path"] as? String)?.hasSuffix("_partial") == true, b.stdout)
        XCTAssertTrue(try heldRanges(h, id).contains(tail), "B's range is held")
        XCTAssertEqual(a.wait(timeout: 120), 0, a.stdout + a.stderr)
        XCTAssertTrue(a.stdout.contains("\"complete\":true"), a.stdout)
        try assertEveryPartOnce(cloud, h, video)
        let info = try cloud.fileInfo(video.id)
        let path = try XCTUnwrap(try MediaBox(basePath: h.root + "/account-0/postbox/media", readOnly: true).resourceData(MediaResourceId(id))?.path)
        XCTAssertEqual(SHA256.hash(try Data(contentsOf: URL(fileURLWithPath: path))).hexString, info.sha256)

        // A: a prefix of more parts than a file has in flight at once (8), so A is still running
        // when its first parts land. B: ranges A never wanted, which A fetches for it before it
        // lets go.
        let otherId = "telegram-cloud-document-\(other.dcId)-\(other.id)"
        XCTAssertGreaterThan(other.size, 3 << 20, "a second video with room for a prefix of two rounds of parts")
        let prefixEnd = min(Int64(2 << 20), other.size / 2)
        let a2 = try startFetch(h, otherId, ["--range", "0-\(prefixEnd - 1)"])
        let beyond = (other.size / 2)..<other.size
        let b2 = try h.run(["fetch", "--resource", otherId, "--range", "\(beyond.lowerBound)-\(beyond.upperBound - 1)", "--json"])
        XCTAssertEqual(b2.status, 0, b2.stdout + b2.stderr)
        XCTAssertEqual(a2.wait(timeout: 120), 0, a2.stdout + a2.stderr)
        XCTAssertTrue(try heldRanges(h, otherId).contains(beyond))
        try assertEveryPartOnce(cloud, h, other)

        // A whole fetch completes it from what is there: still every part once.
        let whole = try h.run(["fetch", "--resource", otherId])
        XCTAssertEqual(whole.status, 0, whole.stdout + whole.stderr)
        XCTAssertTrue(whole.stdout.contains(" complete ranges 0-\(other.size - 1)"), whole.stdout)
        try assertEveryPartOnce(cloud, h, other)
        XCTAssertEqual(try cloud.filePartCounters(other.id).bytes, other.size)
    }

    func testUnknownResourceAndBadRangeAreUsageErrors() throws {
        let cloud = try startCloudd(["--seed", "52", "--dcs", "1", "--peers", "2", "--messages-per-peer", "4"])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: 4)
        let unknown = try h.run(["fetch", "--resource", "telegram-cloud-document-1-1"])
        XCTAssertEqual(unknown.status, 64, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("no stored media"), unknown.stderr)
        let bad = try h.run(["fetch", "--resource", "x", "--range", "9-3"])
        XCTAssertEqual(bad.status, 64, bad.stderr)
        let priority = try h.run(["fetch", "--resource", "x", "--priority", "urgent"])
        XCTAssertEqual(priority.status, 64, priority.stderr)
    }
}
