import Foundation
import Postbox
import TestSupport
import XCTest

@testable import Jobs

#if canImport(Glibc)
    import Glibc
#endif

/// The layout of the data root, listed by `DataRoot.layout()`, and checked by `verifyLayout()`
/// before a run opens anything: every path of a populated root, in turn replaced by a link to a
/// victim outside, a dangling link, a FIFO, a hard link to a victim, or given an unsafe mode, is
/// refused with exit 78 naming it, and the victim is left as it was. A path added to the layout
/// is covered here without a new case.
final class DataRootLayoutTests: XCTestCase {
    private var scratch: URL!
    private var victimFolder: URL { scratch.appendingPathComponent("victim") }
    private var victimFile: URL { victimFolder.appendingPathComponent("file") }

    override func setUpWithError() throws {
        scratch = try TestPaths.makeTempDirectory()
        unsetenv(DataRoot.allowInsecureVariable)
        try FileManager.default.createDirectory(at: victimFolder, withIntermediateDirectories: true)
        try Data("victim".utf8).write(to: victimFile)
        chmod(victimFile.path, 0o600)
    }

    override func tearDownWithError() throws {
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
    }

    private func assertVictimIntact(_ context: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: victimFolder.path), ["file"], context, file: file, line: line)
        XCTAssertEqual(try String(contentsOf: victimFile, encoding: .utf8), "victim", context, file: file, line: line)
    }

    /// A root with something at every kind of path: account stores, shards, a staged upload,
    /// logs, metrics, a lock, a pause and an alert.
    private func populatedRoot() throws -> DataRoot {
        let root = DataRoot(url: scratch.appendingPathComponent("root"))
        try root.createDirectories(accounts: [0])
        let account = root.account(0)
        func file(_ url: URL, _ text: String = "x") throws {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try Data(text.utf8).write(to: url)
            chmod(url.path, 0o600)
        }
        try file(account.config, "datacenters: {}\n")
        try file(account.postboxFile)
        try file(account.media.appendingPathComponent("storage/storage.sqlite"))
        try file(account.media.appendingPathComponent("_3f/r1"))
        try file(account.media.appendingPathComponent("cache/_0a/r2"))
        try file(account.uploads.appendingPathComponent("1"))
        try file(root.logs(process: "run").appendingPathComponent("run.log"))
        try file(root.metrics.appendingPathComponent("jobrun_j.prom"))
        try file(root.locks.appendingPathComponent("j.lock"))
        try file(root.suspended.appendingPathComponent("j"), "{}\n")
        try file(root.alerts.appendingPathComponent("j"), "{}\n")
        try file(root.temp(process: "media-tier").appendingPathComponent(".keep"))
        try file(root.url.appendingPathComponent(RootKeySource.rootRelativePath), String(repeating: "k", count: 64))
        for folder in [root.temp, root.temp(process: "media-tier"), root.logs, root.logs(process: "run")] { chmod(folder.path, 0o700) }
        return root
    }

    func testTheLayoutListsEveryPathOfAPopulatedRoot() throws {
        let root = try populatedRoot()
        let listed = Set(root.layout().map(\.description))
        for expected in [
            "accounts-metadata/", "logs/", "logs/run-logs/", "logs/run-logs/run.log", "temp/", "temp/media-tier/", "metrics/",
            "metrics/jobrun_j.prom", "suspended/", "suspended/j", "alerts/", "alerts/j", "locks/", "locks/j.lock", "media-tier/",
            "cluster.yaml", "account-0/", "account-0/config.yaml", "account-0/postbox/", "account-0/postbox/db/",
            "account-0/postbox/db/db.sqlite", "account-0/postbox/db/db.sqlite-wal", "account-0/postbox/media/",
            "account-0/postbox/media/_3f/", "account-0/postbox/media/cache/", "account-0/postbox/media/cache/_0a/",
            "account-0/postbox/media/short-cache/", "account-0/postbox/media/storage/",
            "account-0/postbox/media/storage/storage.sqlite", "account-0/uploads/", "account-0/uploads/1",
        ] {
            XCTAssertTrue(listed.contains(expected), "\(expected) is in the layout: \(listed.sorted())")
        }
        XCTAssertEqual(try root.verifyLayout(), [], "a clean root passes")
        XCTAssertEqual(
            root.layout().filter(\.optional).map(\.relative), ["metrics/jobrun_j.prom"],
            "only the metrics files are optional; every other path is required")
    }

    private typealias Plant = PlantedObject

    func testEveryPathOfTheLayoutRefusesEveryPlantedObject() throws {
        let root = try populatedRoot()
        var cases = 0
        var optional = 0
        let start = ContinuousClock.now
        for path in root.layout() {
            let url = root.url.appendingPathComponent(path.relative)
            for plant in Plant.allCases {
                // A hard link only matters where jobrun writes; a folder cannot be hard-linked.
                if plant == .hardLinkToVictim, path.kind == .directory || !path.writes { continue }
                let context = "\(plant) at \(path)"
                let aside = scratch.appendingPathComponent("aside")
                let existed = FileManager.default.fileExists(atPath: url.path)
                if existed, plant != .unsafeMode { XCTAssertEqual(rename(url.path, aside.path), 0, context) }
                var original = stat()
                switch plant {
                case .linkToVictim:
                    XCTAssertEqual(symlink(path.kind == .directory ? victimFolder.path : victimFile.path, url.path), 0, context)
                case .danglingLink:
                    XCTAssertEqual(symlink(scratch.appendingPathComponent("missing").path, url.path), 0, context)
                case .fifo:
                    XCTAssertEqual(mkfifo(url.path, 0o600), 0, context)
                case .hardLinkToVictim:
                    XCTAssertEqual(link(victimFile.path, url.path), 0, context)
                case .unsafeMode:
                    if !existed {
                        if path.kind == .directory { mkdir(url.path, 0o700) } else { _ = FileManager.default.createFile(atPath: url.path, contents: Data()) }
                    }
                    stat(url.path, &original)
                    XCTAssertEqual(chmod(url.path, path.kind == .directory ? 0o777 : 0o666), 0, context)
                }
                guard lstat(url.path, &original) == 0 || plant == .unsafeMode else { continue }
                if path.optional {
                    // Skipped, not refused: the problem comes back for the log, naming the path.
                    let skipped = try root.verifyLayout()
                    XCTAssertEqual(skipped.count, 1, context)
                    XCTAssertEqual(skipped.first?.exitCode, .config, "\(context): \(skipped)")
                    XCTAssertTrue(skipped.first?.description.contains(url.path) == true, "\(context): names the path: \(skipped)")
                    optional += 1
                } else {
                    XCTAssertThrowsError(try root.verifyLayout(), context) { error in
                        let rooted = error as? DataRootError
                        XCTAssertEqual(rooted?.exitCode, .config, "\(context): \(error)")
                        XCTAssertTrue(rooted?.description.contains(url.path) == true, "\(context): names the path: \(error)")
                    }
                }
                assertVictimIntact(context)
                cases += 1
                // Put the root back as it was for the next case.
                if plant == .unsafeMode {
                    if existed { chmod(url.path, path.kind == .directory ? 0o700 : 0o600) } else { try FileManager.default.removeItem(at: url) }
                } else {
                    unlink(url.path)
                    if existed { XCTAssertEqual(rename(aside.path, url.path), 0, context) }
                }
                XCTAssertEqual(try root.verifyLayout(), [], "restored after \(context)")
            }
        }
        XCTAssertGreaterThan(cases, 100)
        XCTAssertGreaterThan(optional, 0, "the metrics file is optional")
        print("layout check: \(cases) planted cases refused in \(ContinuousClock.now - start)")
    }

    func testAHardLinkedLockFileIsRefusedAndItsTargetKept() throws {
        let root = try populatedRoot()
        let lock = root.locks.appendingPathComponent("j.lock")
        unlink(lock.path)
        XCTAssertEqual(link(victimFile.path, lock.path), 0)
        XCTAssertThrowsError(try JobLock(root: root, job: "j").acquire()) { error in
            let jobError = error as? JobError
            XCTAssertEqual(jobError?.exitCode, .config)
            XCTAssertTrue(jobError?.message.contains(lock.path) == true && jobError?.message.contains("hard links") == true, "\(error)")
        }
        assertVictimIntact("lock")
    }

    func testAHardLinkedRunLogIsRefused() throws {
        let root = try populatedRoot()
        let log = root.logs(process: "run").appendingPathComponent("run.log")
        unlink(log.path)
        XCTAssertEqual(link(victimFile.path, log.path), 0)
        XCTAssertThrowsError(try LogSink(root: root, process: "run", console: .off)) { error in
            XCTAssertEqual((error as? DataRootError)?.exitCode, .config, "\(error)")
            XCTAssertTrue("\(error)".contains(log.path), "\(error)")
        }
        assertVictimIntact("run.log")
    }

    func testAFIFOInPlaceOfTheMetricsFileIsRefusedAtOnce() throws {
        let root = try populatedRoot()
        let writer = MetricsWriter(root: root)
        unlink(writer.fileURL(job: "j").path)
        XCTAssertEqual(mkfifo(writer.fileURL(job: "j").path, 0o600), 0)
        let start = ContinuousClock.now
        let now = Date()
        XCTAssertThrowsError(try writer.write(RunMetrics(job: "j", kind: "x", started: now, finished: now, outcome: .succeeded, counters: [:], samples: []))) {
            error in
            XCTAssertEqual(StorageFailure.classify(error).0, .config, "\(error)")
            XCTAssertTrue("\(error)".contains("FIFO"), "\(error)")
        }
        XCTAssertThrowsError(try writer.count(job: "j", kind: "x", outcome: "skipped"))
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(30), "refused at once, never blocked in open")
    }

    func testTheSchedulersMetricsEndpointServesNoFileALinkPointsAt() throws {
        let root = try populatedRoot()
        try Data("jobrun_own_total 1\n".utf8).write(to: root.metrics.appendingPathComponent("jobrun_j.prom"))
        let host = scratch.appendingPathComponent("host-file")
        try Data("host_secret_total 42\n".utf8).write(to: host)
        XCTAssertEqual(symlink(host.path, root.metrics.appendingPathComponent("jobrun_planted.prom").path), 0)
        XCTAssertEqual(mkfifo(root.metrics.appendingPathComponent("jobrun_fifo.prom").path, 0o600), 0)
        let start = ContinuousClock.now
        let served = SchedulerEndpoint(root: root).metricsText()
        XCTAssertTrue(served.contains("jobrun_own_total 1"), served)
        XCTAssertFalse(served.contains("host_secret_total"), "a file outside the root is never served: \(served)")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(30), "a FIFO is skipped at once, never opened blocking")
    }

    func testTemporaryFilesOfAKilledMetricsWriterAreSwept() throws {
        let root = try populatedRoot()
        let stale = root.metrics.appendingPathComponent(".jobrun_j.prom.tmp-abc123")
        try Data("half a write".utf8).write(to: stale)
        let now = Date()
        try MetricsWriter(root: root).write(RunMetrics(job: "other", kind: "x", started: now, finished: now, outcome: .succeeded, counters: [:], samples: []))
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale.path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: root.metrics.appendingPathComponent("jobrun_j.prom").path))
    }

    func testALinkedAlertsFolderIsNeitherReadNorRemovedThrough() throws {
        let root = try populatedRoot()
        try FileManager.default.removeItem(at: root.alerts)
        XCTAssertEqual(symlink(victimFolder.path, root.alerts.path), 0)
        // The victim holds a file named like the job's streak file.
        let state = AlertState(root: root, job: "file")
        XCTAssertNil(state.clear(), "no streak is read through the link")
        _ = state.recordFailure()
        assertVictimIntact("alerts")
        XCTAssertThrowsError(try root.verifyLayout()) { XCTAssertEqual(($0 as? DataRootError)?.exitCode, .config) }
    }

    func testALinkedSuspendedFolderIsNotReadAsAPauseNote() throws {
        let root = try populatedRoot()
        try FileManager.default.removeItem(at: root.suspended)
        try Data(#"{"note":"read from outside"}"#.utf8).write(to: victimFolder.appendingPathComponent("j"))
        defer { unlink(victimFolder.appendingPathComponent("j").path) }
        XCTAssertEqual(symlink(victimFolder.path, root.suspended.path), 0)
        let suspension = JobSuspension(root: root)
        XCTAssertEqual(suspension.pause(of: "j"), .paused(since: nil, note: nil), "something is there; its note is never read")
        XCTAssertThrowsError(try suspension.pause("k", note: nil))
        XCTAssertThrowsError(try suspension.resume("j"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: victimFolder.appendingPathComponent("j").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: victimFolder.appendingPathComponent("k").path))
    }
}
