import Foundation
import XCTest

@testable import Jobs

/// The parameter tables of docs/job-files.md are the kinds' own declarations, printed.
final class KindReferenceTests: XCTestCase {
    func testJobFilesDocumentCarriesTheGeneratedTables() throws {
        let url = TestPaths.repositoryRoot.appendingPathComponent("docs/job-files.md")
        let document = try String(contentsOf: url, encoding: .utf8)
        let expected = try XCTUnwrap(
            KindReference.replacingGenerated(in: document, with: KindReference.markdown()),
            "docs/job-files.md lacks the generated-kinds markers")
        if ProcessInfo.processInfo.environment["JOBS_REGENERATE_DOCS"] == "1", expected != document {
            try expected.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        XCTAssertEqual(document, expected, "docs/job-files.md is out of date: JOBS_REGENERATE_DOCS=1 swift test --filter KindReferenceTests")
    }

    func testEveryKindAndParameterIsInTheReference() {
        let text = KindReference.markdown()
        for kind in JobKindRegistry.shipped.kinds {
            XCTAssertTrue(text.contains("### `\(kind.name)`"), kind.name)
            for parameter in kind.parameters {
                XCTAssertTrue(text.contains("| `\(parameter.spec.name)` |"), "\(kind.name).\(parameter.spec.name)")
            }
        }
        XCTAssertTrue(text.contains("| `maxSize` | size | **required** | 0 – 1PB |"), text)
        XCTAssertTrue(text.contains("| `categoryTtl` | map {private, group, channel} → duration | {} | 1m – 3650d |"), text)
        XCTAssertTrue(text.contains("| `parentKinds` | list of: message, avatar, stickerSet, wallpaper, story | all |"), text)
        XCTAssertTrue(text.contains("| `mediaTypes` | list of: photo, video, file, voice, sticker, avatar | all |"), text)
    }
}
