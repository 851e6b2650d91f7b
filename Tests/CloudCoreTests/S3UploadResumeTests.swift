import CloudCore
import CloudCrypto
import Foundation
import TestSupport
import XCTest

/// A multipart upload to a real moto server, SIGKILLed midway in a `jobrun-testkit s3-upload`
/// child, resumes in-process and sends only the parts the service does not hold.
final class S3UploadResumeTests: XCTestCase {
    func testKilledMultipartUploadResumesWithOnlyMissingParts() async throws {
        let testkit = try Products.builtExecutable("jobrun-testkit")
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let credentials = S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey)
        let s3 = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: moto.endpoint, name: "jobrun-resume"),
            credentials: credentials)
        try await s3.createBucket()

        let partSize: Int64 = 5 << 20
        let size = Int(partSize) * 5 + 777  // six parts, the last one short
        var content = Data(count: size)
        content.withUnsafeMutableBytes { raw in
            for i in stride(from: 0, to: size - 7, by: 8) { raw.storeBytes(of: UInt64(i) &* 0x9E37_79B9_7F4A_7C15, toByteOffset: i, as: UInt64.self) }
        }
        let file = dir.file("upload.bin")
        _ = FileManager.default.createFile(atPath: file, contents: content)
        let journal = dir.file("upload.journal")

        let child = try ChildProcess(
            testkit, ["s3-upload", moto.endpoint, "jobrun-resume", "staged/object", file, journal, String(partSize), "3"],
            environment: ["AWS_ACCESS_KEY_ID": credentials.accessKeyId, "AWS_SECRET_ACCESS_KEY": credentials.secretAccessKey])
        XCTAssertTrue(child.waitForOutput("stalled", timeout: 60), "the child sends three parts: \(child.stdout) \(child.stderr)")
        child.signal(SIGKILL)
        child.wait()
        XCTAssertFalse(child.stdout.contains("done"))

        // The journal and the service agree on what was acknowledged.
        let recorded = try unwrap(S3UploadJournal.load(try S3UploadJournal.Location(path: journal)))
        XCTAssertEqual(recorded.parts.keys.sorted(), [1, 2, 3])
        let attrs = try FileManager.default.attributesOfItem(atPath: journal)
        XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let listed = try await s3.listParts("staged/object", uploadId: recorded.uploadId)
        XCTAssertEqual(listed.map(\.partNumber), [1, 2, 3])
        XCTAssertEqual(listed.map(\.size), [partSize, partSize, partSize])
        let awaited1 = try await s3.headObject("staged/object")
        XCTAssertNil(awaited1, "no object before completion")

        let sent = SentParts()
        let upload = S3FileUpload(client: s3, partSize: partSize, multipartThreshold: partSize)
        let result = try await upload.upload(file: file, to: "staged/object", journalPath: journal) { sent.add($0) }
        XCTAssertEqual(result.partsReused, 3)
        XCTAssertEqual(result.partsSent, 3)
        XCTAssertEqual(sent.numbers.sorted(), [4, 5, 6], "only the missing parts went over the wire")
        XCTAssertEqual(result.sha256, SHA256.hash(content))
        XCTAssertEqual(result.size, Int64(size))
        XCTAssertFalse(FileManager.default.fileExists(atPath: journal), "the journal goes once the upload completes")
        // Every part's SHA-256, the three kept from the killed run included, went into the completion.
        let digests = stride(from: 0, to: size, by: Int(partSize)).map { SHA256.hash(content[$0..<min($0 + Int(partSize), size)]) }
        let info = try await s3.headObject("staged/object")
        XCTAssertEqual(compositeChecksum(info?.sha256Checksum, parts: 6), SHA256.hash(digests.reduce(Data(), +)).base64EncodedString())
        let stored = try await s3.getObject("staged/object", to: .collect(maxSize: size + 1), hashBody: true)
        XCTAssertEqual(stored.bodySHA256, SHA256.hash(content))
        let awaited2 = try await s3.listMultipartUploads().isEmpty
        XCTAssertTrue(awaited2)
    }

    func testChangedFileIsNotResumedFromStaleParts() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = try await bucket("jobrun-stale", on: moto)
        let partSize: Int64 = 5 << 20
        let file = dir.file("f")
        let journal = dir.file("j")
        var content = Data(repeating: 1, count: Int(partSize) * 2 + 10)
        _ = FileManager.default.createFile(atPath: file, contents: content)
        try await killedRun(s3, key: "k", content: content, partSize: partSize, journal: journal)
        // The file changes under the same size: part 1 must be sent again.
        content[0] = 2
        _ = FileManager.default.createFile(atPath: file, contents: content)
        let result = try await S3FileUpload(client: s3, partSize: partSize, multipartThreshold: partSize)
            .upload(file: file, to: "k", journalPath: journal)
        XCTAssertEqual(result.partsReused, 0)
        XCTAssertEqual(result.partsSent, 3)
        let awaited3 = try await s3.getObject("k", to: .collect(maxSize: content.count + 1), hashBody: true).bodySHA256
        XCTAssertEqual(awaited3, SHA256.hash(content))
    }

    /// A journal written before uploads declared SHA-256 checksums (it has no such field) is
    /// resumed without them: its upload has none, and the service would refuse part checksums.
    func testUploadStartedWithoutChecksumsResumesWithoutThem() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = try await bucket("jobrun-old-journal", on: moto)
        let partSize: Int64 = 5 << 20
        let file = dir.file("f")
        let journal = dir.file("j")
        let content = Data((0..<(Int(partSize) * 2 + 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = FileManager.default.createFile(atPath: file, contents: content)
        try await killedRun(s3, key: "k", content: content, partSize: partSize, journal: journal)
        let saved = try String(contentsOfFile: journal, encoding: .utf8)
        XCTAssertFalse(saved.contains("sha256Checksums"), "the journal reads as an older jobrun wrote it")

        let result = try await S3FileUpload(client: s3, partSize: partSize, multipartThreshold: partSize)
            .upload(file: file, to: "k", journalPath: journal)
        XCTAssertEqual(result.partsReused, 1)
        XCTAssertEqual(result.partsSent, 2)
        let info = try await s3.headObject("k")
        XCTAssertNil(info?.sha256Checksum)
        let stored = try await s3.getObject("k", to: .collect(maxSize: content.count + 1), hashBody: true).bodySHA256
        XCTAssertEqual(stored, SHA256.hash(content))
    }

    func testSmallFileIsOnePut() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = try await bucket("jobrun-small", on: moto)
        let file = dir.file("small")
        let content = Data("small file".utf8)
        _ = FileManager.default.createFile(atPath: file, contents: content)
        let result = try await S3FileUpload(client: s3).upload(file: file, to: "s", journalPath: dir.file("j"))
        XCTAssertEqual(result.partsSent, 1)
        XCTAssertEqual(result.sha256, SHA256.hash(content))
        let awaited4 = try await s3.getObject("s").body
        XCTAssertEqual(awaited4, content)
        let awaited5 = try await s3.listMultipartUploads().isEmpty
        XCTAssertTrue(awaited5)
    }
}

/// A client of bucket `name`, created on `moto`.
private func bucket(_ name: String, on moto: MotoServer) async throws -> S3Client {
    let s3 = S3Client(
        transport: try CurlTransport(), bucket: S3Bucket(endpoint: moto.endpoint, name: name),
        credentials: S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey))
    try await s3.createBucket()
    return s3
}

/// What a run killed after its first part leaves, as an older jobrun made it: an upload of
/// `key` created without checksums, part 1 of `content` sent, and the journal recording it
/// (without `sha256Checksums`).
private func killedRun(_ s3: S3Client, key: String, content: Data, partSize: Int64, journal: String) async throws {
    let id = try await s3.createMultipartUpload(key)
    let first = content.prefix(Int(partSize))
    let eTag = try await s3.uploadPart(key, uploadId: id, partNumber: 1, body: .data(first))
    try S3UploadJournal(
        key: key, uploadId: id, fileSize: Int64(content.count), partSize: partSize,
        parts: [1: .init(size: partSize, sha256: SHA256.hash(first).hexString, eTag: eTag)]
    ).save(try S3UploadJournal.Location(path: journal))
}

/// Part numbers an upload reported, from its callback.
private final class SentParts: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Int] = []
    func add(_ n: Int) {
        lock.lock()
        list.append(n)
        lock.unlock()
    }
    var numbers: [Int] {
        lock.lock()
        defer { lock.unlock() }
        return list
    }
}

/// The maintenance pass: abandoned multipart uploads aborted, unreferenced staged objects
/// removed, young or referenced ones and keys outside the prefix left alone.
final class S3StagingSweepTests: XCTestCase {
    func testSweepAbortsAbandonedUploadsAndRemovesOrphans() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: moto.endpoint, name: "jobrun-sweep"),
            credentials: S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey))
        try await s3.createBucket()
        let first = try await s3.createMultipartUpload("jobrun/staging/a")
        _ = try await s3.uploadPart("jobrun/staging/a", uploadId: first, partNumber: 1, body: .data(Data("x".utf8)))
        let second = try await s3.createMultipartUpload("jobrun/staging/b")
        let outside = try await s3.createMultipartUpload("elsewhere/c")
        try await s3.putObject("jobrun/staging/orphan", body: .data(Data(repeating: 1, count: 1000)))
        try await s3.putObject("jobrun/staging/queued", body: .data(Data(repeating: 2, count: 10)))
        try await s3.putObject("elsewhere/object", body: .data(Data("y".utf8)))
        let sweep = S3StagingSweep(client: s3, prefix: "jobrun/staging/")

        // Everything is younger than the cutoff: nothing is touched. (moto reports every upload as
        // initiated on 2010-11-10, so the cutoff for "young" lies before that.)
        let young = try await sweep.run(olderThan: Date(timeIntervalSince1970: 946_684_800), referenced: [])
        XCTAssertEqual(young, S3StagingSweep.Report(uploadsAborted: 0, objectsRemoved: 0, bytesRemoved: 0, objectsKept: 2))
        let pendingBefore = try await s3.listMultipartUploads()
        XCTAssertEqual(pendingBefore.count, 3)

        let report = try await sweep.run(
            olderThan: Date().addingTimeInterval(60), referenced: ["jobrun/staging/queued"], activeUploads: [second])
        XCTAssertEqual(report, S3StagingSweep.Report(uploadsAborted: 1, objectsRemoved: 1, bytesRemoved: 1000, objectsKept: 1))
        let pendingAfter = try await s3.listMultipartUploads()
        XCTAssertEqual(Set(pendingAfter.map(\.uploadId)), [second, outside])
        XCTAssertFalse(pendingAfter.contains { $0.uploadId == first })
        let keys = try await s3.listAllObjects().map(\.key)
        XCTAssertEqual(keys, ["elsewhere/object", "jobrun/staging/queued"])
    }
}
