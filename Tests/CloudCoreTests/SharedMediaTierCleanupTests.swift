import CloudCore
import CloudCrypto
import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// Tier cleanup against a real moto server and a real SQLite index: TTL first, then exactly the
/// least recently used until under the limit, never inside the grace window; a dry run removes
/// nothing; unindexed old objects are swept.
final class SharedMediaTierCleanupTests: XCTestCase {
    static let now: Int64 = 1_800_000_000

    func testTTLThenLeastRecentlyUsedExactlyWithGraceAndDryRun() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: moto.endpoint, name: "tier-cleanup"),
            credentials: S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey))
        try await s3.createBucket()
        let store = try Postbox(directory: dir.file("index"), key: TestRoot.storeKey)
        let tier = SharedMediaTier(client: s3, store: store, prefix: "t/", host: "host-a", scratchDirectory: dir.file("scratch"))

        // Six objects of 1000…6000 bytes; last uses: two past the TTL, three an hour apart, one
        // inside the grace window.
        let ages: [Int64] = [100 * 3600, 60 * 3600, 10 * 3600, 9 * 3600, 8 * 3600, 60]
        var entries: [SharedMediaTierEntry] = []
        let box = try MediaBox(basePath: dir.file("media"))
        for i in 0..<6 {
            let id = MediaResourceId("telegram-cloud-document-1-\(100 + i)")
            let bytes = Data((0..<(1000 * (i + 1))).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) })
            try box.store(bytes, id: id, info: MediaResourceStorageInfo())
            let reader = try XCTUnwrap(try box.openForReading(id, touch: false))
            defer { reader.close() }
            var entry = try await tier.publish(id, file: reader)
            XCTAssertEqual(entry.sha256, SHA256.hash(bytes).hexString)
            XCTAssertEqual(entry.writerHost, "host-a")
            entry.lastUsedAt = Self.now - ages[i]
            entries.append(entry)
        }
        let aged = entries
        try await store.transaction { tx in for e in aged { try tx.sharedMediaTier.set(e) } }
        try await s3.putObject("t/media/orphan", body: .data(Data("stray".utf8)))
        let cleanup = SharedMediaTierCleanup(tier: tier)

        // Dry run with a limit the grace keeps it above: lists, removes nothing.
        let dry = try await cleanup.run(.init(ttl: 50 * 3600, maxSize: 5000, grace: 600, dryRun: true, now: Self.now))
        XCTAssertEqual(dry.removed.map(\.entry.resourceId), entries[0..<5].map(\.resourceId))
        XCTAssertEqual(dry.removed.map(\.reason), [.expired, .expired, .evicted, .evicted, .evicted])
        XCTAssertEqual(dry.skippedRecent, 1, "the object used a minute ago is kept")
        XCTAssertFalse(dry.withinLimit)
        XCTAssertEqual(dry.bytes, 6000)
        let listedAfterDryRun = try await s3.listAllObjects(prefix: "t/")
        XCTAssertEqual(listedAfterDryRun.count, 7, "a dry run deletes nothing")
        let indexedAfterDryRun = try await store.read { try $0.sharedMediaTier.all() }
        XCTAssertEqual(indexedAfterDryRun.count, 6)

        // The run: expired, then the least recently used until at most 8000 bytes remain.
        let run = try await cleanup.run(.init(ttl: 50 * 3600, maxSize: 8000, grace: 600, now: Self.now))
        XCTAssertEqual(run.count(.expired), 2)
        XCTAssertEqual(run.count(.evicted), 3)
        XCTAssertEqual(run.bytesRemoved, 1000 + 2000 + 3000 + 4000 + 5000)
        XCTAssertEqual(run.failed, 0)
        XCTAssertEqual(run.orphansRemoved, 1, "the unindexed stray is swept")
        XCTAssertTrue(run.withinLimit)
        XCTAssertEqual(run.bytes, 6000)
        let left = try await s3.listAllObjects(prefix: "t/")
        XCTAssertEqual(left.map(\.key), [entries[5].objectKey])
        let indexed = try await store.read { try $0.sharedMediaTier.all() }
        XCTAssertEqual(indexed.map(\.resourceId), [entries[5].resourceId])
    }
}
