import CloudCore
import CloudCrypto
import ConfinedFiles
import Foundation
import Postbox
import TestSupport
import XCTest

/// `S3UploadStaging` against a real moto server: store, fetch by many ranged GETs into a 0600
/// file, refusal of a short object, and the sweep of objects no item refers to.
final class S3UploadStagingTests: XCTestCase {
    private func staging(_ moto: MotoServer, fetchChunk: Int64) async throws -> S3UploadStaging {
        let client = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: moto.endpoint, name: "jobrun-stage"),
            credentials: S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey),
            retryPolicy: CloudRetryPolicy(maxAttempts: 2, baseDelay: 0.01, maxDelay: 0.02))
        try await client.createBucket()
        return S3UploadStaging(
            upload: S3FileUpload(client: client, partSize: 5 << 20, multipartThreshold: 5 << 20), prefix: "jobrun/uploads/account-7/",
            fetchChunk: fetchChunk)
    }

    /// Stores the file at `path` as `UploadQueue` does: through one descriptor, with `dir` as scratch.
    private func store(_ s: S3UploadStaging, _ path: String, scratch dir: TemporaryDirectory) async throws -> StagedObject {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        return try await s.store(file: fd, path: path, scratch: try ConfinedDirectory.open(path: dir.path))
    }

    private func item(_ id: Int64, _ stored: StagedObject) -> UploadItem {
        var item = UploadItem(
            id: id, peerId: PeerId(1), stagedPath: "/elsewhere/\(id)", originalName: "a.bin", size: stored.size, sha256: stored.sha256,
            randomId: 1, enqueuedAt: 0)
        item.staging = stored.location
        return item
    }

    func testStoreThenFetchInManyRangesGivesTheSameBytesPrivately() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s = try await staging(moto, fetchChunk: 100_000)
        let bytes = Data((0..<1_234_567).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })
        let source = dir.file("private name.bin")
        try bytes.write(to: URL(fileURLWithPath: source))

        let stored = try await store(s, source, scratch: dir)
        XCTAssertEqual(stored.size, Int64(bytes.count))
        XCTAssertEqual(stored.sha256, CloudCrypto.SHA256.hash(bytes).hexString)
        let key = try unwrap(stored.location.bucketObject?.key)
        XCTAssertTrue(key.hasPrefix("jobrun/uploads/account-7/") && !key.contains("private"), key)
        XCTAssertTrue(s.holds(item(1, stored)))

        let target = dir.file("fetched")
        let folder = try ConfinedDirectory.open(path: dir.path)
        try await s.fetch(item(1, stored), to: "fetched", in: folder)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)), bytes)
        let mode = try unwrap(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o777, 0o600)
        XCTAssertFalse(FileManager.default.fileExists(atPath: target + ".fetching"))

        try await s.remove(item(1, stored))
        let gone = try await s.upload.client.headObject(key)
        XCTAssertNil(gone)
    }

    func testAShortObjectIsRefusedAndAMissingOneIsNamed() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s = try await staging(moto, fetchChunk: 1 << 20)
        let source = dir.file("a.bin")
        try Data(repeating: 9, count: 10_000).write(to: URL(fileURLWithPath: source))
        let stored = try await store(s, source, scratch: dir)
        let key = try unwrap(stored.location.bucketObject?.key)
        try await s.upload.client.putObject(key, body: .data(Data(repeating: 9, count: 9_999)))

        do {
            try await s.fetch(item(2, stored), to: "x", in: ConfinedDirectory.open(path: dir.path))
            XCTFail("a short object must be refused")
        } catch let error as MultipartUploadError {
            XCTAssertTrue(error.isPermanent)
            XCTAssertTrue(error.description.contains("9999 bytes") && error.description.contains(key), error.description)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("x")))

        try await s.upload.client.deleteObject(key)
        do {
            try await s.fetch(item(2, stored), to: "x", in: ConfinedDirectory.open(path: dir.path))
            XCTFail("a missing object must be refused")
        } catch let error as MultipartUploadError {
            guard case .stagedFileMissing = error else { return XCTFail("\(error)") }
            XCTAssertTrue(error.description.contains(key), error.description)
        }
    }

    func testSweepRemovesOnlyObjectsNoItemRefersTo() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s = try await staging(moto, fetchChunk: 1 << 20)
        let source = dir.file("a.bin")
        try Data(repeating: 1, count: 1000).write(to: URL(fileURLWithPath: source))
        let kept = try await store(s, source, scratch: dir)
        let orphan = try await store(s, source, scratch: dir)
        XCTAssertNotEqual(kept.location.bucketObject?.key, orphan.location.bucketObject?.key, "a random key per enqueue")

        try await s.sweep(keeping: [item(3, kept)], olderThan: Date().addingTimeInterval(-3600))
        let young = try await s.upload.client.listAllObjects(prefix: s.prefix)
        XCTAssertEqual(young.count, 2, "young objects are never touched")

        try await s.sweep(keeping: [item(3, kept)], olderThan: Date().addingTimeInterval(60))
        let left = try await s.upload.client.listAllObjects(prefix: s.prefix)
        XCTAssertEqual(left.map(\.key), [kept.location.bucketObject!.key])
    }

    func testAFetchNeverWritesThroughALinkPlantedAtItsNames() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s = try await staging(moto, fetchChunk: 1 << 20)
        let source = dir.file("a.bin")
        try Data(repeating: 5, count: 4_000).write(to: URL(fileURLWithPath: source))
        let stored = try await store(s, source, scratch: dir)
        let victim = dir.file("victim")
        try Data("victim".utf8).write(to: URL(fileURLWithPath: victim))
        let uploads = dir.file("uploads")
        mkdir(uploads, 0o700)
        // A link where the fetched copy is written first, then one where it is kept.
        XCTAssertEqual(symlink(victim, uploads + "/4.fetching"), 0)
        let folder = try ConfinedDirectory.open(path: uploads)
        do {
            try await s.fetch(item(4, stored), to: "4", in: folder)
            XCTFail("a link at the fetch's temporary name must be refused")
        } catch let error as MultipartUploadError {
            XCTAssertTrue(error.description.contains("symbolic link"), error.description)
        }
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "victim")
        unlink(uploads + "/4.fetching")
        XCTAssertEqual(symlink(victim, uploads + "/4"), 0)
        try await s.fetch(item(4, stored), to: "4", in: folder)
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "victim", "the link is replaced, never written through")
        var st = stat()
        XCTAssertEqual(lstat(uploads + "/4", &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG)
    }
}
