import CloudProtocol
import Foundation
import Postbox
import TestSupport
import XCTest

/// `jobrun enqueue-upload` + `jobrun run upload-queue` as real processes against a real `cloudd`:
/// SIGKILL at random points of a 200 MB upload, two processes draining one queue, bad inputs.
final class UploadQueueIntegrationTests: XCTestCase {
    func testSIGKILLAtRandomPointsEveryItemSentExactlyOnceAndAckedPartsNotResent() throws {
        let h = JobrunHarness()
        let cloud = try UploadCloudd(uploadDirectory: h.dir.file("cloudd"))
        defer { cloud.stop() }
        try h.configure(cloud)
        try h.writeUploadJob("upload-queue")
        let peer = try cloud.peers()[1]
        let source = h.dir.file("big.bin")
        try makeUploadTestFile(source, size: 200_000_000)

        let trials = Int(ProcessInfo.processInfo.environment["UPLOAD_CRASH_TRIALS"] ?? "") ?? 20
        var skippedTotal = 0, killedMidUpload = 0
        let started = Date()
        for trial in 0..<trials {
            guard case .success(let itemId) = try h.enqueue(source, peer: peer) else { return XCTFail("enqueue failed") }
            // Odd trials: kill at a random moment of start-up, at the latest when the first part
            // is acknowledged. Even trials: once a random number of the ~380 parts is
            // acknowledged. Both stay mid-upload however fast the machine: random times alone
            // mostly missed the upload once it got faster, and a fast start-up then finished it.
            let victim = try h.start(["run", "upload-queue"])
            let delay: String
            if trial % 2 == 1 {
                let seconds = Double.random(in: 0.01...0.6)
                let deadline = Date().addingTimeInterval(seconds)
                while victim.isRunning, Date() < deadline, ((try? h.acknowledgedParts(itemId).count) ?? 0) == 0 { usleep(5_000) }
                delay = String(format: "%.2f s at most", seconds)
            } else {
                let target = Int.random(in: 1...300)
                let deadline = Date().addingTimeInterval(60)
                while victim.isRunning, Date() < deadline, ((try? h.acknowledgedParts(itemId).count) ?? 0) < target { usleep(5_000) }
                delay = "\(target) acknowledged parts"
            }
            XCTAssertTrue(victim.isRunning, "trial \(trial): the run ended before it was killed (after \(delay))")
            victim.signal(SIGKILL)
            victim.wait()
            let mid = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
            let acked = try h.acknowledgedParts(itemId)
            let before = mid.fileId == 0 ? [:] : cloud.receipts(mid.fileId)
            if mid.state == .uploading, !acked.isEmpty { killedMidUpload += 1 }
            for p in acked { XCTAssertGreaterThanOrEqual(before[p] ?? 0, 1, "trial \(trial): acknowledged part \(p) is on the server") }

            let resumed = try h.run(["run", "upload-queue", "--json"])
            XCTAssertEqual(resumed.status, 0, "trial \(trial): \(resumed.stderr)")
            let counters = JobrunHarness.counters(resumed.stdout)
            // Progress ends at the item's whole size: the parts acknowledged before the kill
            // count as already in the cloud, the ones sent now as they land.
            let runId = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(resumed.stdout.utf8)) as? [String: Any])?["run"] as? String)
            let progress = h.logEvents().filter { $0["event"] as? String == "upload.progress" && $0["run"] as? String == runId }
            let last = try XCTUnwrap(progress.last, "trial \(trial): a final upload.progress event (killed after \(delay), item \(mid.state))")
            XCTAssertEqual((last["files"] as? NSNumber)?.intValue, 1, "trial \(trial): \(last)")
            XCTAssertEqual((last["files_total"] as? NSNumber)?.intValue, 1, "trial \(trial): \(last)")
            XCTAssertEqual((last["bytes"] as? NSNumber)?.intValue, 200_000_000, "trial \(trial): \(last)")
            XCTAssertEqual((last["bytes_total"] as? NSNumber)?.intValue, 200_000_000, "trial \(trial): \(last)")
            let done = try XCTUnwrap(try h.uploadItems().first { $0.id == itemId })
            XCTAssertEqual(done.state, .sent, "trial \(trial) (killed after \(delay)): \(done.failureReason ?? "")")
            XCTAssertEqual(try cloud.messageCount(peer: peer, randomId: done.randomId), 1, "trial \(trial): sent exactly once")
            if mid.state == .uploading, done.fileId == mid.fileId, mid.fileId != 0 {
                let after = cloud.receipts(mid.fileId)
                for p in acked { XCTAssertEqual(after[p], before[p], "trial \(trial): acknowledged part \(p) was sent again") }
                XCTAssertEqual(counters["parts_skipped_already_acked"] ?? -1, acked.count, "trial \(trial)")
                skippedTotal += acked.count
            }
            if let doc = done.documentId {
                XCTAssertEqual(try cloud.fileInfo(doc).sha256, done.sha256, "trial \(trial): byte-equal")
            } else if mid.state != .sent {
                XCTFail("trial \(trial): no document id recorded")
            }
        }
        // Every item of every trial: sent, once.
        let items = try h.uploadItems()
        XCTAssertEqual(items.count, trials)
        for item in items {
            XCTAssertEqual(item.state, .sent)
            XCTAssertEqual(try cloud.messageCount(peer: peer, randomId: item.randomId), 1)
        }
        XCTAssertGreaterThan(killedMidUpload, trials / 4, "enough kills landed mid-upload to prove resume")
        XCTAssertGreaterThan(skippedTotal, 0)
        print(
            "crash trials: \(trials), killed mid-upload: \(killedMidUpload), acknowledged parts skipped on resume: \(skippedTotal), \(String(format: "%.1f", Date().timeIntervalSince(started))) s"
        )
    }

    func testTwoProcessesDrainingOneQueueNeverUploadAnItemTwice() throws {
        let h = JobrunHarness()
        let cloud = try UploadCloudd(uploadDirectory: h.dir.file("cloudd"))
        defer { cloud.stop() }
        try h.configure(cloud)
        try h.writeUploadJob("upload-a")
        try h.writeUploadJob("upload-b")
        let peers = try cloud.peers()
        var ids: [Int64] = []
        for i in 0..<16 {
            let path = h.dir.file("f\(i).bin")
            try makeUploadTestFile(path, size: i % 4 == 0 ? 12_000_000 : 1_500_000 + i * 10_000)
            guard case .success(let id) = try h.enqueue(path, peer: peers[i % 3], extra: i % 5 == 0 ? ["--secret"] : []) else {
                return XCTFail("enqueue \(i) failed")
            }
            ids.append(id)
        }
        let a = try h.start(["run", "upload-a", "--json"])
        let b = try h.start(["run", "upload-b", "--json"])
        XCTAssertEqual(a.wait(timeout: 300), 0, a.stdout + a.stderr)
        XCTAssertEqual(b.wait(timeout: 300), 0, b.stdout + b.stderr)
        let sentA = JobrunHarness.counters(a.stdout)["items_sent"] ?? 0
        let sentB = JobrunHarness.counters(b.stdout)["items_sent"] ?? 0
        XCTAssertEqual(sentA + sentB, ids.count, "each item sent by exactly one of the two")

        let items = try h.uploadItems()
        for item in items {
            XCTAssertEqual(item.state, .sent, "item \(item.id): \(item.failureReason ?? "")")
            XCTAssertEqual(item.attempts, 1, "item \(item.id) attempted once")
            XCTAssertEqual(try cloud.messageCount(peer: item.peerId.rawValue, randomId: item.randomId), 1)
            let receipts = cloud.receipts(item.fileId)
            XCTAssertEqual(receipts.count, Int(item.totalParts))
            XCTAssertEqual(receipts.values.max(), 1, "item \(item.id): no part uploaded twice")
        }
        // The logs say which process uploaded what: never both.
        var uploader: [Int: Set<Int>] = [:]
        for e in h.logEvents() where e["event"] as? String == "upload.started" {
            uploader[e["item"] as? Int ?? -1, default: []].insert(e["pid"] as? Int ?? 0)
        }
        XCTAssertEqual(uploader.count, ids.count)
        XCTAssertTrue(uploader.values.allSatisfy { $0.count == 1 }, "\(uploader)")
        XCTAssertEqual(Set(uploader.values.flatMap { $0 }).count, 2, "both processes took part")
    }

    func testBadInputsAreClearErrorsOnTheirItemsAndTheRestProceeds() throws {
        let h = JobrunHarness()
        let cloud = try UploadCloudd(uploadDirectory: h.dir.file("cloudd"))
        defer { cloud.stop() }
        try h.configure(cloud)
        try h.writeUploadJob("upload-queue")
        let peer = try cloud.peers()[0]

        let good1 = h.dir.file("good1.bin"), good2 = h.dir.file("good2.bin")
        try makeUploadTestFile(good1, size: 700_000)
        try makeUploadTestFile(good2, size: 11_000_000)
        guard case .success(let g1) = try h.enqueue(good1, peer: peer) else { return XCTFail() }

        // Refused at enqueue, each with a clear message and exit 64.
        let empty = h.dir.file("empty.bin")
        _ = FileManager.default.createFile(atPath: empty, contents: nil)
        for (path, expected) in [(h.dir.file("missing.bin"), "no such file"), (empty, "empty (0 bytes)"), (h.dir.path, "directory")] {
            guard case .failure(let f) = try h.enqueue(path, peer: peer) else { XCTFail("\(path) was queued"); continue }
            XCTAssertEqual(f.status, 64)
            XCTAssertTrue(f.stderr.contains(expected), f.stderr)
        }
        // Failing on their items when the job runs.
        let unknownPeer = h.dir.file("peer.bin")
        try makeUploadTestFile(unknownPeer, size: 5000)
        guard case .success(let badPeer) = try h.enqueue(unknownPeer, peer: 4_242_424) else { return XCTFail() }
        let changing = h.dir.file("changing.bin")
        try makeUploadTestFile(changing, size: 300_000)
        guard case .success(let changed) = try h.enqueue(changing, peer: peer, extra: ["--staging", "link"]) else { return XCTFail() }
        let fh = try FileHandle(forWritingTo: URL(fileURLWithPath: changing))
        try fh.seek(toOffset: 5)
        try fh.write(contentsOf: Data("changed".utf8))
        try fh.close()
        let vanishing = h.dir.file("vanishing.bin")
        try makeUploadTestFile(vanishing, size: 4000)
        guard case .success(let gone) = try h.enqueue(vanishing, peer: peer) else { return XCTFail() }
        let staged = try XCTUnwrap(try h.uploadItems().first { $0.id == gone }).stagedPath
        try FileManager.default.removeItem(atPath: staged)
        try FileManager.default.removeItem(atPath: vanishing)
        guard case .success(let g2) = try h.enqueue(good2, peer: peer, extra: ["--secret", "--caption", "last"]) else { return XCTFail() }
        try FileManager.default.removeItem(atPath: good2)  // the source may vanish once queued

        let dry = try h.run(["run", "upload-queue", "--json", "--dry-run"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertEqual(JobrunHarness.counters(dry.stdout)["items_waiting"], 5, dry.stdout)
        let r = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let counters = JobrunHarness.counters(r.stdout)
        XCTAssertEqual(counters["items_sent"], 2)
        XCTAssertEqual(counters["items_failed"], 3)
        XCTAssertEqual(counters["items_remaining"], 0, "sent and failed items are not counted as remaining")
        let items = Dictionary(uniqueKeysWithValues: try h.uploadItems().map { ($0.id, $0) })
        XCTAssertEqual(items[g1]?.state, .sent)
        XCTAssertEqual(items[g2]?.state, .sent)
        XCTAssertEqual(items[badPeer]?.state, .failed)
        XCTAssertTrue(items[badPeer]?.failureReason?.contains("peer 4242424 does not exist") == true, items[badPeer]?.failureReason ?? "")
        XCTAssertEqual(items[changed]?.state, .failed)
        XCTAssertTrue(items[changed]?.failureReason?.contains("changed while queued") == true, items[changed]?.failureReason ?? "")
        XCTAssertEqual(items[gone]?.state, .failed)
        XCTAssertTrue(items[gone]?.failureReason?.contains("staged file") == true, items[gone]?.failureReason ?? "")
        for id in [badPeer, changed, gone] { XCTAssertEqual(items[id]?.attempts, 1, "permanent failures are not retried") }
        // No secret in any log line.
        let logs = h.allLogText()
        let material = try XCTUnwrap(items[g2]?.secretKey, "a secret item keeps its key material")
        XCTAssertFalse(logs.contains(material.key.hexString))
        XCTAssertFalse(logs.contains(material.iv.hexString))
        // A second run has nothing to do.
        let again = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(JobrunHarness.counters(again.stdout)["item_attempts"], 0)
    }
}

/// Limits and outages: bandwidth and request-rate limits slow the run down; an unreachable
/// cloud leaves items queued (attempts unspent) with exit 69, and the next run sends them.
final class UploadQueueLimitsIntegrationTests: XCTestCase {
    func testBandwidthAndRequestRateLimitsPaceTheRun() throws {
        let h = JobrunHarness()
        let cloud = try UploadCloudd(uploadDirectory: h.dir.file("cloudd"))
        defer { cloud.stop() }
        try h.configure(cloud)
        let peer = try cloud.peers()[0]
        try h.writeUploadJob("fast")
        try h.writeUploadJob("slow-bytes", params: "  bandwidthLimit: 1MiB")
        try h.writeUploadJob("slow-requests", params: "  requestRate: 10")
        func duration(_ job: String, size: Int = 20 * 131_072) throws -> Double {
            let path = h.dir.file("\(job).bin")
            try makeUploadTestFile(path, size: size)
            guard case .success = try h.enqueue(path, peer: peer) else { XCTFail("enqueue"); return 0 }
            let started = Date()
            let r = try h.run(["run", job, "--json"])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(JobrunHarness.counters(r.stdout)["items_sent"], 1, r.stdout)
            return Date().timeIntervalSince(started)
        }
        let fast = try duration("fast")
        let bytes = try duration("slow-bytes")
        // 20 parts of the size the protocol has every upload use.
        let requests = try duration("slow-requests", size: 20 * UploadPartRules.preferredPartSize(fileSize: 0))
        XCTAssertGreaterThan(bytes, 2.2, "2.6 MB at 1 MiB/s")
        XCTAssertGreaterThan(requests, 1.9, "20 parts + send at 10 requests/s")
        XCTAssertLessThan(fast, bytes - 1)
        print("upload run: unlimited \(fmt2(fast)) s, bandwidthLimit 1MiB \(fmt2(bytes)) s, requestRate 10 \(fmt2(requests)) s")
    }

    func testUnreachableCloudKeepsItemsQueuedThenTheNextRunSendsThem() throws {
        let h = JobrunHarness()
        try FileManager.default.createDirectory(atPath: h.root + "/account-0", withIntermediateDirectories: true)
        // Nothing listens on port 9 of loopback (discard; not started here).
        try "datacenters:\n  1: http://127.0.0.1:9\nretry:\n  maxAttempts: 2\n  baseDelay: 0.05\n  maxDelay: 0.1\n"
            .write(toFile: h.root + "/account-0/config.yaml", atomically: true, encoding: .utf8)
        try h.writeUploadJob("upload-queue")
        var ids: [Int64] = []
        for i in 0..<3 {
            let path = h.dir.file("u\(i).bin")
            try makeUploadTestFile(path, size: 50_000)
            guard case .success(let id) = try h.enqueue(path, peer: 1000001) else { return XCTFail("enqueue") }
            ids.append(id)
        }
        let down = try h.run(["run", "upload-queue"])
        XCTAssertEqual(down.status, 69, "cloud unavailable: \(down.stderr)")
        XCTAssertTrue(down.stderr.contains("unreachable"), down.stderr)
        XCTAssertTrue(down.stderr.contains("3 items stay queued"), down.stderr)
        for item in try h.uploadItems() {
            XCTAssertEqual(item.state, .queued, "an outage fails nothing")
            XCTAssertEqual(item.attempts, 0, "an outage spends no attempt")
            XCTAssertTrue(item.leaseHolder.isEmpty)
        }
        XCTAssertTrue(try h.uploadItems().contains { $0.notBefore > 0 && ($0.failureReason ?? "").contains("unavailable") })

        let cloud = try UploadCloudd(uploadDirectory: h.dir.file("cloudd"))
        defer { cloud.stop() }
        try h.configure(cloud)
        let up = try h.run(["run", "upload-queue", "--json"])
        XCTAssertEqual(up.status, 0, up.stderr)
        XCTAssertEqual(JobrunHarness.counters(up.stdout)["items_sent"], 3, up.stdout)
        for item in try h.uploadItems() {
            XCTAssertEqual(item.state, .sent)
            XCTAssertEqual(try cloud.messageCount(peer: 1000001, randomId: item.randomId), 1)
        }
    }
}

private func fmt2(_ x: Double) -> String { String(format: "%.2f", x) }
