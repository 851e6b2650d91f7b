import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

final class StorageBoxTests: XCTestCase {
    /// On an index in clear and on an encrypted one.
    func testTotalsAreMaintainedOnStoreTouchAndRemove() throws {
        for key in [nil, StoreKey.random()] {
            print("encrypted: \(key != nil)")
            try totalsAreMaintained(key: key)
        }
    }

    private func totalsAreMaintained(key: StoreKey?) throws {
        let tmp = TemporaryDirectory(prefix: "storagebox")
        let sb = try StorageBox(directory: tmp.path + "/storage", key: key)
        func entry(_ id: String, _ peer: Int64, _ type: MediaContentType, _ size: Int64, _ t: Int64, _ loc: MediaStorageLocation = .resources)
            -> StorageBoxEntry
        {
            StorageBoxEntry(
                id: MediaResourceId(id), info: MediaResourceStorageInfo(peerId: PeerId(peer), contentType: type, location: loc), size: size, accessTime: t)
        }
        try sb.insert([entry("a", 1, .photo, 100, 10), entry("b", 1, .video, 1000, 20), entry("c", 2, .photo, 10, 30, .shortCache)])
        var s = try sb.stats()
        XCTAssertEqual(s.total, StorageUsage(bytes: 1110, count: 3))
        XCTAssertEqual(s.byPeer[PeerId(1)], StorageUsage(bytes: 1100, count: 2))
        XCTAssertEqual(s.byContentType[.photo], StorageUsage(bytes: 110, count: 2))
        XCTAssertEqual(s.byPeerAndContentType[PeerContentType(peerId: PeerId(2), contentType: .photo)], StorageUsage(bytes: 10, count: 1))
        XCTAssertEqual(s.byTier[.shortLived], StorageUsage(bytes: 10, count: 1))
        // Replacing a row moves its contribution.
        try sb.insert(entry("a", 2, .file, 50, 40))
        s = try sb.stats()
        XCTAssertEqual(s.total, StorageUsage(bytes: 1060, count: 3))
        XCTAssertEqual(s.byPeer[PeerId(1)], StorageUsage(bytes: 1000, count: 1))
        XCTAssertEqual(s.byContentType[.photo], StorageUsage(bytes: 10, count: 1))
        // Touch reorders the LRU index without changing totals.
        try sb.touch([MediaStorageKey(location: .resources, id: MediaResourceId("b"))], at: 100)
        XCTAssertEqual(try sb.leastRecentlyUsed(after: nil, limit: 10).map(\.key.fileName), ["c", "a", "b"])
        XCTAssertEqual(try sb.stats(), s)
        try sb.remove([MediaStorageKey(location: .resources, id: MediaResourceId("b"))])
        s = try sb.stats()
        XCTAssertEqual(s.total, StorageUsage(bytes: 60, count: 2))
        XCTAssertNil(s.byPeer[PeerId(1)])
        XCTAssertNil(s.byContentType[.video])
        // Rebuilding from rows gives the same totals.
        try sb.recomputeTotals()
        XCTAssertEqual(try sb.stats(), s)
        // A read-only open (jobrun stats) sees the same.
        XCTAssertEqual(try StorageBox(directory: tmp.path + "/storage", readOnly: true, key: key).stats(), s)
    }
}
