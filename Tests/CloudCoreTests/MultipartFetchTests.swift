import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// MultipartFetch against a real in-process cloudd over loopback, into real MediaBox directories:
/// every resource type byte-equal, migration, CDN, reupload, resume, references.
final class MultipartFetchTests: XCTestCase {
    func testEveryResourceTypeDownloadsByteEqual() async throws {
        let fx = try await FetchFixture.start { $0.dataset.storiesPerPeer = 1 }
        do {
            let box = try fx.mediaBox(fetcher: fx.fetcher())
            var kinds: Set<String> = []
            for d in try await fx.dialogs() {
                if let photo = d.peer.photo, !kinds.contains("peerPhoto") {
                    for big in [false, true] {
                        let r = CloudPeerPhotoSizeMediaResource(peerId: d.peer.id, photo: photo, big: big)
                        try await fx.fetchAndCheck(box, r, fileId: r.location.id)
                    }
                    kinds.insert("peerPhoto")
                }
                for m in try await fx.history(d.peer.id) {
                    for media in m.media {
                        let parent = MediaResourceReference.message(MessageId(peerId: PeerId(m.peerId), id: m.id))
                        if let p = media.photo, !kinds.contains("photo") {
                            for s in p.sizes {
                                try await fx.fetchAndCheck(box, CloudPhotoSizeMediaResource(photo: p, size: s, reference: parent), fileId: s.location.id)
                            }
                            // The general cloud-file form of the same location.
                            let s = p.sizes[0]
                            try await fx.fetchAndCheck(
                                box,
                                CloudFileMediaResource(location: s.location, size: s.size, fileReference: FileReference(p.fileReference), reference: parent),
                                fileId: s.location.id)
                            kinds.insert("photo")
                        }
                        if let doc = media.document, !kinds.contains(doc.kind.rawValue) {
                            try await fx.fetchAndCheck(box, CloudDocumentMediaResource(document: doc, reference: parent), fileId: doc.id)
                            kinds.insert(doc.kind.rawValue)
                        }
                        if let sf = media.secretFile, !kinds.contains("secret") {
                            let r = SecretFileMediaResource(secretFile: sf)
                            let data = try await fx.fetchAndCheck(box, r, fileId: sf.id)
                            XCTAssertEqual(data.size, sf.decryptedSize)
                            kinds.insert("secret")
                        }
                    }
                }
            }
            let sets = try await fx.api(.getAllStickers, [String: String](), as: AllStickersResponse.self).sets
            let set = try XCTUnwrap(sets.first)
            let thumb = try XCTUnwrap(CloudStickerPackThumbnailMediaResource(stickerSet: set))
            try await fx.fetchAndCheck(box, thumb, fileId: thumb.location.id)
            try await fx.fetchAndCheck(
                box, CloudDocumentMediaResource(document: set.stickers[0], reference: .stickerPack(id: set.id)), fileId: set.stickers[0].id)
            kinds.insert("stickerSetThumb")
            let wallpapers = try await fx.api(.getWallPapers, [String: String](), as: WallpapersResponse.self).wallpapers
            let wp = CloudResources.resource(of: try XCTUnwrap(wallpapers.first))
            try await fx.fetchAndCheck(box, wp, fileId: wp.fileId)
            let contact = try unwrap(try await fx.dialogs().first { $0.peer.kind == .contact })
            let stories = try await fx.api(.getPeerStories, GetPeerStoriesRequest(peerId: contact.peer.id), as: StoriesResponse.self).stories
            for r in CloudResources.resources(of: try XCTUnwrap(stories.first)) {
                let fileId: Int64
                if let p = r as? CloudPhotoSizeMediaResource { fileId = p.location.id } else { fileId = (r as! CloudDocumentMediaResource).fileId }
                try await fx.fetchAndCheck(box, r, fileId: fileId)
            }
            for kind in ["photo", "peerPhoto", "secret", "file", "video", "voice", "stickerSetThumb"] {
                XCTAssertTrue(kinds.contains(kind), "no \(kind) downloaded")
            }
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testFollowsFileMigrate() async throws {
        let fx = try await FetchFixture.start()
        do {
            let doc = try unwrap(try await fx.allMessages().compactMap { $0.media.first?.document }.first { $0.size > 300_000 })
            // A location naming the wrong DC: the server answers FILE_MIGRATE_<right dc>.
            var location = doc.location
            location.dcId = doc.dcId % 3 + 1
            let r = CloudFileMediaResource(location: location, size: doc.size, fileReference: FileReference(doc.fileReference), reference: .standalone)
            let box = try fx.mediaBox(fetcher: fx.fetcher())
            try await fx.fetchAndCheck(box, r, fileId: doc.id)
            XCTAssertGreaterThanOrEqual(fx.server.counters().errors["FILE_MIGRATE_\(doc.dcId)"] ?? 0, 1)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testCdnRedirectDecryptsAndChecksHashes() async throws {
        let fx = try await FetchFixture.start {
            $0.cdnFraction = 1
            $0.cdnReuploadFraction = 0
            $0.dataset.maxMediaSize = 10 << 20
            $0.faults.corruptRate = 0.2
        }
        do {
            let docs = try await fx.allMessages().compactMap { $0.media.first?.document }.sorted { $0.size > $1.size }
            let box = try fx.mediaBox(fetcher: fx.fetcher())
            var checked = 0
            for doc in docs.prefix(4) {
                let info = try XCTUnwrap(try fx.server.fileInfo(id: doc.id))
                XCTAssertTrue(info.cdn)
                try await fx.fetchAndCheck(box, CloudDocumentMediaResource(document: doc, reference: .standalone), fileId: doc.id)
                checked += 1
            }
            XCTAssertEqual(checked, 4)
            let c = fx.server.counters()
            XCTAssertGreaterThan(c.methods["upload.getCdnFile"] ?? 0, 0)
            if docs[0].size > 8 << 20 {
                XCTAssertGreaterThan(c.methods["upload.getCdnFileHashes"] ?? 0, 0, "a file over 8 MiB needs more hashes")
            }
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testCdnReuploadThenRetry() async throws {
        let fx = try await FetchFixture.start {
            $0.cdnFraction = 1
            $0.cdnReuploadFraction = 1
        }
        do {
            let doc = try unwrap(try await fx.allMessages().compactMap { $0.media.first?.document }.max { $0.size < $1.size })
            XCTAssertEqual(try fx.server.fileInfo(id: doc.id)?.cdnNeedsReupload, true)
            let box = try fx.mediaBox(fetcher: fx.fetcher())
            try await fx.fetchAndCheck(box, CloudDocumentMediaResource(document: doc, reference: .standalone), fileId: doc.id)
            let c = fx.server.counters()
            XCTAssertGreaterThanOrEqual(c.errors["FILE_REUPLOAD_NEEDED"] ?? 0, 1)
            XCTAssertEqual(c.methods["upload.reuploadCdnFile"] ?? 0, 1, "one reupload shared by the parts in flight")
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testCdnThroughCloudClientForHashesAndReupload() async throws {
        let fx = try await FetchFixture.start {
            $0.cdnFraction = 1
            $0.cdnReuploadFraction = 1
            $0.dataset.maxMediaSize = 10 << 20
        }
        do {
            let client = try CloudClient(config: CloudAccountConfig(datacenters: fx.datacenters), transport: fx.transport)
            let fetch = MultipartFetch(client: client) { $0.retry.baseDelay = 0.01 }
            let doc = try unwrap(try await fx.allMessages().compactMap { $0.media.first?.document }.max { $0.size < $1.size })
            let box = try fx.mediaBox(fetcher: fetch)
            try await fx.fetchAndCheck(box, CloudDocumentMediaResource(document: doc, reference: .standalone), fileId: doc.id)
            let c = fx.server.counters()
            XCTAssertEqual(c.methods["upload.reuploadCdnFile"] ?? 0, 1)
            if doc.size > 8 << 20 { XCTAssertGreaterThan(c.methods["upload.getCdnFileHashes"] ?? 0, 0) }
            XCTAssertGreaterThan(client.stats.requests, 0, "hash calls went through the client")
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testInterruptedDownloadResumesWithOnlyMissingParts() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [12 << 20 + 777] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
            let fetch = fx.fetcher { $0.maxPartsPerFile = 4 }
            let interrupting = InterruptingFetcher(inner: fetch, parts: 5)
            let first = try fx.mediaBox(fetcher: interrupting)
            do {
                _ = try await first.fetch(resource, info: MediaResourceStorageInfo())
                XCTFail("the interrupted fetch should fail")
            } catch is InterruptingFetcher.Interrupted {}
            let stored = FetchFixture.storedRanges(first, resource.id)
            let storedBytes = stored.reduce(Int64(0)) { $0 + Int64($1.count) }
            // Five parts written before the interruption: 1 MiB ones, and perhaps the 777-byte tail.
            XCTAssertEqual(storedBytes, interrupting.passedBytes)
            XCTAssertGreaterThanOrEqual(storedBytes, 4 << 20 + 777)
            XCTAssertNil(first.resourceData(resource.id).flatMap { $0.complete ? $0 : nil })

            try await FetchFixture.settle()
            fx.server.resetCounters()
            let second = try fx.mediaBox(fetcher: fetch)
            try await fx.fetchAndCheck(second, resource, fileId: doc.id)
            let parts = fx.server.partCounters(fileId: doc.id)
            XCTAssertEqual(parts.bytes, doc.size - storedBytes, "only the missing bytes were transferred")
            for (offsetText, n) in parts.offsets {
                let offset = try XCTUnwrap(Int64(offsetText))
                XCTAssertEqual(n, 1, "part \(offset) fetched once")
                XCTAssertFalse(stored.contains { $0.contains(offset) }, "part \(offset) was already stored")
            }
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testFaultsEveryFileIntact() async throws {
        let fx = try await FetchFixture.start { $0.cdnFraction = 0.3 }
        do {
            let messages = try await fx.allMessages()
            let resources = messages.flatMap { CloudResources.resources(of: $0) }
            XCTAssertGreaterThan(resources.count, 40)
            let box = try fx.mediaBox(fetcher: fx.fetcher())
            // 5% errors, 1% corrupt parts, 3% dropped connections, some FLOOD_WAITs.
            fx.server.updateFaults(FaultConfig(errorRate: 0.05, floodWaitRate: 0.02, floodWaitSeconds: 1, corruptRate: 0.01, dropRate: 0.03))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for r in resources {
                    group.addTask { _ = try await box.fetch(r, info: MediaResourceStorageInfo()) }
                }
                try await group.waitForAll()
            }
            for r in resources {
                let data = try XCTUnwrap(box.resourceData(r.id))
                XCTAssertTrue(data.complete)
                XCTAssertEqual(try SHA256.hash(contentsOfFile: data.path).hexString, try fx.expectedSHA(Self.fileId(r)), "\(r.id)")
            }
            let errors = fx.server.counters().errors
            XCTAssertGreaterThan(errors["INTERNAL"] ?? 0, 0, "errors were injected")
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testCorruptPartsAreRefetchedNeverStored() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [3 << 20 + 5] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            fx.server.updateFaults(FaultConfig(corruptRate: 0.5))
            let box = try fx.mediaBox(fetcher: fx.fetcher { $0.retry.maxAttempts = 30 })
            try await fx.fetchAndCheck(box, CloudDocumentMediaResource(document: doc, reference: .standalone), fileId: doc.id)
            let parts = fx.server.partCounters(fileId: doc.id)
            XCTAssertGreaterThan(parts.parts, 24, "corrupt 128 KiB parts were fetched again")
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testBadAnswersAreRefusedAndNothingStored() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [1 << 20] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            let resource = CloudDocumentMediaResource(document: doc, reference: .standalone)
            for kind in [MalformedAnswer.shortPart, .oversizePart] {
                fx.server.updateFaults(FaultConfig(malformed: kind, malformedRate: 1))
                let box = try fx.mediaBox("bad-\(kind.rawValue)", fetcher: fx.fetcher { $0.retry.maxAttempts = 3 })
                do {
                    _ = try await box.fetch(resource, info: MediaResourceStorageInfo())
                    XCTFail("\(kind) must not be accepted")
                } catch let e as MultipartFetchError {
                    guard case .badAnswer(let id, _, let reason) = e else { return XCTFail("\(kind): \(e)") }
                    XCTAssertEqual(id, resource.id)
                    XCTAssertFalse(reason.isEmpty)
                }
                XCTAssertNil(box.resourceData(resource.id).flatMap { $0.complete ? $0 : nil })
                XCTAssertEqual(FetchFixture.storedRanges(box, resource.id), [], "\(kind): nothing stored")
            }
            // Some bad answers among good ones: retried, the file intact.
            fx.server.updateFaults(FaultConfig(malformed: .shortPart, malformedRate: 0.3))
            let box = try fx.mediaBox("mixed", fetcher: fx.fetcher())
            try await fx.fetchAndCheck(box, resource, fileId: doc.id)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testExpiredReferenceSurfacesTypedErrorWithoutRevalidator() async throws {
        let fx = try await FetchFixture.start()
        do {
            let m = try unwrap(try await fx.allMessages().first { $0.media.first?.document != nil })
            let doc = m.media[0].document!
            let parent = MediaResourceReference.message(MessageId(peerId: PeerId(m.peerId), id: m.id))
            let resource = CloudDocumentMediaResource(document: doc, reference: parent)
            fx.server.expireReferences()
            let box = try fx.mediaBox(fetcher: fx.fetcher())
            do {
                _ = try await box.fetch(resource, info: MediaResourceStorageInfo())
                XCTFail("expected FILE_REFERENCE_EXPIRED")
            } catch let e as MultipartFetchError {
                XCTAssertEqual(e, .fileReferenceExpired(resourceId: resource.id, parent: parent))
                let text = "\(e) \(resource) \(String(reflecting: resource)) \(resource.fileReference)"
                XCTAssertFalse(text.contains(doc.fileReference.base64EncodedString()), "the reference leaked: \(text)")
                XCTAssertFalse(text.contains(doc.fileReference.hexString))
            }
            // With a revalidator: one refresh for the parts in flight, then the file.
            let revalidator = MessageRevalidator(fx)
            fx.server.resetCounters()
            let box2 = try fx.mediaBox("revalidated", fetcher: fx.fetcher(revalidator: revalidator))
            try await fx.fetchAndCheck(box2, resource, fileId: doc.id)
            XCTAssertEqual(revalidator.calls, 1)
            XCTAssertEqual(fx.server.counters().parents[parent.parentEntity!.key], 1)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testManyFilesSharedLimitAndBatchStore() async throws {
        let fx = try await FetchFixture.start {
            $0.dataset.bulkFiles = [BulkFileSpec(count: 150, minSize: 10_000, maxSize: 200_000)]; $0.dataset.bigFiles = [2 << 20]
        }
        do {
            let docs = try await fx.benchDocuments()
            XCTAssertEqual(docs.count, 151)
            let fetch = fx.fetcher { $0.maxConcurrentParts = 8 }
            let box = try fx.mediaBox(fetcher: fetch)
            let resources = docs.map { CloudDocumentMediaResource(document: $0, reference: .standalone) }
            let report = try await fetch.fetchBatch(
                resources, into: box, info: { _ in MediaResourceStorageInfo(contentType: .file) },
                maxConcurrentFiles: 16, batchBytes: 1 << 20, batchCount: 16)
            XCTAssertEqual(report.downloaded, 151)
            for (r, doc) in zip(resources, docs) {
                let data = try XCTUnwrap(box.resourceData(r.id))
                XCTAssertTrue(data.complete)
                XCTAssertEqual(try SHA256.hash(contentsOfFile: data.path).hexString, try fx.expectedSHA(doc.id))
            }
            XCTAssertEqual(try box.stats().total.count, 151)
            // Every file of at most 256 KiB came in one request (the 2 MiB one in 128 KiB parts).
            for doc in docs where doc.size <= 256 << 10 {
                XCTAssertEqual(fx.server.partCounters(fileId: doc.id).parts, 1, "file \(doc.id) of \(doc.size) bytes")
            }
            let again = try await fetch.fetchBatch(resources, into: box, info: { _ in MediaResourceStorageInfo(contentType: .file) })
            XCTAssertEqual(again.alreadyComplete, 151)
            XCTAssertEqual(again.downloaded, 0)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    func testPlainURLFromCloudResumesWithOnlyMissingBytes() async throws {
        let fx = try await FetchFixture.start { $0.dataset.bigFiles = [5 << 20 + 3] }
        do {
            let doc = try unwrap(try await fx.benchDocuments().first)
            let url = fx.server.dcURLs[1].absoluteString + "/plain/\(doc.id)"
            let resource = try XCTUnwrap(HTTPURLMediaResource(url: url))  // size unknown: learnt from Content-Range
            let fetch = fx.fetcher()
            let interrupting = InterruptingFetcher(inner: fetch, parts: 2)
            let first = try fx.mediaBox(fetcher: interrupting)
            do { _ = try await first.fetch(resource, info: MediaResourceStorageInfo()); XCTFail("interrupted") } catch is InterruptingFetcher.Interrupted {}
            let stored = FetchFixture.storedRanges(first, resource.id).reduce(Int64(0)) { $0 + Int64($1.count) }
            // Two parts: the first and whichever answered next, a 1 MiB part or the 3-byte tail.
            XCTAssertEqual(stored, interrupting.passedBytes)
            XCTAssertGreaterThan(stored, 1 << 20)
            try await FetchFixture.settle()
            fx.server.resetCounters()
            let second = try fx.mediaBox(fetcher: fetch)
            try await fx.fetchAndCheck(second, resource, fileId: doc.id)
            XCTAssertEqual(fx.server.counters().fileBytes[String(doc.id)], doc.size - stored)
        } catch { await fx.stop(); throw error }
        await fx.stop()
    }

    static func fileId(_ r: any CloudFetchableResource) -> Int64 {
        switch r.fetchSource {
        case .cloud(let location, _, _), .secret(let location, _, _, _, _): return location.id
        case .plainURL: return -1
        }
    }
}
