import Foundation
import Synchronization
import XCTest

@testable import Jobs

final class SupportTests: XCTestCase {
    func testLaunchEnvironmentIsTheEnvironmentTheProcessStartedWith() {
        let variables = LaunchEnvironment.variables
        for name in ["PATH", "HOME"] {
            XCTAssertEqual(variables[name], getenv(name).map { String(cString: $0) }, name)
        }
        XCTAssertFalse(variables.keys.contains { $0.isEmpty || $0.contains("=") })
        // A value may hold `=`: only the first one separates the name.
        if let entry = environ.pointee.map({ String(cString: $0) }), let equals = entry.firstIndex(of: "=") {
            XCTAssertEqual(variables[String(entry[..<equals])], String(entry[entry.index(after: equals)...]))
        }
    }

    func testExitCodesFollowSysexits() {
        XCTAssertEqual(JobExitCode.allCases.map(\.rawValue), [0, 1, 64, 66, 69, 73, 74, 75, 78])
    }

    func testDataRootResolutionAndLayout() throws {
        XCTAssertEqual(DataRoot.resolve(explicit: "/srv/a", environment: ["JOBRUN_ROOT": "/srv/b"]).path, "/srv/a")
        XCTAssertEqual(DataRoot.resolve(explicit: nil, environment: ["JOBRUN_ROOT": "/srv/b"]).path, "/srv/b")
        XCTAssertEqual(DataRoot.resolve(explicit: nil, environment: [:], currentDirectory: "/home/op").path, "/home/op/data")
        XCTAssertEqual(DataRoot.resolve(explicit: "rel", environment: [:], currentDirectory: "/home/op").path, "/home/op/rel")
        let root = DataRoot(path: "/r")
        XCTAssertEqual(root.account(3).postboxDatabase.path, "/r/account-3/postbox/db")
        XCTAssertEqual(root.account(3).media.path, "/r/account-3/postbox/media")
        XCTAssertEqual(root.account(3).config.path, "/r/account-3/config.yaml")
        XCTAssertEqual(root.accountsMetadata.path, "/r/accounts-metadata")
        XCTAssertEqual(root.logs(process: "jobrun").path, "/r/logs/jobrun-logs")
        XCTAssertEqual(root.temp(process: "jobrun").path, "/r/temp/jobrun")
        XCTAssertEqual(root.metrics.path, "/r/metrics")

        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let made = DataRoot(url: directory.appendingPathComponent("data"))
        let oldMask = umask(0o022)
        defer { umask(oldMask) }
        try made.createDirectories(accounts: [0, 1])
        for url in [made.url, made.logs, made.temp, made.metrics, made.accountsMetadata, made.account(1).media, made.account(0).postboxDatabase] {
            var info = stat()
            XCTAssertEqual(stat(url.path, &info), 0, url.path)
            XCTAssertEqual(info.st_mode & 0o777, 0o700, url.path)
        }
        try made.createDirectories()  // idempotent
    }

    func testTempBoxLifecycleAndStaleSweep() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = DataRoot(url: directory)
        let box = TempBox(root: root, process: "jobrun")
        XCTAssertTrue(box.launchID.hasPrefix("\(getpid())-"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: root.temp.path), "nothing is created before the first use")
        let scratch = try box.makePath(prefix: "part", suffix: ".bin")
        let boxDirectory = try box.directory()
        XCTAssertEqual(boxDirectory.deletingLastPathComponent().path, root.temp(process: "jobrun").path)
        XCTAssertEqual(scratch.deletingLastPathComponent(), boxDirectory)
        try Data("x".utf8).write(to: scratch)

        // A live box (lock held) is never swept, even by this process.
        XCTAssertEqual(TempBox.sweepStale(in: root.temp(process: "jobrun")), [])
        XCTAssertTrue(FileManager.default.fileExists(atPath: scratch.path))

        // A dead launch: owner file present but unlocked (the process died).
        let stale = root.temp(process: "jobrun").appendingPathComponent("99999-deadbeef")
        try FileManager.default.createDirectory(at: stale, withIntermediateDirectories: true)
        try Data("99999\n".utf8).write(to: stale.appendingPathComponent(".owner"))
        try Data("junk".utf8).write(to: stale.appendingPathComponent("junk"))
        let second = TempBox(root: root, process: "jobrun")
        XCTAssertTrue(FileManager.default.fileExists(atPath: stale.path), "a box not yet used sweeps nothing")
        _ = try second.directory()  // the first use sweeps
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale.path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: boxDirectory.path))

        box.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: boxDirectory.path))
        box.close()  // idempotent
        XCTAssertThrowsError(try box.directory(), "a closed box is not created again")
        second.close()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root.temp(process: "jobrun").path), [])
    }

    func testTempBoxesStartingTogetherNeverSweepEachOther() throws {
        // Two launches starting at the same moment (two cron jobs at one minute) each sweep the
        // other's folder while it is being created: neither may fail or lose its folder.
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = DataRoot(url: directory)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for i in 0..<300 {
                do {
                    let box = TempBox(root: root, process: "jobrun")
                    let scratch = try box.makePath()
                    if !FileManager.default.createFile(atPath: scratch.path, contents: Data("x".utf8)) {
                        failures.withLock { $0.append("worker \(worker) launch \(i): its folder was swept") }
                    }
                    box.close()
                } catch {
                    failures.withLock { $0.append("worker \(worker) launch \(i): \(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root.temp(process: "jobrun").path), [])
    }

    func testTempBoxOfAKilledProcessIsSwept() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = DataRoot(url: directory)
        let parent = root.temp(process: "jobrun")
        try DataRoot.makeDirectory(parent)
        // A child takes the owner lock with flock(1) and is killed with SIGKILL.
        guard let flockTool = TestPaths.which("flock") else { throw XCTSkip("flock(1) not installed") }
        let launch = parent.appendingPathComponent("4242-cafebabe")
        try FileManager.default.createDirectory(at: launch, withIntermediateDirectories: true)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The shell holds the lock on fd 9; its `sleep` child does not inherit it.
        child.arguments = ["-c", "exec 9>\"$0\"; \"$1\" 9; sleep 5 9>&-", launch.appendingPathComponent(".owner").path, flockTool]
        try child.run()
        var held = false
        for _ in 0..<100 {
            let fd = open(launch.appendingPathComponent(".owner").path, O_RDWR)
            if fd >= 0 {
                held = flock(fd, LOCK_EX | LOCK_NB) != 0
                close(fd)
            }
            if held { break }
            usleep(20_000)
        }
        XCTAssertTrue(held, "child should hold the lock")
        XCTAssertEqual(TempBox.sweepStale(in: parent), [], "alive: kept")
        kill(child.processIdentifier, SIGKILL)
        // Not waitUntilExit(): Foundation also waits for the orphaned `sleep`. A dead process's
        // descriptors (and its lock) are gone even before it is reaped.
        var swept: [URL] = []
        for _ in 0..<100 where swept.isEmpty {
            swept = TempBox.sweepStale(in: parent)
            if swept.isEmpty { usleep(50_000) }
        }
        XCTAssertEqual(swept.map(\.lastPathComponent), ["4242-cafebabe"])
    }
}
