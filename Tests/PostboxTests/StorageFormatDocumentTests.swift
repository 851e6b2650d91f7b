import Foundation
import Postbox
import XCTest

/// `docs/storage-format.md` mirrors the code's on-disk contract: its table list names every
/// `PostboxTableId`, and its schema versions run to `Postbox.schemaVersion`, one migration each.
final class StorageFormatDocumentTests: XCTestCase {
    private func rows(of section: String) throws -> [Int32] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/storage-format.md")
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: Substring("## \(section)")) else {
            XCTFail("docs/storage-format.md has no section \(section)")
            return []
        }
        let body = lines[(start + 1)...].prefix { !$0.hasPrefix("## ") }
        return body.compactMap { line in
            guard line.hasPrefix("| ") else { return nil }
            return Int32(line.dropFirst(2).prefix { $0.isNumber })
        }
    }

    func testTheDocumentedTablesAreThePostboxTableIds() throws {
        XCTAssertEqual(try rows(of: "Tables"), PostboxTableId.allCases.map(\.rawValue))
    }

    func testTheDocumentedSchemaVersionsAreTheMigrations() throws {
        let versions = Array(Int32(1)...Postbox.schemaVersion)
        XCTAssertEqual(try rows(of: "Schema versions"), versions)
        XCTAssertEqual(PostboxMigration.all.map(\.toVersion), versions)
    }
}
