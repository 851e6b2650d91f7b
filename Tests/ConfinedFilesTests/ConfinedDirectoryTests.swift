import ConfinedFiles
import Foundation
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Each way a planted object below a directory could turn a write or read elsewhere: refused,
/// with the path named, and the victim outside untouched.
final class ConfinedDirectoryTests: XCTestCase {
    private var base = ""
    private var victim = ""

    override func setUp() {
        base = NSTemporaryDirectory() + "confined-\(UUID().uuidString)"
        mkdir(base, 0o700)
        mkdir(base + "/root", 0o700)
        mkdir(base + "/outside", 0o700)
        victim = base + "/outside/victim"
        _ = FileManager.default.createFile(atPath: victim, contents: Data("victim".utf8), attributes: [.posixPermissions: 0o600])
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: base) }

    private func root() throws -> ConfinedDirectory { try ConfinedDirectory.open(path: base + "/root") }

    private func victimIntact() throws {
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "victim")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: base + "/outside"), ["victim"])
    }

    func testCreatesWritesAndReadsBelowTheDirectory() throws {
        let dir = try root().directory("a/b", create: true)
        let fd = try dir.openFile("f", .createNew)
        XCTAssertEqual(write(fd, "hi", 2), 2)
        close(fd)
        var st = stat()
        XCTAssertEqual(stat(base + "/root/a/b/f", &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(base + "/root/a", &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)
        let read = try root().openFile("a/b/f", .read)
        var buffer = [UInt8](repeating: 0, count: 8)
        XCTAssertEqual(Glibc.read(read, &buffer, 8), 2)
        close(read)
    }

    func testSymbolicLinkAtAnyComponentIsRefused() throws {
        symlink(base + "/outside", base + "/root/linked")
        symlink(victim, base + "/root/file-link")
        symlink(base + "/outside/missing", base + "/root/dangling")
        let dir = try root()
        XCTAssertThrowsError(try dir.openFile("linked/victim", .replaceContents)) { error in
            XCTAssertEqual(error as? ConfinedFileError, .symbolicLink(path: self.base + "/root/linked/victim"))
        }
        XCTAssertThrowsError(try dir.openFile("file-link", .append)) {
            XCTAssertEqual($0 as? ConfinedFileError, .symbolicLink(path: self.base + "/root/file-link"))
        }
        XCTAssertThrowsError(try dir.openFile("dangling", .readWriteCreating)) {
            XCTAssertEqual($0 as? ConfinedFileError, .symbolicLink(path: self.base + "/root/dangling"))
        }
        XCTAssertThrowsError(try dir.directory("linked", create: true)) {
            XCTAssertEqual($0 as? ConfinedFileError, .symbolicLink(path: self.base + "/root/linked"))
        }
        XCTAssertThrowsError(try dir.directory("dangling/x", create: true))
        try victimIntact()
        XCTAssertFalse(FileManager.default.fileExists(atPath: base + "/outside/missing"))
    }

    func testParentNamesAndAbsolutePathsAreRefused() throws {
        let dir = try root()
        XCTAssertThrowsError(try dir.openFile("../outside/victim", .replaceContents)) {
            XCTAssertTrue(($0 as? ConfinedFileError).map { if case .outside = $0 { return true } else { return false } } ?? false)
        }
        XCTAssertThrowsError(try dir.openFile(victim, .read))
        XCTAssertThrowsError(try dir.removeFile("../outside/victim"))
        try victimIntact()
    }

    func testFIFOIsRefusedWithoutBlocking() throws {
        mkfifo(base + "/root/pipe", 0o600)
        let started = Date()
        for access in [FileAccess.read, .append, .readWriteCreating, .replaceContents] {
            XCTAssertThrowsError(try root().openFile("pipe", access)) { error in
                XCTAssertEqual(error as? ConfinedFileError, .wrongType(path: self.base + "/root/pipe", found: .fifo, expected: .regular))
            }
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
    }

    func testHardLinkedFileIsNeverWrittenNorTruncated() throws {
        link(victim, base + "/root/lock")
        let dir = try root()
        for access in [FileAccess.readWriteCreating, .replaceContents, .append, .readWrite] {
            XCTAssertThrowsError(try dir.openFile("lock", access)) {
                XCTAssertEqual($0 as? ConfinedFileError, .hardLinked(path: self.base + "/root/lock", links: 2))
            }
        }
        try victimIntact()
        close(try dir.openFile("lock", .read))  // reading a hard-linked file harms nothing
    }

    func testWritableByOthersIsRefusedUnlessAllowed() throws {
        _ = FileManager.default.createFile(atPath: base + "/root/open", contents: Data("x".utf8))
        chmod(base + "/root/open", 0o666)
        mkdir(base + "/root/shared", 0o700)
        chmod(base + "/root/shared", 0o777)
        let dir = try root()
        XCTAssertThrowsError(try dir.openFile("open", .read)) { error in
            guard case .insecure(let path, let reason)? = error as? ConfinedFileError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, self.base + "/root/open")
            XCTAssertTrue(reason.contains("its group and others"), reason)
        }
        XCTAssertThrowsError(try dir.directory("shared"))
        let lenient = try ConfinedDirectory.open(path: base + "/root", policy: ConfinementPolicy(allowInsecure: true))
        close(try lenient.openFile("open", .read))
        _ = try lenient.directory("shared")
    }

    func testReplaceContentsTruncatesAfterTheChecks() throws {
        _ = FileManager.default.createFile(atPath: base + "/root/f", contents: Data("0123456789".utf8), attributes: [.posixPermissions: 0o600])
        let fd = try root().openFile("f", .replaceContents)
        XCTAssertEqual(write(fd, "ab", 2), 2)
        close(fd)
        XCTAssertEqual(try String(contentsOfFile: base + "/root/f", encoding: .utf8), "ab")
    }

    func testRemoveAndRenameStayBelowTheDirectory() throws {
        symlink(victim, base + "/root/link")
        let dir = try root()
        XCTAssertTrue(try dir.removeFile("link"))  // the link goes, never its target
        try victimIntact()
        close(try dir.openFile("a", .createNew))
        try dir.rename("a", to: "b")
        XCTAssertNotNil(try dir.status("b"))
        XCTAssertNil(try dir.status("a"))
        XCTAssertEqual(dir.entries(), ["b"])
    }

    func testMessagesEscapeControlCharacters() {
        let error = ConfinedFileError.symbolicLink(path: "/r/evil\nname\u{1B}[31m")
        XCTAssertEqual(error.description.contains("\n"), false)
        XCTAssertTrue(error.description.contains("/r/evil\\nname\\e[31m"), error.description)
        XCTAssertTrue(ConfinedFileError.system(path: "/x", operation: "write", errno: ENOSPC).description.contains("ENOSPC"))
    }
}
