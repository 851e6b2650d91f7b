import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import TestSupport
import XCTest

/// Part hashes computed from start-up (`partHashesAtStart`): served from memory, equal to the
/// hash of the bytes sent, for the standard parts and for any other part a client asks for.
final class PartHashTests: XCTestCase {
    private struct Pending: Decodable { let pending: Int }

    private func waitForPartHashes(_ server: CloudServer) async throws {
        for _ in 0..<600 {
            if try await TestHTTP.adminGet(server, "part-hashes", as: Pending.self).pending == 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTFail("part hashes still pending after 30 s")
    }

    func testPrecomputedPartHashesMatchTheServedBytes() async throws {
        let server = try await TestCloud.start {
            $0.partHashesAtStart = true
            $0.dataset.bigFiles = [12 << 20, (12 << 20) + 12_345]
            $0.dataset.bulkFiles = [BulkFileSpec(count: 5, minSize: 10_000, maxSize: 300_000)]
        }
        do {
            try await waitForPartHashes(server)
            let listing = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self)
            let bench = try XCTUnwrap(listing.benchPeerId)
            let history = try await TestHTTP.api(server.dcURLs[0], .getHistory, GetHistoryRequest(peerId: bench)).decode(MessagesResponse.self)
            let docs = history.messages.compactMap { $0.media.first?.document }
            XCTAssertEqual(docs.count, 7)
            for doc in docs {
                // Standard parts (as clients download: the precomputed hashes), then odd ones.
                let dl = try await TestCloud.download(server, location: doc.location, reference: doc.fileReference, size: doc.size)
                let info = try await TestCloud.fileInfo(server, doc.id)
                XCTAssertEqual(SHA256.hash(dl.data).hexString, info.sha256)
                let odd = try await TestCloud.download(server, location: doc.location, reference: doc.fileReference, size: doc.size, partSize: 64 << 10)
                XCTAssertEqual(odd.data, dl.data)
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func testCorruptPartsStillFailTheirPrecomputedHash() async throws {
        let server = try await TestCloud.start {
            $0.partHashesAtStart = true
            $0.dataset.bigFiles = [11 << 20]
        }
        do {
            try await waitForPartHashes(server)
            let listing = try await TestHTTP.adminGet(server, "dataset", as: DatasetListing.self)
            let history = try await TestHTTP.api(server.dcURLs[0], .getHistory, GetHistoryRequest(peerId: try XCTUnwrap(listing.benchPeerId))).decode(
                MessagesResponse.self)
            let doc = try XCTUnwrap(history.messages.compactMap { $0.media.first?.document }.first)
            var faults = FaultConfig()
            faults.corruptRate = 1
            _ = try await TestHTTP.adminPost(server, "faults", faults)
            var dc = 1
            while true {
                let r = try await TestHTTP.api(
                    server.dcURLs[dc - 1], .getFile, GetFileRequest(location: doc.location, fileReference: doc.fileReference, offset: 1 << 20, limit: 1 << 20))
                if case .fileMigrate(let n) = r.errorName { dc = n; continue }
                XCTAssertEqual(r.status, 200)
                XCTAssertEqual(r.body.count, 1 << 20)
                XCTAssertNotEqual(r.headers["x-part-sha256"], SHA256.hash(r.body).hexString, "the hash is of the bytes as meant")
                break
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
