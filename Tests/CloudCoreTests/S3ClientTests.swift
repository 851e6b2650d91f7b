import CloudCore
import CloudCrypto
import Foundation
import TestSupport
import XCTest

/// The S3 client against a real moto server on loopback: every call, pagination, addressing
/// styles, signature checking and errors that name the bucket but never a secret.
final class S3ClientTests: XCTestCase {
    private func client(_ moto: MotoServer, bucket: String, addressing: S3Addressing = .path, endpoint: String? = nil) throws
        -> S3Client
    {
        S3Client(
            transport: try CurlTransport(),
            bucket: S3Bucket(endpoint: endpoint ?? moto.endpoint, name: bucket, addressing: addressing),
            credentials: S3Credentials(
                accessKeyId: moto.credentials.accessKeyId, secretAccessKey: moto.credentials.secretAccessKey),
            retryPolicy: CloudRetryPolicy(maxAttempts: 2, baseDelay: 0.01, maxDelay: 0.02))
    }

    private func bytes(_ count: Int, seed: UInt8) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    func testEveryObjectCall() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = try client(moto, bucket: "jobrun-objects")
        try await s3.createBucket()
        try await s3.createBucket()  // already owned: fine

        let body = bytes(100_000, seed: 7)
        try await s3.putObject("dir/a b+c.bin", body: .data(body), sha256: SHA256.hash(body), metadata: ["origin": "test"])
        let head = try unwrap(try await s3.headObject("dir/a b+c.bin"))
        XCTAssertEqual(head.size, 100_000)
        XCTAssertEqual(head.metadata["origin"], "test")
        let awaited1 = try await s3.headObject("dir/missing")
        XCTAssertNil(awaited1)

        let whole = try await s3.getObject("dir/a b+c.bin", hashBody: true)
        XCTAssertEqual(whole.body, body)
        XCTAssertEqual(whole.bodySHA256, SHA256.hash(body))
        let range = try await s3.getObject("dir/a b+c.bin", range: HTTPRange(offset: 4096, length: 1000))
        XCTAssertEqual(range.status, 206)
        XCTAssertEqual(range.body, body.subdata(in: 4096..<5096))

        // A file region as the body, streamed from disk.
        let path = dir.file("region.bin")
        _ = FileManager.default.createFile(atPath: path, contents: body)
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        try await s3.putObject("dir/region", body: .fileRegion(fd: fd, offset: 10, length: 5000))
        let awaited2 = try await s3.getObject("dir/region").body
        XCTAssertEqual(awaited2, body.subdata(in: 10..<5010))

        let listed = try await s3.listAllObjects(prefix: "dir/")
        XCTAssertEqual(listed.map(\.key), ["dir/a b+c.bin", "dir/region"])
        XCTAssertEqual(listed.first?.size, 100_000)

        try await s3.deleteObject("dir/region")
        try await s3.deleteObject("dir/region")  // deleting a missing key succeeds
        let awaited3 = try await s3.headObject("dir/region")
        XCTAssertNil(awaited3)
        do {
            _ = try await s3.getObject("dir/region")
            XCTFail("GET of a deleted key must fail")
        } catch let error as S3Error {
            XCTAssertEqual(error.code, "NoSuchKey")
            XCTAssertTrue(error.description.contains("jobrun-objects"), error.description)
            XCTAssertTrue(error.description.contains("dir/region"), error.description)
        }
        do {
            _ = try await client(moto, bucket: "no-such-bucket").listObjects()
            XCTFail("listing a missing bucket must fail")
        } catch let error as S3Error {
            XCTAssertEqual(error.code, "NoSuchBucket")
            XCTAssertTrue(error.description.contains("no-such-bucket"), error.description)
        }
    }

    /// A body sent with its SHA-256 is stored with it as the object's S3 checksum: a single
    /// PUT keeps the digest, a multipart upload created with SHA-256 checksums keeps the SHA-256
    /// of its parts' digests (S3's composite checksum, `-<parts>` appended); without them there is none.
    func testSHA256ChecksumsAreKeptWithTheObject() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = try client(moto, bucket: "jobrun-checksums")
        try await s3.createBucket()
        let small = bytes(4321, seed: 3)
        try await s3.putObject("one", body: .data(small), sha256: SHA256.hash(small))
        let one = try await s3.headObject("one")
        XCTAssertEqual(one?.sha256Checksum, SHA256.hash(small).base64EncodedString())

        let part1 = bytes(5 << 20, seed: 4)
        let part2 = bytes(999, seed: 5)
        let (d1, d2) = (SHA256.hash(part1), SHA256.hash(part2))
        let id = try await s3.createMultipartUpload("joined", sha256Checksums: true)
        let e1 = try await s3.uploadPart("joined", uploadId: id, partNumber: 1, body: .data(part1), sha256: d1, checksum: true)
        let e2 = try await s3.uploadPart("joined", uploadId: id, partNumber: 2, body: .data(part2), sha256: d2, checksum: true)
        try await s3.completeMultipartUpload(
            "joined", uploadId: id, parts: [S3CompletedPart(partNumber: 1, eTag: e1, sha256: d1), S3CompletedPart(partNumber: 2, eTag: e2, sha256: d2)])
        let joined = try await s3.headObject("joined")
        XCTAssertEqual(compositeChecksum(joined?.sha256Checksum, parts: 2), SHA256.hash(d1 + d2).base64EncodedString())

        try await s3.putObject("plain", body: .data(small))
        let plain = try await s3.headObject("plain")
        XCTAssertNotNil(plain)
        XCTAssertNil(plain?.sha256Checksum)
    }

    func testMultipartCalls() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = try client(moto, bucket: "jobrun-multipart")
        try await s3.createBucket()
        let part1 = bytes(5 << 20, seed: 1)
        let part2 = bytes(1234, seed: 2)

        let id = try await s3.createMultipartUpload("big")
        let e1 = try await s3.uploadPart("big", uploadId: id, partNumber: 1, body: .data(part1), sha256: SHA256.hash(part1))
        let e2 = try await s3.uploadPart("big", uploadId: id, partNumber: 2, body: .data(part2), sha256: SHA256.hash(part2))
        let parts = try await s3.listParts("big", uploadId: id, pageSize: 1)  // two pages
        XCTAssertEqual(parts.map(\.partNumber), [1, 2])
        XCTAssertEqual(parts.map(\.size), [Int64(5 << 20), 1234])
        XCTAssertEqual(parts.map(\.eTag), [e1, e2])
        let awaited4 = try await s3.listMultipartUploads(prefix: "bi").map(\.uploadId)
        XCTAssertEqual(awaited4, [id])
        try await s3.completeMultipartUpload(
            "big", uploadId: id, parts: [S3CompletedPart(partNumber: 2, eTag: e2), S3CompletedPart(partNumber: 1, eTag: e1)])
        let joined = try await s3.getObject("big", hashBody: true)
        XCTAssertEqual(joined.bodySHA256, SHA256.hash(part1 + part2))
        let awaited5 = try await s3.listMultipartUploads().isEmpty
        XCTAssertTrue(awaited5)

        let abandoned = try await s3.createMultipartUpload("gone")
        _ = try await s3.uploadPart("gone", uploadId: abandoned, partNumber: 1, body: .data(part2))
        try await s3.abortMultipartUpload("gone", uploadId: abandoned)
        try await s3.abortMultipartUpload("gone", uploadId: abandoned)  // already gone: fine
        let awaited6 = try await s3.listMultipartUploads().isEmpty
        XCTAssertTrue(awaited6)
        let awaited7 = try await s3.headObject("gone")
        XCTAssertNil(awaited7)
        do {
            _ = try await s3.listParts("gone", uploadId: abandoned)
            XCTFail("an aborted upload has no parts to list")
        } catch let error as S3Error {
            XCTAssertEqual(error.code, "NoSuchUpload")
        }
    }

    func testListingPaginatesWithSmallPages() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        let s3 = try client(moto, bucket: "jobrun-pages")
        try await s3.createBucket()
        let keys = (0..<23).map { String(format: "p/%03d", $0) }
        for key in keys { try await s3.putObject(key, body: .data(Data(key.utf8))) }
        try await s3.putObject("other", body: .data(Data("x".utf8)))

        let first = try await s3.listObjects(prefix: "p/", maxKeys: 10)
        XCTAssertEqual(first.objects.count, 10)
        XCTAssertNotNil(first.nextContinuationToken)
        var pages = 0
        var token: String? = nil
        var seen: [String] = []
        repeat {
            let page = try await s3.listObjects(prefix: "p/", continuationToken: token, maxKeys: 10)
            pages += 1
            seen += page.objects.map(\.key)
            token = page.nextContinuationToken
        } while token != nil
        XCTAssertEqual(pages, 3)
        XCTAssertEqual(seen, keys)
        let awaited8 = try await s3.listAllObjects(prefix: "p/", pageSize: 4).map(\.key)
        XCTAssertEqual(awaited8, keys)
        let awaited9 = try await s3.listAllObjects().count
        XCTAssertEqual(awaited9, 24)
    }

    func testVirtualHostedAddressing() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url)
        defer { moto.stop() }
        // libcurl resolves *.localhost to loopback, so bucket.localhost reaches the server.
        let s3 = try client(moto, bucket: "jobrun-vhost", addressing: .virtualHosted, endpoint: "http://localhost:\(moto.port)")
        XCTAssertEqual(s3.bucket.url(key: "a/b c"), "http://jobrun-vhost.localhost:\(moto.port)/a/b%20c")
        try await client(moto, bucket: "jobrun-vhost").createBucket()
        try await s3.putObject("a/b c", body: .data(Data("virtual".utf8)))
        let awaited10 = try await s3.getObject("a/b c").body
        XCTAssertEqual(awaited10, Data("virtual".utf8))
        let awaited11 = try await s3.listAllObjects().map(\.key)
        XCTAssertEqual(awaited11, ["a/b c"])
        // The same object through path-style addressing: same bucket, same key.
        let awaited12 = try await client(moto, bucket: "jobrun-vhost").getObject("a/b c").body
        XCTAssertEqual(awaited12, Data("virtual".utf8))
    }

    func testSignatureIsCheckedAndErrorsNeverCarryTheSecret() async throws {
        let dir = TemporaryDirectory()
        let moto = try MotoServer.start(logDirectory: dir.url, authenticated: true)
        defer { moto.stop() }
        let good = try client(moto, bucket: "jobrun-signed")
        try await good.createBucket()
        try await good.putObject("k", body: .data(Data("signed".utf8)))
        let awaited13 = try await good.getObject("k").body
        XCTAssertEqual(awaited13, Data("signed".utf8))

        let planted = "PLANTED-SECRET-\(UUID().uuidString)"
        let badSecret = S3Client(
            transport: try CurlTransport(), bucket: good.bucket,
            credentials: S3Credentials(accessKeyId: moto.credentials.accessKeyId, secretAccessKey: planted))
        do {
            _ = try await badSecret.getObject("k")
            XCTFail("a wrong secret must be refused")
        } catch let error as S3Error {
            XCTAssertEqual(error.code, "SignatureDoesNotMatch")
            XCTAssertEqual(error.status, 403)
            XCTAssertTrue(error.description.contains("jobrun-signed"), error.description)
            XCTAssertFalse(error.description.contains(planted), "the secret leaked: \(error.description)")
            XCTAssertFalse(String(reflecting: error).contains(planted), "the secret leaked into the error's reflection")
        }
        let unknownKey = "AKIDPLANTED\(UInt32.random(in: 0...UInt32.max))"
        let badKey = S3Client(
            transport: try CurlTransport(), bucket: good.bucket,
            credentials: S3Credentials(accessKeyId: unknownKey, secretAccessKey: planted))
        do {
            try await badKey.putObject("k2", body: .data(Data("x".utf8)))
            XCTFail("an unknown key must be refused")
        } catch let error as S3Error {
            XCTAssertEqual(error.status, 403)
            XCTAssertTrue(error.description.contains("jobrun-signed"), error.description)
            XCTAssertFalse(error.description.contains(planted), error.description)
        }
        let awaited14 = try await good.headObject("k2")
        XCTAssertNil(awaited14, "nothing was stored by the refused request")
        XCTAssertFalse(moto.log.contains(planted), "the secret never travels: only signatures do")
    }

    func testCredentialsFileMustBePrivateAndNeverShowsItsValues() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("credentials")
        let planted = "PLANTED-\(UUID().uuidString)"
        try
            "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = \(planted)\n\n[other]\naws_access_key_id = B\naws_secret_access_key = C\naws_session_token = T\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        XCTAssertThrowsError(try S3Credentials.load(file: path)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains(path) && text.contains("644") && text.contains("chmod 600"), text)
            XCTAssertFalse(text.contains(planted))
        }
        chmod(path, 0o600)
        let loaded = try S3Credentials.load(file: path)
        XCTAssertEqual(loaded, S3Credentials(accessKeyId: "AKIDFILE", secretAccessKey: planted))
        XCTAssertEqual(try S3Credentials.load(file: path, profile: "other").sessionToken, "T")
        XCTAssertFalse("\(loaded)".contains(planted))
        XCTAssertFalse("\(loaded)".contains("AKIDFILE"))
        XCTAssertThrowsError(try S3Credentials.load(file: path, profile: "absent")) { error in
            XCTAssertTrue("\(error)".contains("[absent]"), "\(error)")
        }
        try "[default]\naws_access_key_id = A\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        XCTAssertThrowsError(try S3Credentials.load(file: path)) { error in
            XCTAssertTrue("\(error)".contains("aws_secret_access_key"), "\(error)")
        }

        XCTAssertNil(try S3Credentials.fromEnvironment([:]))
        XCTAssertEqual(
            try S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": "T"]),
            S3Credentials(accessKeyId: "A", secretAccessKey: "S", sessionToken: "T"))
        XCTAssertThrowsError(try S3Credentials.fromEnvironment(["AWS_SECRET_ACCESS_KEY": planted])) { error in
            XCTAssertTrue("\(error)".contains("AWS_ACCESS_KEY_ID"))
            XCTAssertFalse("\(error)".contains(planted))
        }
    }
}

/// A multipart object's composite checksum without the `-<parts>` S3 appends (moto does not);
/// nil when a suffix names another part count.
func compositeChecksum(_ value: String?, parts: Int) -> String? {
    guard let value else { return nil }
    guard let dash = value.lastIndex(of: "-") else { return value }
    return value[value.index(after: dash)...] == "\(parts)" ? String(value[..<dash]) : nil
}
