import CloudCore
import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox
import Postbox
import PostboxPostgres
import TestSupport
import XCTest

/// The shared media tier end to end: the built `jobrun` on two data roots (two hosts' local
/// state), a `cloudd` child, a moto S3 server and — for the fleet case — PostgreSQL, all started
/// by the test on loopback.
final class SharedMediaTierIntegrationTests: XCTestCase {
    static let bucket = "jobrun-tier"
    static let mediaPrefix = "jobrun/media/"
    static let cloudArguments = ["--dcs", "2", "--peers", "5", "--messages-per-peer", "12", "--seed", "31", "--cdn-fraction", "0"]

    /// The servers every test shares, and the planted secret key the hosts sign with.
    struct Servers {
        let cloud: ClouddProcess
        let moto: MotoServer
        let s3: S3Client
        let secretKey = "planted-s3-secret-\(UUID().uuidString.prefix(12))"
    }

    func startServers(logDirectory: String) async throws -> Servers {
        let cloud = try startCloudd(Self.cloudArguments)
        let moto = try MotoServer.start(logDirectory: URL(fileURLWithPath: logDirectory))
        addTeardownBlock { moto.stop() }
        let s3 = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: moto.endpoint, name: Self.bucket),
            credentials: S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey))
        try await s3.createBucket()
        return Servers(cloud: cloud, moto: moto, s3: s3)
    }

    /// A host: a data root whose `cluster.yaml` enables the tier (and, with `postgres`, shares
    /// its stores there), a config for `cloudd` and a `prefetch` job. A host `beside` another
    /// shares its key, as the hosts of one fleet do.
    func host(
        _ servers: Servers, postgres: (server: PostgresServer, database: String)? = nil, tier: String = "", beside first: JobrunHarness? = nil,
        root kind: TestRoot.Kind = TestRoot.kind
    ) throws -> JobrunHarness {
        let h = first.map { JobrunHarness(sharingKeyOf: $0) } ?? JobrunHarness(root: kind)
        try FileManager.default.createDirectory(atPath: h.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try h.configureAccount(for: servers.cloud)
        try writePrivate(
            h.root + "/s3-credentials",
            "[default]\naws_access_key_id = \(servers.moto.credentials.accessKeyId)\naws_secret_access_key = \(servers.secretKey)\n")
        try writeCluster(h, servers, postgres: postgres, tier: tier)
        try h.writePrefetchJob("  budget: 1GiB\n  concurrency: 3\n")
        return h
    }

    func writeCluster(_ h: JobrunHarness, _ servers: Servers, postgres: (server: PostgresServer, database: String)? = nil, tier: String = "")
        throws
    {
        var text = ""
        if let (server, database) = postgres {
            text += "postgres:\n  url: postgresql://\(server.user)@/\(database)?host=\(server.socketDirectory)&port=\(server.port)\n"
        }
        text += """
            objectStorage:
              endpoint: \(servers.moto.endpoint)
              bucket: \(Self.bucket)
              credentialsFile: s3-credentials
              partSize: 5MiB
              sharedMedia:
                enabled: true
            \(tier)
            """
        try writePrivate(h.root + "/cluster.yaml", text + "\n")
    }

    func writePrivate(_ path: String, _ text: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
    }

    /// The tier's index of a single host (SQLite under its root).
    func localIndex(_ h: JobrunHarness) throws -> [SharedMediaTierEntry] {
        let store = try Postbox(path: h.root + "/media-tier/db.sqlite", readOnly: true, key: h.storeKey)
        return try store.readSync { try $0.sharedMediaTier.all() }
    }

    func objects(_ servers: Servers) async throws -> [S3ListedObject] {
        try await servers.s3.listAllObjects(prefix: Self.mediaPrefix)
    }

    /// Ids of the files `cloudd` served parts of since its counters were reset, by type.
    func servedFiles(_ cloud: ClouddProcess) throws -> (shareable: [Int64], secret: [Int64]) {
        let types = Dictionary(uniqueKeysWithValues: try cloud.dataset().files.map { ($0.id, $0.type) })
        let served = try cloud.counters().fileParts.filter { $0.value > 0 }.compactMap { Int64($0.key) }
        return (served.filter { types[$0] != .secret }.sorted(), served.filter { types[$0] == .secret }.sorted())
    }

    /// Object keys are digests under the prefix, with no metadata: no id, reference or key.
    func assertOpaqueObjects(_ servers: Servers, _ index: [SharedMediaTierEntry], secrets: [String]) async throws {
        let listed = try await objects(servers)
        XCTAssertEqual(Set(listed.map(\.key)), Set(index.map(\.objectKey)), "every object is indexed, every entry has its object")
        for object in listed {
            let digest = object.key.dropFirst(Self.mediaPrefix.count)
            XCTAssertTrue(object.key.hasPrefix(Self.mediaPrefix) && digest.count == 64 && digest.allSatisfy(\.isHexDigit), object.key)
            let head = try await servers.s3.headObject(object.key)
            XCTAssertEqual(head?.metadata, [:], "no metadata on \(object.key)")
            for secret in secrets { XCTAssertFalse(object.key.contains(secret)) }
        }
        for entry in index {
            XCTAssertFalse(entry.resourceId.hasPrefix("secret-file-"), "secret-chat files are never shared: \(entry.resourceId)")
            XCTAssertFalse(entry.objectKey.contains(entry.resourceId))
            XCTAssertEqual(listed.first { $0.key == entry.objectKey }?.size, entry.size, entry.resourceId)
            XCTAssertFalse(entry.writerHost.isEmpty)
        }
    }

    /// The planted S3 secret (and any other `secrets`) in no log, metric or output of `h`.
    func assertNoSecrets(_ h: JobrunHarness, _ secrets: [String], outputs: [String], file: StaticString = #filePath, line: UInt = #line) {
        var text = h.allLogText() + outputs.joined()
        let metrics = h.root + "/metrics"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: metrics)) ?? [] {
            text += (try? String(contentsOfFile: metrics + "/" + name, encoding: .utf8)) ?? ""
        }
        XCTAssertFalse(text.isEmpty, file: file, line: line)
        for secret in secrets where !secret.isEmpty {
            XCTAssertFalse(text.contains(secret), "a secret leaked into logs, metrics or output", file: file, line: line)
        }
    }

    // MARK: tests

    /// Two hosts sharing PostgreSQL: host A's prefetch publishes what it downloads; host B, with
    /// its own empty root, reads every shared file from the bucket — cloudd serves it no part of
    /// them — and ends with the complete, correct files.
    func testHostBReadsFromTheBucketWhatHostAPrefetched() async throws {
        let server = try PostgresServer.shared()
        let database = try server.createDatabase("tier_\(UUID().uuidString.prefix(8).lowercased())")
        let scratch = TemporaryDirectory(prefix: "tier-it")
        let servers = try await startServers(logDirectory: scratch.file("."))
        let a = try host(servers, postgres: (server, database))
        let b = try host(servers, postgres: (server, database), beside: a)
        try a.syncOnce(initialMessages: 12)

        let first = try a.run(["run", "prefetch", "--json"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let ca = JobrunHarness.counters(first.stdout)
        let published = try XCTUnwrap(ca["tier_published"], first.stdout)
        XCTAssertGreaterThan(published, 0, first.stdout)
        XCTAssertEqual(ca["tier_reads"], 0, "nothing was in the tier yet")
        XCTAssertEqual(ca["tier_publish_failed"], 0, first.stdout)
        let endpoint = PostgresEndpoint(address: .unixSocket(path: server.socketPath), username: server.user, database: database)
        let store = try Postbox(
            valueBox: try PostgresValueBox(endpoint: endpoint, schema: "jobrun_media_tier", readOnly: true, cipher: a.valueCipher), name: "jobrun_media_tier",
            readOnly: true)
        let index = try store.readSync { try $0.sharedMediaTier.all() }
        XCTAssertEqual(index.count, published, "one index row per published object")
        try await assertOpaqueObjects(servers, index, secrets: [servers.secretKey, "telegram", "secret-file"])
        let entriesA = try a.prefetchedEntries()
        let secretFiles = entriesA.filter { $0.0.resourceId.hasPrefix("secret-file-") }.count
        XCTAssertEqual(entriesA.count - secretFiles, published, "every shareable file A fetched was published")

        try servers.cloud.resetCounters()
        let second = try b.run(["run", "prefetch", "--json"])
        XCTAssertEqual(second.status, 0, second.stderr)
        let cb = JobrunHarness.counters(second.stdout)
        XCTAssertEqual(cb["tier_reads"], published, second.stdout)
        XCTAssertEqual(cb["tier_published"], 0, "nothing new to publish: \(second.stdout)")
        XCTAssertEqual(cb["tier_discarded"], 0, second.stdout)
        let served = try servedFiles(servers.cloud)
        XCTAssertEqual(served.shareable, [], "cloudd served no part of a shared file a second time")
        XCTAssertEqual(served.secret.count, secretFiles, "secret-chat files still come from the cloud")
        let entriesB = try b.prefetchedEntries()
        XCTAssertEqual(Set(entriesB.map(\.0.resourceId)), Set(entriesA.map(\.0.resourceId)))
        try b.assertIntact(entriesB, cloud: servers.cloud)
        let after = try store.readSync { try $0.sharedMediaTier.all() }
        XCTAssertEqual(after.count, index.count)
        XCTAssertTrue(zip(after, index).allSatisfy { $0.lastUsedAt >= $1.lastUsedAt }, "reads move the last use forward")

        assertNoSecrets(a, [servers.secretKey], outputs: [first.stdout, first.stderr])
        assertNoSecrets(b, [servers.secretKey], outputs: [second.stdout, second.stderr])
    }

    /// One host on SQLite whose cache was lost: the tier refills it, except one object
    /// overwritten in the bucket, which is refetched from the cloud (its bad bytes never stored)
    /// and published again. File references never reach object keys or logs.
    func testACorruptedObjectIsRefetchedFromTheCloudOnSQLite() async throws {
        let scratch = TemporaryDirectory(prefix: "tier-it")
        let servers = try await startServers(logDirectory: scratch.file("."))
        let h = try host(servers)
        try h.syncOnce(initialMessages: 12)
        let first = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let published = try XCTUnwrap(JobrunHarness.counters(first.stdout)["tier_published"], first.stdout)
        let index = try localIndex(h)
        XCTAssertEqual(index.count, published)
        XCTAssertGreaterThan(index.count, 1)
        try await assertOpaqueObjects(servers, index, secrets: [servers.secretKey, "telegram"])
        let references = try h.accountPostbox().readSync { tx in
            try index.compactMap { try tx.mediaReferences.get($0.resourceId)?.fileReference }.filter { !$0.isEmpty }
        }
        XCTAssertFalse(references.isEmpty, "the shared files have file references")

        // Same size, other bytes, under the largest entry's key.
        let victim = try XCTUnwrap(index.max { $0.size < $1.size })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(h.prefetchedEntries().first { $0.0.resourceId == victim.resourceId }?.1)))
        bytes[bytes.count / 2] ^= 0xFF
        try await servers.s3.putObject(victim.objectKey, body: .data(bytes))

        try FileManager.default.removeItem(atPath: h.account + "/postbox/media")
        try servers.cloud.resetCounters()
        let second = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(second.status, 0, second.stderr)
        let c = JobrunHarness.counters(second.stdout)
        XCTAssertEqual(c["tier_discarded"], 1, second.stdout)
        XCTAssertEqual(c["tier_reads"], published - 1, second.stdout)
        XCTAssertEqual(c["tier_published"], 1, "the good bytes are published again: \(second.stdout)")
        XCTAssertEqual(try servedFiles(servers.cloud).shareable.count, 1, "only the corrupted file came from the cloud")
        let entries = try h.prefetchedEntries()
        try h.assertIntact(entries, cloud: servers.cloud)
        let local = try XCTUnwrap(entries.first { $0.0.resourceId == victim.resourceId }?.1)
        let good = CloudCrypto.SHA256.hash(try Data(contentsOf: URL(fileURLWithPath: local))).hexString
        XCTAssertNotEqual(good, CloudCrypto.SHA256.hash(bytes).hexString, "the bad bytes were not stored")
        let republished = try XCTUnwrap(try localIndex(h).first { $0.resourceId == victim.resourceId })
        XCTAssertEqual(republished.sha256, good)
        let inBucket = try await servers.s3.getObject(victim.objectKey)
        XCTAssertEqual(CloudCrypto.SHA256.hash(inBucket.body).hexString, good, "the bucket holds the good bytes again")

        let logs = h.allLogText()
        XCTAssertTrue(logs.contains("tier.discarded"), "the mismatch is logged")
        let keys = try await objects(servers).map(\.key).joined(separator: "\n")
        for reference in references {
            for form in [reference.hexString, reference.base64EncodedString()] {
                XCTAssertFalse(logs.contains(form), "a file reference reached the logs")
                XCTAssertFalse(keys.contains(form), "a file reference reached an object key")
            }
        }
        assertNoSecrets(h, [servers.secretKey], outputs: [first.stdout, first.stderr, second.stdout, second.stderr])
    }

    /// `time-based-cleanup` trims the tier by its index: a dry run lists and deletes nothing;
    /// the run removes the objects unused past the TTL, then exactly the least recently used
    /// until the tier is under `maxSize`, and leaves the rest.
    func testCleanupRemovesExpiredThenExactlyTheLeastRecentlyUsed() async throws {
        let scratch = TemporaryDirectory(prefix: "tier-it")
        let servers = try await startServers(logDirectory: scratch.file("."))
        let h = try host(servers)
        try h.syncOnce(initialMessages: 12)
        let first = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(first.status, 0, first.stderr)
        var index = try localIndex(h).sorted { $0.resourceId < $1.resourceId }
        XCTAssertGreaterThanOrEqual(index.count, 6, "enough objects to tell the order")

        // Ages: two past the 30-day TTL, the others an hour apart (older than the 10-minute grace),
        // the newest used just now.
        let now = Int64(Date().timeIntervalSince1970)
        for i in index.indices { index[i].lastUsedAt = i < 2 ? now - 40 * 86_400 - Int64(i) : now - Int64(index.count - i) * 3_600 }
        index[index.count - 1].lastUsedAt = now
        let store = try Postbox(path: h.root + "/media-tier/db.sqlite", key: h.storeKey)
        let rewritten = index
        try store.transactionSync { tx in for e in rewritten { try tx.sharedMediaTier.set(e) } }
        let expired = Array(index[0..<2])
        let byAge = index[2...].sorted { $0.lastUsedAt < $1.lastUsedAt }
        let live = byAge.reduce(Int64(0)) { $0 + $1.size }
        // The limit is reached by removing exactly the two least recently used of the rest.
        let limit = live - byAge[0].size - byAge[1].size
        let evicted = Array(byAge[0..<2])
        try writeCluster(h, servers, tier: "    ttl: 30d\n    maxSize: \(limit)\n")
        try h.writeCleanupJob("cleanup")

        let dry = try h.run(["run", "cleanup", "--dry-run", "--json"])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        let cd = JobrunHarness.counters(dry.stdout)
        XCTAssertEqual(cd["tier_objects_expired"], 2, dry.stdout)
        XCTAssertEqual(cd["tier_objects_evicted"], 2, dry.stdout)
        for e in expired + evicted { XCTAssertTrue(dry.stdout.contains(e.resourceId), "the dry run lists \(e.resourceId)") }
        let untouched = try await objects(servers)
        XCTAssertEqual(untouched.count, index.count, "a dry run deletes nothing")
        XCTAssertEqual(try localIndex(h).count, index.count)

        let run = try h.run(["run", "cleanup", "--json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let c = JobrunHarness.counters(run.stdout)
        XCTAssertEqual(c["tier_objects_expired"], 2, run.stdout)
        XCTAssertEqual(c["tier_objects_evicted"], 2, run.stdout)
        XCTAssertEqual(c["tier_objects_removed"], 4, run.stdout)
        XCTAssertEqual(c["tier_bytes"], Int(limit), run.stdout)
        XCTAssertEqual(c["tier_failed"], 0, run.stdout)
        let gone = Set((expired + evicted).map(\.objectKey))
        let left = Set(try await objects(servers).map(\.key))
        XCTAssertEqual(left, Set(index.map(\.objectKey)).subtracting(gone), "exactly the expired and least recently used objects are gone")
        let leftIndex = try localIndex(h)
        XCTAssertEqual(Set(leftIndex.map(\.objectKey)), left)
        XCTAssertLessThanOrEqual(leftIndex.reduce(0) { $0 + $1.size }, limit, "the tier ends under its limit")
        let metrics = try String(contentsOfFile: h.root + "/metrics/jobrun_cleanup.prom", encoding: .utf8)
        XCTAssertTrue(metrics.contains("jobrun_time_based_cleanup_tier_objects_evicted{jobrun_job=\"cleanup\",kind=\"time-based-cleanup\"} 2"), metrics)
        assertNoSecrets(h, [servers.secretKey], outputs: [dry.stdout, dry.stderr, run.stdout, run.stderr])
    }

    /// On an encrypted root, what leaves the host for the bucket (the tier's published media,
    /// a staged upload, a secret chat's staged file) holds no message text and no file
    /// reference: every object, read back with another S3 client (awscli), and every object key
    /// are searched for each of them, as are the root's database files.
    func testTheBucketHoldsNoMessageTextOrFileReferenceOfAnEncryptedRoot() async throws {
        let scratch = TemporaryDirectory(prefix: "tier-it")
        let servers = try await startServers(logDirectory: scratch.file("."))
        let h = try host(servers, root: .encrypted)
        try h.syncOnce(initialMessages: 12)
        let prefetch = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(prefetch.status, 0, prefetch.stderr)
        let published = try XCTUnwrap(JobrunHarness.counters(prefetch.stdout)["tier_published"], prefetch.stdout)
        XCTAssertGreaterThan(published, 0, prefetch.stdout)
        let (texts, references) = try EncryptedRoot.secrets(try h.accountPostbox())
        XCTAssertGreaterThan(texts.count, 5)
        XCTAssertGreaterThan(references.count, 0)
        let peer = try XCTUnwrap(try h.accountPostbox().readSync { try $0.peers.all() }.first?.id.rawValue)
        let marker = "a staged upload's own words, readable in the bucket \(UUID().uuidString)"
        for (name, extra) in [("plain.txt", [String]()), ("secret.txt", ["--secret"])] {
            let file = h.dir.file(name)
            try String(repeating: marker + "\n", count: 400).write(toFile: file, atomically: true, encoding: .utf8)
            let enqueued = try h.run(["enqueue-upload", file, "--peer", String(peer)] + extra)
            XCTAssertEqual(enqueued.status, 0, enqueued.stderr)
        }

        let copy = scratch.file("bucket-read-by-awscli")
        let aws = try SystemCommand.status(
            [
                "/usr/bin/env", "AWS_ACCESS_KEY_ID=\(servers.moto.credentials.accessKeyId)",
                "AWS_SECRET_ACCESS_KEY=\(servers.moto.credentials.secretAccessKey)", "AWS_DEFAULT_REGION=us-east-1", "aws", "--endpoint-url",
                servers.moto.endpoint, "s3", "cp", "--recursive", "--only-show-errors", "s3://\(Self.bucket)", copy,
            ])
        XCTAssertEqual(aws.status, 0, aws.stderr)
        let keys = try await servers.s3.listAllObjects(prefix: "").map(\.key)
        XCTAssertEqual(keys.count, published + 2, "the tier's objects and the two staged uploads: \(keys)")
        let needles = texts.map { Data($0.utf8) } + references + references.map { Data($0.hexString.utf8) }
        XCTAssertEqual(EncryptedRoot.filesContaining(needles, under: copy), [], "message texts or file references in the bucket's objects")
        for key in keys {
            for text in texts { XCTAssertFalse(key.contains(text), "a message text in the object key \(key)") }
            for reference in references {
                XCTAssertFalse(key.contains(reference.hexString) || key.contains(reference.base64EncodedString()), "a file reference in \(key)")
            }
        }
        XCTAssertEqual(
            EncryptedRoot.filesContaining([Data(marker.utf8)], under: copy).count, 1,
            "the search reads the objects' bytes: the plain upload's words are there, the secret one's are not")
        for directory in [h.account + "/postbox/db", h.root + "/media-tier"] {
            XCTAssertEqual(EncryptedRoot.filesContaining(needles, under: directory), [], "message texts or file references in \(directory)")
        }
    }
}
