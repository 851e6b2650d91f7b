import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import XCTest

extension FetchFixture {
    /// The largest streamable video of the dataset.
    func largestVideo() async throws -> Document {
        let docs = try await allMessages().flatMap { $0.media.compactMap(\.document) }.filter { ($0.headerSize ?? 0) > 0 }
        return try XCTUnwrap(docs.max { $0.size < $1.size }, "the dataset has streamable videos")
    }
}

/// The cloud's streamable videos: a `moov` header at the start that can be revised, served
/// alike by `upload.getFile` and the plain Range route.
final class StreamableVideoTests: XCTestCase {
    func testServedVideoHasAMoovHeaderThatCanBeRevised() async throws {
        let f = try await FetchFixture.start()
        defer { Task { await f.stop() } }
        let doc = try await f.largestVideo()
        let header = try XCTUnwrap(doc.headerSize)
        let before = try XCTUnwrap(try f.server.servedBytes(fileId: doc.id, 0..<doc.size))
        XCTAssertEqual(Array(before[4..<8]), Array("moov".utf8))
        XCTAssertEqual(before.prefix(4).reduce(0) { $0 << 8 | Int64($1) }, header)
        let revised = try XCTUnwrap(try f.server.reviseHeader(fileId: doc.id))
        XCTAssertEqual(revised.revision, 1)
        let after = try XCTUnwrap(try f.server.servedBytes(fileId: doc.id, 0..<doc.size))
        XCTAssertNotEqual(before.prefix(Int(header)), after.prefix(Int(header)), "the header changed")
        XCTAssertEqual(before.dropFirst(Int(header)), after.dropFirst(Int(header)), "nothing after the header changed")
        XCTAssertEqual(SHA256.hash(after).hexString, revised.sha256)
        // The plain Range route serves the same bytes at every offset.
        let r = try await f.transport.send(
            HTTPRequest(
                url: f.server.dcURLs[0].absoluteString + "/plain/\(doc.id)", method: .get,
                headers: [HTTPHeader("Range", "bytes=\(header - 100)-\(header + 99)")]))
        XCTAssertEqual(r.status, 206)
        XCTAssertEqual(r.body, after.subdata(in: Int(header - 100)..<Int(header + 100)))
        XCTAssertEqual(f.server.partCounters(fileId: doc.id).offsets[String(header - 100)], 1, "plain range requests are counted by offset")
    }
}
