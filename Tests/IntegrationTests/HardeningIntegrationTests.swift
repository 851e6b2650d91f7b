import Foundation
import Postbox
import TestSupport
import XCTest

/// Defects of the built binary that a hostile or unlucky data root used to trigger, each checked
/// with the real `jobrun` as an operator would meet it: the exit code, and a message that names
/// the path and the reason, never a raw Foundation error domain.
final class HardeningIntegrationTests: XCTestCase {
    /// A relative symbolic link used to be staged as the link itself, dangling inside the uploads
    /// directory; now the file it points to is staged, and survives the link and its target.
    func testEnqueueingASymbolicLinkStagesTheFileItPointsTo() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        let account = h.root + "/account-0/postbox/db"
        try FileManager.default.createDirectory(atPath: account, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: h.root)
        let postbox = try Postbox(directory: account, key: h.storeKey)
        try postbox.transactionSync { try $0.peers.set(Peer(id: PeerId(1001), category: .contact, title: "c")) }

        let source = h.dir.file("src")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try bytes.write(to: URL(fileURLWithPath: source + "/photo.jpg"))
        try FileManager.default.createSymbolicLink(atPath: source + "/link.jpg", withDestinationPath: "photo.jpg")

        let r = try h.run(["enqueue-upload", source + "/link.jpg", "--peer", "1001", "--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let answer = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let staged = try XCTUnwrap(answer?["staged"] as? String)
        try FileManager.default.removeItem(atPath: source)

        var st = stat()
        XCTAssertEqual(lstat(staged, &st), 0, "the staged copy is gone with its source: \(staged)")
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG, "staged as a link, not as the file")
        XCTAssertEqual(FileManager.default.contents(atPath: staged), bytes)
    }

    /// `prefetch-chat-media` for an account with no `config.yaml` used to exit 0 and create stores
    /// for it; like every kind that talks to the cloud it now refuses before opening anything.
    func testACloudKindForAnAccountWithoutConfigExits78AndCreatesNothing() throws {
        let h = JobrunHarness()
        try h.writeJob(
            "prefetch",
            """
            name: prefetch
            kind: prefetch-chat-media
            accounts: [5]
            params:
              budget: 10MiB
            """)
        let r = try h.run(["run", "prefetch"])
        XCTAssertEqual(r.status, 78, r.stdout + r.stderr)
        XCTAssertTrue(r.stderr.contains("config.yaml"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: h.root + "/account-5/postbox"), "stores were created for an unconfigured account")
    }

    /// A root that is a plain file used to fail with exit 1 and `NSCocoaErrorDomain Code=516`.
    func testARootThatIsAFileIs73AndNamesThePath() throws {
        let h = JobrunHarness(root: .plaintext)  // no root yet: a file takes its place
        try h.writeCleanupJob("cleanup")
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: h.root))
        let r = try h.run(["run", "cleanup"])
        XCTAssertEqual(r.status, 73, r.stderr)
        XCTAssertTrue(r.stderr.contains(h.root), r.stderr)
        XCTAssertFalse(r.stderr.contains("Domain"), r.stderr)
    }

    /// An account `config.yaml` that is a directory used to be reported as "error 256".
    func testAConfigThatIsADirectoryNamesThePathAndTheReason() throws {
        let h = JobrunHarness()
        try h.writeJob(
            "sync",
            """
            name: sync
            kind: sync-history
            accounts: [0]
            """)
        try FileManager.default.createDirectory(atPath: h.root + "/account-0/config.yaml", withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: h.root)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: h.root + "/account-0")
        let r = try h.run(["run", "sync"])
        XCTAssertEqual(r.status, 78, r.stderr)
        XCTAssertTrue(r.stderr.contains(h.root + "/account-0/config.yaml"), r.stderr)
        XCTAssertTrue(r.stderr.contains("directory"), r.stderr)
        XCTAssertFalse(r.stderr.contains("error 256") || r.stderr.contains("Domain"), r.stderr)
    }

    /// `status` opens the stores read-only, yet a root on a read-only file system used to exit 78:
    /// a WAL database wants its `-shm` file. A root without write bits is read as immutable.
    func testStatusReadsARootThatCannotBeWritten() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        XCTAssertEqual(try h.run(["run", "cleanup"]).status, 0)
        let directories = [h.root, h.root + "/account-0", h.root + "/account-0/postbox", h.root + "/account-0/postbox/db"]
        for d in directories { chmod(d, 0o500) }
        defer { for d in directories { chmod(d, 0o700) } }
        let r = try h.run(["status", "--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("cleanup"), r.stdout)
    }

    /// A closed store keeps its last commits in the `-wal` file. On a read-only file system
    /// `status` still reads them through the `-shm` file; without it, the store is refused with
    /// the reason rather than shown without those commits.
    func testStatusOnAReadOnlyMountReadsTheKeptWALOrSaysWhyNot() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        XCTAssertEqual(try h.run(["run", "cleanup"]).status, 0)
        let db = h.root + "/account-0/postbox/db/db.sqlite"
        var wal = stat()
        XCTAssertEqual(stat(db + "-wal", &wal), 0)
        XCTAssertGreaterThan(wal.st_size, 0, "the run's records are in the kept WAL")
        let mount = h.dir.file("read-only")
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        guard Self.shell("mount --bind '\(h.root)' '\(mount)' && mount -o remount,bind,ro '\(mount)'") else {
            _ = Self.shell("umount '\(mount)'")
            throw XCTSkip("a read-only bind mount needs CAP_SYS_ADMIN")
        }
        defer { _ = Self.shell("umount '\(mount)'") }
        func status() throws -> (status: Int32, stdout: String, stderr: String) {
            let p = try ChildProcess(h.binary, ["status", "--json", "--root", mount, "--jobs-dir", h.jobsDir], environment: [:])
            let code = p.wait(timeout: 120)
            return (code, p.stdout, p.stderr)
        }
        let read = try status()
        XCTAssertEqual(read.status, 0, read.stderr)
        XCTAssertTrue(read.stdout.contains("succeeded"), "the run recorded only in the WAL is shown: \(read.stdout)")
        XCTAssertEqual(unlink(db + "-shm"), 0)
        let refused = try status()
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("-wal file may hold commits the database file lacks"), refused.stderr)
    }

    private static func shell(_ command: String) -> Bool {
        guard let p = try? ChildProcess("/bin/sh", ["-c", command + " 2>/dev/null"], environment: [:]) else { return false }
        return p.wait(timeout: 60) == 0
    }
}

/// `status` and `stats` run by a user who cannot read the root refuse with the reason instead
/// of reporting "never run" or an empty cache.
final class UnreadableRootIntegrationTests: XCTestCase {
    func testStatusAndStatsRunByAnotherUserRefuseInsteadOfReportingNothing() throws {
        let h = JobrunHarness()
        try h.writeCleanupJob("cleanup")
        XCTAssertEqual(try h.run(["run", "cleanup"]).status, 0)
        XCTAssertEqual(try h.run(["status"]).status, 0)
        // The folders above the root may be passed through; the root (0700, root's) may not be read.
        chmod(h.dir.path, 0o711)
        for args in [["status"], ["stats"], ["status", "--json"]] {
            let p = try ChildProcess("/usr/sbin/runuser", ["-u", "nobody", "--", h.binary] + h.arguments(args))
            let status = p.wait(timeout: 120)
            XCTAssertEqual(status, 78, "\(args): \(p.stdout) \(p.stderr)")
            XCTAssertTrue(p.stderr.contains(h.root), "\(args) names the root: \(p.stderr)")
            XCTAssertFalse(p.stdout.contains("never run"), p.stdout)
        }
        // A root others may read but that belongs to another user: refused as unsafe, with why.
        chmod(h.root, 0o755)
        defer { chmod(h.root, 0o700) }
        let p = try ChildProcess("/usr/sbin/runuser", ["-u", "nobody", "--", h.binary] + h.arguments(["stats"]))
        XCTAssertEqual(p.wait(timeout: 120), 78, p.stderr)
        XCTAssertTrue(p.stderr.contains("owned by"), p.stderr)
    }
}
