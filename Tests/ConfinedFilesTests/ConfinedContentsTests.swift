import ConfinedFiles
import Foundation
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Small files read and replaced whole below a `ConfinedDirectory`: a link at the name is
/// replaced, never written through or read, and a file over the limit is refused.
final class ConfinedContentsTests: XCTestCase {
    private var base = ""

    override func setUp() {
        base = NSTemporaryDirectory() + "contents-\(UUID().uuidString)"
        mkdir(base, 0o700)
        mkdir(base + "/root", 0o700)
        _ = FileManager.default.createFile(atPath: base + "/victim", contents: Data("victim".utf8), attributes: [.posixPermissions: 0o600])
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    func testAReplaceReplacesALinkAtTheNameAndLeavesNoTemporaryFile() throws {
        let root = try ConfinedDirectory.open(path: base + "/root")
        XCTAssertEqual(symlink(base + "/victim", base + "/root/note"), 0)
        XCTAssertThrowsError(try root.readContents("note", limit: 100)) { XCTAssertEqual(($0 as? ConfinedFileError)?.path, base + "/root/note") }
        try root.replaceContents("note", with: Array("mine".utf8), mode: 0o640)
        XCTAssertEqual(try String(contentsOfFile: base + "/victim", encoding: .utf8), "victim", "never written through the link")
        var st = stat()
        XCTAssertEqual(lstat(base + "/root/note", &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG)
        XCTAssertEqual(st.st_mode & 0o777, 0o640, "the mode asked for, whatever the umask")
        XCTAssertEqual(try root.readContents("note", limit: 100), Array("mine".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: base + "/root"), ["note"], "no temporary file is left")
    }

    func testAMissingFileIsNilAndOneOverTheLimitIsRefused() throws {
        let root = try ConfinedDirectory.open(path: base + "/root")
        XCTAssertNil(try root.readContents("absent", limit: 100))
        try root.replaceContents("big", with: [UInt8](repeating: 1, count: 200_000))
        XCTAssertThrowsError(try root.readContents("big", limit: 100_000))
        XCTAssertEqual(try root.readContents("big", limit: 200_000)?.count, 200_000)
    }
}
