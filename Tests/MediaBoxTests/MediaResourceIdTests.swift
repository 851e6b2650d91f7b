import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

final class MediaResourceIdTests: XCTestCase {
    static let hostile: [String] = [
        "../x", "../../etc/passwd", "a/b", "/etc/passwd", "/", ".", "..", "", "...", "a\0b", "\0",
        "x/../../y", "./x", "a\\b", "~", "~root", "%2e%2e%2fx", "%", "%2F",
        String(repeating: "A", count: 10_000), String(repeating: "/..", count: 3_000),
        "a\u{FF0F}b", "\u{FF0E}\u{FF0E}\u{FF0F}x", "a\u{2215}b", "a\u{2044}b", "\u{202E}gpj.exe", "e\u{0301}", "\u{FEFF}x",
        "line\nbreak", "tab\tx", "\u{7f}", "cache", "short-cache", "storage", "x_partial", "x_partial.meta",
        "telegram-cloud-document-2-1234567890",
    ]

    func testSafeFileNamesStayInTheDirectory() throws {
        var names = Set<String>()
        for id in Self.hostile {
            let name = MediaResourceId(id).safeFileName
            XCTAssertFalse(name.isEmpty, "\(id.debugDescription)")
            XCTAssertFalse(name.contains("/"), name)
            XCTAssertFalse(name.contains("_"), name)
            XCTAssertNotEqual(name, ".")
            XCTAssertNotEqual(name, "..")
            XCTAssertFalse(name.hasPrefix("."), name)
            XCTAssertLessThanOrEqual(name.utf8.count, 200, "bounded length")
            XCTAssertTrue(name.utf8.allSatisfy { $0 >= 0x21 && $0 < 0x7f }, "only printable ASCII: \(name)")
            XCTAssertFalse(["cache", "short-cache", "storage", "cache-storage"].contains(name))
            XCTAssertTrue(MediaResourceId.isSafeFileName(name), name)
            names.insert(name)
            let paths = ResourceStorePaths(mediaDirectory: "/m", location: .resources, id: MediaResourceId(id))
            XCTAssertEqual((paths.complete as NSString).deletingLastPathComponent, "/m/" + MediaShard.name(forFileName: name), "directly in its shard")
            XCTAssertTrue(MediaShard.isShardName(MediaShard.name(forFileName: name)))
            XCTAssertEqual((paths.complete as NSString).standardizingPath, paths.complete)
            if id.utf8.count < 40 { XCTAssertEqual(MediaResourceId(safeFileName: name)?.stringRepresentation, id) }
        }
        XCTAssertEqual(names.count, Set(Self.hostile).count, "distinct ids get distinct names")
        XCTAssertEqual(MediaResourceId("telegram-cloud-document-2-1234567890").safeFileName, "telegram-cloud-document-2-1234567890")
        XCTAssertNotEqual(MediaResourceId("x_partial").safeFileName, MediaResourceId("x").safeFileName + "_partial")
    }

    /// Stores every hostile id through MediaBox and checks that only files directly inside the
    /// media directory's shard folders were created, nothing outside them.
    /// A long id keeps a 64-byte prefix and the SHA-256 of the whole id: the names already on
    /// disk depend on this exact form.
    func testLongIdsEndInTheirSHA256() {
        let id = String(repeating: "a", count: 200)
        XCTAssertEqual(
            MediaResourceId(id).safeFileName,
            String(repeating: "a", count: 64) + "~c2a908d98f5df987ade41b5fce213067efbcc21ef2240212a41e54b5e7c28ae5")
    }

    func testHostileIdsNeverEscapeOnDisk() throws {
        let tmp = TemporaryDirectory(prefix: "mediabox-ids")
        let outside = tmp.path + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let media = tmp.path + "/account-1/postbox/media"
        let box = try MediaBox(basePath: media)
        for (i, id) in Self.hostile.enumerated() {
            try box.store(Data("v\(i)".utf8), id: MediaResourceId(id), info: MediaResourceStorageInfo(contentType: .file))
            let reader = try XCTUnwrap(box.openForReading(MediaResourceId(id)))
            XCTAssertEqual(try reader.readAll(), Data("v\(i)".utf8))
            reader.close()
        }
        for (i, id) in Self.hostile.enumerated() {
            try box.store(Data("w\(i)".utf8), id: MediaResourceId(id), info: MediaResourceStorageInfo(location: .shortCache))
        }
        let top = try FileManager.default.contentsOfDirectory(atPath: media).filter { !["cache", "short-cache", "storage"].contains($0) }
        XCTAssertTrue(Set(top).isSubset(of: MediaShard.names), "only shard folders beside the subdirectories: \(top)")
        XCTAssertEqual(Set(try MediaShard.storedFileNames(in: media)), Set(Self.hostile.map { MediaResourceId($0).safeFileName }))
        let subdirectories = try FileManager.default.subpathsOfDirectory(atPath: media).filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: media + "/" + path, isDirectory: &isDirectory) && isDirectory.boolValue
        }
        let allowed = Set(
            ["cache", "short-cache", "storage"] + MediaShard.names + ["cache", "short-cache"].flatMap { d in MediaShard.names.map { d + "/" + $0 } })
        XCTAssertTrue(Set(subdirectories).isSubset(of: allowed), "no id made a directory of its own: \(subdirectories)")
        XCTAssertEqual(try MediaShard.storedFileNames(in: media + "/short-cache").count, Self.hostile.count)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: outside), [])
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: tmp.path)), ["outside", "account-1"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp.path + "/account-1/postbox"), ["media"])
        XCTAssertEqual(try box.stats().total.count, Int64(Self.hostile.count * 2))
        var st = stat()
        XCTAssertEqual(stat(media, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)
        XCTAssertEqual(stat(try XCTUnwrap(MediaShard.path(in: media, storedFile: MediaResourceId("a/b").safeFileName)), &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
    }
}
