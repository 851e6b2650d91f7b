import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// A media directory with resources of known sizes, owners and access times.
struct CacheFixture {
    let tmp: TemporaryDirectory
    let box: MediaBox
    var media: String { box.basePath }

    init(_ name: String) throws {
        tmp = TemporaryDirectory(prefix: "mediabox-\(name)")
        box = try MediaBox(basePath: tmp.path + "/account-1/postbox/media", options: MediaBox.Options(completionSync: .none))
    }

    /// Stores `id` with `size` pattern bytes and sets its access time.
    func add(
        _ id: String, size: Int, accessTime: Int64, peer: Int64 = 1, peerClass: PeerStorageClass? = .privateChats,
        type: MediaContentType = .photo, location: MediaStorageLocation = .resources
    ) throws {
        let info = MediaResourceStorageInfo(peerId: PeerId(peer), peerClass: peerClass, contentType: type, location: location)
        try box.store(MediaTestPattern.bytes(id: id, count: size), id: MediaResourceId(id), info: info)
        try box.storageBox.setAccessTimes([(MediaStorageKey(location: location, id: MediaResourceId(id)), accessTime)])
    }

    func exists(_ id: String, _ location: MediaStorageLocation = .resources) -> Bool {
        FileManager.default.fileExists(atPath: box.paths(for: MediaResourceId(id), location: location).complete)
    }

    func cleanup(_ options: CleanupOptions) throws -> CleanupReport {
        try TimeBasedCleanup(mediaBox: box).run(options)
    }

    /// Asserts the index totals equal the files on disk, overall and by peer and content type.
    func assertTotalsMatchDisk(file: StaticString = #filePath, line: UInt = #line) throws {
        let stats = try box.stats()
        let disk = MediaBoxFixtures.fileSizes(in: media)
        XCTAssertEqual(stats.total.bytes, disk.values.reduce(0, +), "index bytes vs files", file: file, line: line)
        XCTAssertEqual(stats.total.count, Int64(disk.count), "index count vs files", file: file, line: line)
        XCTAssertEqual(MediaBoxFixtures.findByteCount(media), stats.total.bytes, "find -printf %s sum", file: file, line: line)
        var byPeer: [PeerId: StorageUsage] = [:]
        var byType: [MediaContentType: StorageUsage] = [:]
        var cursor: MediaStorageKey?
        while true {
            let rows = try box.storageBox.entries(after: cursor, limit: 500)
            if rows.isEmpty { break }
            cursor = rows.last?.key
            for r in rows {
                let rel = String(box.paths(for: r.key).complete.dropFirst(media.count + 1))
                let size = try XCTUnwrap(disk[rel], "row \(rel) has a file", file: file, line: line)
                XCTAssertEqual(size, r.size, file: file, line: line)
                byPeer[r.info.peerId, default: StorageUsage()] += StorageUsage(bytes: size, count: 1)
                byType[r.info.contentType, default: StorageUsage()] += StorageUsage(bytes: size, count: 1)
            }
        }
        XCTAssertEqual(stats.byPeer, byPeer, "per-peer totals", file: file, line: line)
        XCTAssertEqual(stats.byContentType, byType, "per-content-type totals", file: file, line: line)
        let summedBoth = stats.byPeerAndContentType.values.reduce(StorageUsage(), +)
        XCTAssertEqual(summedBoth, stats.total, file: file, line: line)
    }
}
