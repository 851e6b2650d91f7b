import Foundation
import Jobs
import MediaBox
import Synchronization
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The data root's layout (`DataRoot.layout()`) against the built `jobrun`: on a root populated
/// by `jobrun demo`, each path of the layout in turn is replaced by a link to a victim outside,
/// a dangling link, a FIFO, a hard link to a victim (where jobrun writes), or given mode
/// 0777/0666; every job kind and every command that touches the root is run against it. Each
/// run exits 78 naming the path, the victim is untouched and nothing appears outside the root.
/// Where the layout marks a path optional, each run instead succeeds (exit 0) and says
/// `layout.skipped` naming the path; those runs use the kinds and commands that need no cloud
/// (the demo's cloud is gone by then), so that only the planted object could make them fail.
///
/// A path added to the layout is covered without a new case. To keep the run short, paths of
/// one pattern (a shard folder of one location, a staged upload, a log file) are represented by
/// one of them, each case runs one job kind and one other command (cycling through all of them
/// across the cases: every check happens before a command opens anything, so any command sees
/// every planted object), and cases run on four copies of the root at once.
final class RootLayoutIntegrationTests: XCTestCase {
    /// Every shipped kind: a kind added to the registry is run against the planted paths too.
    private static let kinds = JobKindRegistry.shipped.names
    /// Kinds and commands that succeed on the populated root without a cloud.
    private static let offlineKinds = ["time-based-cleanup", "history-retention"]
    private static let offlineCommands = [["status"], ["stats"]]
    private static let workers = 4

    private typealias Plant = PlantedObject

    private struct Case: Sendable {
        let path: DataRootPath
        let plant: Plant
        let kind: String
        let command: [String]
    }

    /// One path per pattern: shard folders, numbered files and per-job files stand for their kind.
    private static func pattern(_ path: DataRootPath) -> String {
        path.components.map { name -> String in
            if MediaShard.isShardName(name) { return "<shard>" }
            if name.hasPrefix("account-") { return "account-<id>" }
            if Int64(name) != nil { return "<n>" }
            return name
        }.joined(separator: "/") + (path.kind == .directory ? "/" : "")
    }

    func testEveryCommandAndKindRefusesEveryPlantedObjectAtEveryPathOfTheLayout() throws {
        let started = ContinuousClock.now
        let dir = TemporaryDirectory(prefix: "jobrun-layout")
        let binary = Products.executable("jobrun")
        let populated = dir.file("populated")
        // The demo populates a root of the kind the tests make (`TestRoot`): an encrypted one has its key's paths too.
        let demo = try ChildProcess(binary, ["demo", "--json", "--root", populated] + (TestRoot.kind == .encrypted ? ["--encrypt"] : []))
        XCTAssertEqual(demo.wait(timeout: 600), 0, demo.stderr)
        // What the demo leaves empty: a pause, a failure streak, a staged upload, a stale temp file.
        let pause = try ChildProcess(binary, ["pause", "sync-history", "--root", populated, "--jobs-dir", populated + "/jobs"])
        XCTAssertEqual(pause.wait(timeout: 120), 0, pause.stderr)
        for (file, text) in [("alerts/upload-queue", "{}\n"), ("account-0/uploads/999", "staged"), ("temp/media-tier/.keep", "")] {
            let path = populated + "/" + file
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            chmod((path as NSString).deletingLastPathComponent, 0o700)
        }
        let upload = dir.file("upload.txt")
        try Data("to send".utf8).write(to: URL(fileURLWithPath: upload))

        var seen = Set<String>()
        let paths = DataRoot(path: populated).layout().filter { seen.insert(Self.pattern($0)).inserted }
        XCTAssertGreaterThan(paths.count, 30, "\(paths)")
        XCTAssertTrue(paths.contains { $0.optional }, "the demo leaves a metrics file, an optional path: \(paths)")
        let others: [[String]] = [
            ["status"], ["stats"], ["enqueue-upload", upload, "--peer", "1"], ["pause", "upload-queue"], ["resume", "sync-history"],
        ]
        var cases: [Case] = []
        for path in paths {
            for plant in Plant.allCases where !(plant == .hardLinkToVictim && (path.kind == .directory || !path.writes)) {
                let n = cases.count
                if path.optional {
                    cases.append(
                        Case(
                            path: path, plant: plant, kind: Self.offlineKinds[n % Self.offlineKinds.count],
                            command: Self.offlineCommands[n % Self.offlineCommands.count]))
                } else {
                    cases.append(Case(path: path, plant: plant, kind: Self.kinds[n % Self.kinds.count], command: others[n % others.count]))
                }
            }
        }

        // One copy of the root, one victim folder and file per worker.
        for w in 0..<Self.workers {
            let copy = try SystemCommand.status(["/bin/cp", "-a", populated, dir.file("root-\(w)")])
            XCTAssertEqual(copy.status, 0)
            try FileManager.default.createDirectory(atPath: dir.file("victim-\(w)"), withIntermediateDirectories: true)
            try Data("victim".utf8).write(to: URL(fileURLWithPath: dir.file("victim-\(w)/file")))
            chmod(dir.file("victim-\(w)/file"), 0o600)
        }
        let outside = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
        let planned = cases

        let failures = Mutex<[String]>([])
        let times = Mutex<[Double]>([])
        DispatchQueue.concurrentPerform(iterations: Self.workers) { w in
            let root = dir.file("root-\(w)")
            let victimFolder = dir.file("victim-\(w)")
            let victimFile = victimFolder + "/file"
            func fail(_ text: String) { failures.withLock { $0.append(text) } }
            for (i, c) in planned.enumerated() where i % Self.workers == w {
                let url = root + "/" + c.path.relative
                let context = "\(c.plant) at \(c.path)"
                let aside = dir.file("aside-\(w)")
                var st = stat()
                let existed = lstat(url, &st) == 0
                if existed, c.plant != .unsafeMode, rename(url, aside) != 0 { fail("\(context): cannot move aside"); continue }
                var planted: Int32 = 0
                switch c.plant {
                case .linkToVictim: planted = symlink(c.path.kind == .directory ? victimFolder : victimFile, url)
                case .danglingLink: planted = symlink(dir.file("missing-\(w)"), url)
                case .fifo: planted = mkfifo(url, 0o600)
                case .hardLinkToVictim: planted = link(victimFile, url)
                case .unsafeMode:
                    if !existed {
                        if c.path.kind == .directory { mkdir(url, 0o700) } else { _ = FileManager.default.createFile(atPath: url, contents: Data()) }
                    }
                    planted = chmod(url, c.path.kind == .directory ? 0o777 : 0o666)
                }
                if planted != 0 { fail("\(context): cannot plant (errno \(errno))") }
                let runArgs = c.path.optional ? ["run", c.kind, "--log-format", "json"] : ["run", c.kind]
                var plantedStat = stat()
                _ = lstat(url, &plantedStat)
                for args in [runArgs, c.command] {
                    // An optional path the run rewrote (its metrics file, renamed over the link or
                    // FIFO) is jobrun's own file again: one link, no longer the planted object.
                    var now = stat()
                    let replaced = c.path.optional && lstat(url, &now) == 0 && now.st_ino != plantedStat.st_ino
                    if replaced, now.st_mode & S_IFMT != S_IFREG || now.st_nlink != 1 || now.st_mode & 0o022 != 0 {
                        fail("\(context): what replaced the planted object is not jobrun's own file")
                    }
                    let start = ContinuousClock.now
                    guard let p = try? ChildProcess(binary, args + ["--root", root, "--jobs-dir", root + "/jobs"]) else {
                        fail("\(context): cannot start jobrun")
                        continue
                    }
                    let status = p.wait(timeout: 120)
                    let seconds = (ContinuousClock.now - start) / .seconds(1)
                    times.withLock { $0.append(seconds) }
                    let shown = args.prefix(2).joined(separator: " ")
                    let expected: Int32 = c.path.optional ? 0 : 78
                    if status != expected {
                        fail("\(context): `jobrun \(shown)` exited \(status), not \(expected): \(p.stderr.suffix(400))")
                    }
                    if !replaced, !p.stderr.contains(url) {
                        fail("\(context): `jobrun \(shown)` does not name \(url): \(p.stderr.suffix(400))")
                    }
                    if c.path.optional, !replaced, !p.stderr.contains("layout.skipped") {
                        fail("\(context): `jobrun \(shown)` does not log the skipped path: \(p.stderr.suffix(400))")
                    }
                    if seconds > 60 { fail("\(context): `jobrun \(shown)` took \(seconds) s") }
                }
                if (try? String(contentsOfFile: victimFile, encoding: .utf8)) != "victim"
                    || (try? FileManager.default.contentsOfDirectory(atPath: victimFolder)) != ["file"]
                {
                    fail("\(context): the victim changed")
                }
                if FileManager.default.fileExists(atPath: dir.file("missing-\(w)")) { fail("\(context): the dangling link's target was created") }
                // Put the copy back as it was.
                if c.plant == .unsafeMode {
                    if existed { chmod(url, c.path.kind == .directory ? 0o700 : 0o600) } else { try? FileManager.default.removeItem(atPath: url) }
                } else {
                    unlink(url)
                    if existed, rename(aside, url) != 0 { fail("\(context): cannot restore") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)), outside, "nothing appeared outside the roots")
        let all = times.withLock { $0 }.sorted()
        print(
            "root layout: \(paths.count) paths (\(paths.filter(\.optional).count) optional), \(cases.count) cases, \(all.count) runs; "
                + "exit 78 (or 0 and skipped) after median "
                + "\(String(format: "%.2f", all[all.count / 2])) s, max \(String(format: "%.2f", all.last ?? 0)) s; "
                + "test took \(ContinuousClock.now - started)")
    }
}
