import Foundation
import TestSupport
import XCTest

/// The tests' temp folders do not outlive the test process: XCTest on Linux releases no test
/// case (nor the fixtures it holds) before the process exits, so `TemporaryDirectory` removes
/// what is still there when it does.
final class TemporaryDirectoryTests: XCTestCase {
    func testFoldersStillHeldWhenTheProcessExitsAreRemoved() throws {
        let result = try ChildProcess.run(try Products.builtExecutable("jobrun-testkit"), ["leave-temporary-directories"], timeout: 60)
        XCTAssertEqual(result.status, 0, result.stderr)
        let kept = result.stdout.split(separator: "\n").compactMap { $0.hasPrefix("kept ") ? String($0.dropFirst(5)) : nil }
        XCTAssertEqual(kept.count, 2, "the child made both folders: \(result.stdout)")
        XCTAssertTrue(kept.allSatisfy { $0.hasPrefix(FileManager.default.temporaryDirectory.path) }, "\(kept)")
        for path in kept { XCTAssertFalse(FileManager.default.fileExists(atPath: path), "\(path) outlived its process") }
    }

    func testAReleasedDirectoryIsRemovedAtOnce() throws {
        var directory: TemporaryDirectory? = TemporaryDirectory(prefix: "released")
        let path = try XCTUnwrap(directory).path
        try Data("bytes".utf8).write(to: URL(fileURLWithPath: try XCTUnwrap(directory).file("inside")))
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        directory = nil
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }
}
