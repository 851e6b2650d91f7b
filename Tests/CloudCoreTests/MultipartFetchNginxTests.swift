import CloudCore
import CloudCrypto
import Foundation
import MediaBox
import TestSupport
import XCTest

/// The plain-URL resource against a real nginx on loopback: Range requests, size from
/// `Content-Range`, resume of an interrupted download. Skips where nginx is not installed.
final class MultipartFetchNginxTests: XCTestCase {
    func testPlainURLFromNginxWithRangeAndResume() async throws {
        let dir = TemporaryDirectory(prefix: "fetch-nginx")
        let root = dir.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var bytes = Data(count: 3 << 20 + 1234)
        bytes.withUnsafeMutableBytes { p in for i in 0..<p.count { p[i] = UInt8(truncatingIfNeeded: i &* 7919 ^ (i >> 9)) } }
        try bytes.write(to: root.appendingPathComponent("file.bin"))
        let expected = SHA256.hash(bytes).hexString
        let nginx = try NginxServer.start(serving: root)
        defer { nginx.stop() }

        let transport = try CurlTransport()
        var c = MultipartFetchConfiguration(datacenters: [:])
        c.plainPartSize = 512 << 10
        let fetch = MultipartFetch(transport: transport, configuration: c)
        let resource = try XCTUnwrap(HTTPURLMediaResource(url: nginx.url("file.bin")))

        // Interrupted after two parts: the partial holds them (two 512 KiB parts, or one and
        // the 1,234-byte tail).
        let interrupting = InterruptingFetcher(inner: fetch, parts: 2)
        let first = try MediaBox(basePath: dir.file("m1"), fetcher: interrupting)
        do { _ = try await first.fetch(resource, info: MediaResourceStorageInfo()); XCTFail("interrupted") } catch is InterruptingFetcher.Interrupted {}
        let stored = FetchFixture.storedRanges(first, resource.id).reduce(Int64(0)) { $0 + Int64($1.count) }
        XCTAssertEqual(stored, interrupting.passedBytes)
        XCTAssertGreaterThan(stored, 512 << 10)

        // Resumed in the same directory: complete and byte-equal.
        let second = try MediaBox(basePath: dir.file("m1"), fetcher: fetch)
        let data = try await second.fetch(resource, info: MediaResourceStorageInfo())
        XCTAssertTrue(data.complete)
        XCTAssertEqual(data.size, Int64(bytes.count))
        XCTAssertEqual(try SHA256.hash(contentsOfFile: data.path).hexString, expected)

        // A missing file is a clear error, nothing stored.
        let missing = try XCTUnwrap(HTTPURLMediaResource(url: nginx.url("nope.bin")))
        do {
            _ = try await second.fetch(missing, info: MediaResourceStorageInfo())
            XCTFail("404 must fail")
        } catch let e as MultipartFetchError {
            guard case .server(_, _, let status) = e else { return XCTFail("\(e)") }
            XCTAssertEqual(status, 404)
        }
        XCTAssertNil(second.resourceData(missing.id).flatMap { $0.complete ? $0 : nil })
    }
}
