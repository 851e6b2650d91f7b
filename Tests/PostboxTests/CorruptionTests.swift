import Foundation
import Postbox
import TestSupport
import XCTest

/// A file that is not a healthy database is refused with its path, never crashed on, never
/// silently replaced.
final class CorruptionTests: XCTestCase {
    func testNonSQLiteFileIsRefusedByPath() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        let garbage = Data("this is a text file, not a database\n".utf8)
        try garbage.write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try Postbox(path: path)) { error in
            XCTAssertEqual(error as? PostboxError, .notADatabase(path: path))
            XCTAssertTrue("\(error)".contains(path))
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), garbage, "the file is left untouched")
    }

    func testDamagedDatabaseGivesAClearError() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("db.sqlite")
        do {
            let postbox = try Postbox(path: path)
            try postbox.transactionSync { tx in
                try tx.messages.add(
                    (1...5000).map { Message(id: MessageId(peerId: PeerId(1), id: Int32($0)), timestamp: Int32($0), text: String(repeating: "x", count: 100)) })
            }
            _ = try postbox.compact()  // checkpoint the WAL into the main file
        }
        // Overwrite pages in the middle of the file with garbage, keeping the header.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: 4096 * 2)
        try handle.write(contentsOf: Data(repeating: 0xAB, count: Int(size) - 4096 * 3))
        try handle.close()
        do {
            let postbox = try Postbox(path: path)
            let problems = try postbox.integrityCheck()
            XCTAssertNotEqual(problems, ["ok"], "integrity_check must report the damage")
        } catch let error as PostboxError {
            XCTAssertTrue("\(error)".contains(path), "the error names the file: \(error)")
        }
    }

    func testMissingStoreOpenedReadOnlyIsAClearError() {
        let dir = TemporaryDirectory()
        XCTAssertThrowsError(try Postbox(path: dir.file("nope.sqlite"), readOnly: true)) { error in
            XCTAssertTrue("\(error)".contains("nope.sqlite"))
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.file("nope.sqlite")), "read-only open creates nothing")
    }
}
