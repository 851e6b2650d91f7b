import Foundation
import Postbox
import XCTest

@testable import Jobs

/// The data root as a security boundary: nothing under it is deleted, truncated or written
/// through a planted symbolic link; a root or folder others may write, or another user owns,
/// is refused unless explicitly allowed; errors carry a sysexits code, the path and the reason.
final class DataRootHardeningTests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = try TestPaths.makeTempDirectory()
        unsetenv(DataRoot.allowInsecureVariable)
    }

    override func tearDownWithError() throws {
        unsetenv(DataRoot.allowInsecureVariable)
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
    }

    /// A folder outside the root holding files last modified two hours ago.
    private func outsideFolderOfOldFiles(_ name: String = "outside") throws -> URL {
        let outside = scratch.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        for file in ["a.txt", "b.txt"] {
            let url = outside.appendingPathComponent(file)
            try Data("precious \(file)".utf8).write(to: url)
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: url.path)
        }
        let nested = outside.appendingPathComponent("old-launch")
        try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: nested.path)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: outside.path)
        return outside
    }

    private func names(_ url: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
    }

    func testTempSweepNeverDeletesThroughASymlink() throws {
        let root = DataRoot(url: scratch.appendingPathComponent("root"))
        try root.createDirectories()
        let outside = try outsideFolderOfOldFiles()

        // temp/<process> itself replaced by a link: refused, nothing outside touched.
        try FileManager.default.createSymbolicLink(atPath: root.temp(process: "run").path, withDestinationPath: outside.path)
        XCTAssertThrowsError(try TempBox(root: root, process: "run").directory()) { error in
            XCTAssertEqual(error as? DataRootError, .symbolicLink(path: root.temp(process: "run").path))
            XCTAssertEqual((error as? DataRootError)?.exitCode, .config)
        }
        XCTAssertEqual(names(outside), ["a.txt", "b.txt", "old-launch"])
        XCTAssertEqual(TempBox.sweepStale(in: root.temp(process: "run")), [], "the sweep does not list a linked directory")
        XCTAssertEqual(TempBox.sweepStale(root: root), [])
        XCTAssertEqual(names(outside), ["a.txt", "b.txt", "old-launch"])

        // A link planted as a stale launch entry: the link is removed, never what it points to.
        try FileManager.default.removeItem(atPath: root.temp(process: "run").path)
        let box = TempBox(root: root, process: "run")
        _ = try box.directory()
        let planted = root.temp(process: "run").appendingPathComponent("1-deadbeef")
        try FileManager.default.createSymbolicLink(atPath: planted.path, withDestinationPath: outside.path)
        var old = [timespec(tv_sec: time(nil) - 7200, tv_nsec: 0), timespec(tv_sec: time(nil) - 7200, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, planted.path, &old, AT_SYMLINK_NOFOLLOW), 0)
        let swept = TempBox.sweepStale(in: root.temp(process: "run"))
        XCTAssertEqual(swept.map(\.lastPathComponent), ["1-deadbeef"])
        XCTAssertEqual(names(outside), ["a.txt", "b.txt", "old-launch"], "only the link went")
        box.close()
        XCTAssertEqual(names(outside), ["a.txt", "b.txt", "old-launch"])
    }

    func testLockFileLinkIsRefusedAndItsTargetKept() throws {
        let root = DataRoot(url: scratch.appendingPathComponent("root"))
        try root.createDirectories()
        try FileManager.default.createDirectory(at: root.locks, withIntermediateDirectories: true)
        let victim = scratch.appendingPathComponent("victim.txt")
        try Data("do not truncate me".utf8).write(to: victim)
        try FileManager.default.createSymbolicLink(atPath: root.locks.appendingPathComponent("cleanup.lock").path, withDestinationPath: victim.path)

        let lock = JobLock(root: root, job: "cleanup")
        XCTAssertThrowsError(try lock.acquire()) { error in
            let jobError = error as? JobError
            XCTAssertEqual(jobError?.exitCode, .config)
            XCTAssertTrue(jobError?.message.contains("symbolic link") == true, "\(error)")
        }
        XCTAssertEqual(try String(contentsOf: victim, encoding: .utf8), "do not truncate me")

        // The whole locks/ directory replaced by a link: refused too.
        try FileManager.default.removeItem(at: root.locks)
        try FileManager.default.createSymbolicLink(atPath: root.locks.path, withDestinationPath: scratch.path)
        XCTAssertThrowsError(try JobLock(root: root, job: "cleanup").acquire())
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("cleanup.lock").path))
    }

    func testMetricsAndLogsAreNeverWrittenThroughLinks() throws {
        let root = DataRoot(url: scratch.appendingPathComponent("root"))
        try root.createDirectories()
        let victim = scratch.appendingPathComponent("victim.txt")
        try Data("keep".utf8).write(to: victim)

        // A link planted as the .prom file is replaced, not written through.
        let writer = MetricsWriter(root: root)
        try FileManager.default.createSymbolicLink(atPath: writer.fileURL(job: "j").path, withDestinationPath: victim.path)
        let now = Date()
        try writer.write(RunMetrics(job: "j", kind: "time-based-cleanup", started: now, finished: now, outcome: .succeeded, counters: [:], samples: []))
        XCTAssertEqual(try String(contentsOf: victim, encoding: .utf8), "keep")
        var st = stat()
        XCTAssertEqual(lstat(writer.fileURL(job: "j").path, &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG)
        XCTAssertEqual(st.st_mode & 0o777, 0o644, "metrics files stay 0644 for the collector")

        // The metrics directory replaced by a link: refused.
        try FileManager.default.removeItem(at: root.metrics)
        try FileManager.default.createSymbolicLink(atPath: root.metrics.path, withDestinationPath: scratch.path)
        XCTAssertThrowsError(try writer.write(RunMetrics(job: "k", kind: "x", started: now, finished: now, outcome: .failed, counters: [:], samples: [])))
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("jobrun_k.prom").path))

        // The log file replaced by a link: refused; the log directory replaced by a link: refused.
        let logs = root.logs(process: "run")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: logs.appendingPathComponent("run.log").path, withDestinationPath: victim.path)
        XCTAssertThrowsError(try LogSink(root: root, process: "run", console: .off)) { error in
            XCTAssertEqual(error as? DataRootError, .symbolicLink(path: logs.appendingPathComponent("run.log").path))
        }
        try FileManager.default.removeItem(at: logs)
        try FileManager.default.createSymbolicLink(atPath: logs.path, withDestinationPath: scratch.path)
        XCTAssertThrowsError(try LogSink(root: root, process: "run", console: .off))
        XCTAssertEqual(try String(contentsOf: victim, encoding: .utf8), "keep")
        XCTAssertFalse(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("run.log").path))
    }

    func testRootOrAccountFolderOthersMayWriteOrAnotherUserOwnsIsRefused() throws {
        let root = DataRoot(url: scratch.appendingPathComponent("root"))
        try root.createDirectories(accounts: [0])

        chmod(root.path, 0o770)
        XCTAssertThrowsError(try root.createDirectories()) { error in
            guard case .insecure(let path, let reason)? = error as? DataRootError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, root.path)
            XCTAssertTrue(reason.contains("writable by its group") && reason.contains("0770"), reason)
            XCTAssertEqual((error as? DataRootError)?.exitCode, .config)
            XCTAssertTrue("\(error)".contains(DataRoot.allowInsecureVariable), "the message names the override")
        }
        chmod(root.path, 0o700)
        try root.createDirectories()

        let account = root.account(0).directory.path
        chmod(account, 0o757)
        XCTAssertThrowsError(try root.account(0).createDirectories()) { error in
            XCTAssertTrue("\(error)".contains("writable by others"), "\(error)")
        }
        chmod(account, 0o700)
        if geteuid() == 0 {
            // Owned by another user (nobody): refused.
            XCTAssertEqual(chown(account, 65_534, 65_534), 0)
            XCTAssertThrowsError(try root.account(0).createDirectories()) { error in
                XCTAssertTrue("\(error)".contains("owned by") && "\(error)".contains("65534"), "\(error)")
            }
            setenv(DataRoot.allowInsecureVariable, "1", 1)
            XCTAssertNoThrow(try root.account(0).createDirectories(), "the documented override accepts it")
            unsetenv(DataRoot.allowInsecureVariable)
            XCTAssertEqual(chown(account, 0, 0), 0)
        }
        chmod(root.path, 0o777)
        setenv(DataRoot.allowInsecureVariable, "1", 1)
        XCTAssertNoThrow(try root.createDirectories())
        unsetenv(DataRoot.allowInsecureVariable)
        chmod(root.path, 0o700)

        // Links stay refused even with the override.
        setenv(DataRoot.allowInsecureVariable, "1", 1)
        try FileManager.default.removeItem(at: root.metrics)
        try FileManager.default.createSymbolicLink(atPath: root.metrics.path, withDestinationPath: scratch.path)
        XCTAssertThrowsError(try root.createDirectories())
    }

    func testRootThatIsAFileNamesThePathAndMapsTo73() throws {
        let file = scratch.appendingPathComponent("root")
        try Data("x".utf8).write(to: file)
        XCTAssertThrowsError(try DataRoot(url: file).createDirectories()) { error in
            XCTAssertEqual(error as? DataRootError, .notADirectory(path: file.path))
            let failure = StorageFailure.jobError(error, doing: "cannot use the data root")
            XCTAssertEqual(failure.exitCode, .cannotCreate)
            XCTAssertTrue(failure.message.contains(file.path), failure.message)
            XCTAssertFalse(failure.message.contains("NSCocoaErrorDomain"), failure.message)
        }
    }

    func testStorageFailuresGetSysexitsCodesAndNoFoundationDomains() {
        let cocoa = CocoaError(.fileWriteFileExists, userInfo: [NSFilePathErrorKey: "/srv/root"])
        let (code, message) = StorageFailure.classify(cocoa)
        XCTAssertEqual(code, .cannotCreate)
        XCTAssertTrue(message.contains("/srv/root"), message)
        XCTAssertFalse(message.contains("NSCocoaErrorDomain") || message.contains("Code="), message)

        let full = StorageFailure.classify(DataRootError.cannotCreate(path: "/srv/root/logs", errno: ENOSPC, holder: nil))
        XCTAssertEqual(full.0, .ioError)
        XCTAssertTrue(full.1.contains("/srv/root/logs") && full.1.contains("No space left on device (ENOSPC)"), full.1)
        XCTAssertEqual(StorageFailure.classify(POSIXError(.ENOSPC)).0, .ioError)
        XCTAssertEqual(StorageFailure.classify(POSIXError(.EROFS)).0, .cannotCreate)
        XCTAssertEqual(StorageFailure.classify(PostboxError.sqlite(path: "/db", code: 13, message: "database or disk is full")).0, .ioError)
        XCTAssertEqual(StorageFailure.classify(PostboxError.busy(path: "/db")).0, .temporary)
        XCTAssertEqual(StorageFailure.classify(PostboxError.sqlite(path: "/db", code: 14, message: "unable to open database file")).0, .cannotCreate)
        XCTAssertEqual(DataRootError.cannotCreate(path: "/r", errno: EROFS, holder: "/r is owned by root (uid 0) with mode 0700").exitCode, .cannotCreate)
        let described = DataRootError.cannotCreate(path: "/r/logs", errno: EROFS, holder: "/r is owned by root (uid 0) with mode 0700").description
        XCTAssertTrue(described.contains("/r/logs") && described.contains("Read-only file system") && described.contains("mode 0700"), described)
    }

    func testALockKeepsARunsPendingOutcomeInItsAllocatedBytes() throws {
        let root = DataRoot(url: scratch.appendingPathComponent("root"))
        try root.createDirectories()
        let lock = JobLock(root: root, job: "j")
        XCTAssertTrue(try lock.acquire())
        var st = stat()
        XCTAssertEqual(stat(lock.path.path, &st), 0)
        XCTAssertEqual(Int(st.st_size), JobLock.fileSize, "allocated when taken")
        XCTAssertEqual(lock.holderPid, getpid())
        let pending = JobLock.PendingOutcome(
            runId: "abc123", outcome: .failed, exitCode: 74, startedAtMs: 1000, endedAtMs: 2000,
            attempts: 2, message: "disk full\twith\ttabs\nand lines")
        XCTAssertTrue(lock.recordPendingOutcome(pending))
        lock.release()
        XCTAssertNil(lock.holderPid, "released: no holder")

        let next = JobLock(root: root, job: "j")
        XCTAssertTrue(try next.acquire())
        var expected = pending
        expected.message = "disk full with tabs and lines"
        XCTAssertEqual(next.pendingOutcome(), expected)
        next.clearPendingOutcome()
        XCTAssertNil(next.pendingOutcome())
        XCTAssertEqual(stat(lock.path.path, &st), 0)
        XCTAssertEqual(Int(st.st_size), JobLock.fileSize)
        next.release()

        // A lock that is not held never clears its holder's pid.
        let holder = JobLock(root: root, job: "k")
        XCTAssertTrue(try holder.acquire())
        let other = JobLock(root: root, job: "k")
        XCTAssertFalse(try other.acquire())
        other.release()
        XCTAssertEqual(holder.holderPid, getpid())
        holder.release()
    }
}
