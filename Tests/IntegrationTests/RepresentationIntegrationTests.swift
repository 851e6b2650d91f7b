import Foundation
import MediaBox
import Postbox
import TestSupport
import XCTest

/// `jobrun run reps` (`generate-representations`) over photos prefetched from a real `cloudd`,
/// whose photos are real JPEGs: thumbnails and placeholders are made by libvips and stored as
/// entries of their own; a truncated photo fails alone; SIGKILL at random moments, 20 times,
/// leaves the entries consistent and the next run makes only what is missing.
final class RepresentationIntegrationTests: XCTestCase {
    /// A synced and prefetched root with a `reps` job, plus one truncated photo in the cache
    /// unless `truncatedPhoto` is false.
    func start(seed: Int, messages: Int = 16, representations: String = "[thumbnail, placeholder]", truncatedPhoto: Bool = true) throws -> (
        ClouddProcess, JobrunHarness, photos: Int
    ) {
        let cloud = try startCloudd([
            "--dcs", "2", "--peers", "5", "--messages-per-peer", "\(messages)", "--seed", "\(seed)", "--cdn-fraction", "0",
            "--max-media-size", "3MiB",
        ])
        let h = JobrunHarness()
        try h.configureAccount(for: cloud)
        try h.syncOnce(initialMessages: messages)
        try h.writePrefetchJob("  mediaTypes: [photo]\n  sizeCaps:\n    photo: 3MiB", timeout: "5m")
        let prefetch = try h.run(["run", "prefetch", "--json"])
        XCTAssertEqual(prefetch.status, 0, prefetch.stdout + prefetch.stderr)
        try h.writeJob(
            "reps",
            """
            name: reps
            kind: generate-representations
            schedule: "5,35 * * * *"
            timeout: 10m
            retry:
              backoffLimit: 0
            params:
              representations: \(representations)
              concurrency: 2
            """)
        let box = try MediaBox(basePath: h.root + "/account-0/postbox/media")
        let photos = try box.storageBox.entries(after: nil, limit: 100_000).filter { $0.info.contentType == .photo }
        XCTAssertGreaterThanOrEqual(photos.count, 5, "the dataset has photos to work on")
        guard truncatedPhoto else { return (cloud, h, photos.count) }
        // A photo cut off halfway: the decoder must refuse it.
        let first = try XCTUnwrap(photos.first)
        let whole = try Data(contentsOf: URL(fileURLWithPath: box.paths(for: first.key).complete))
        XCTAssertEqual(Array(whole.prefix(2)), [0xFF, 0xD8], "cloudd serves photos as JPEG")
        try box.store(
            whole.prefix(whole.count / 2), id: MediaResourceId("truncated-photo"),
            info: MediaResourceStorageInfo(peerId: first.info.peerId, contentType: .photo))
        return (cloud, h, photos.count)
    }

    func testThumbnailsAndPlaceholdersAreMadeAndATruncatedPhotoFailsAlone() throws {
        let (_, h, photos) = try start(seed: 41)
        let run = try h.run(["run", "reps", "--json"])
        XCTAssertEqual(run.status, 0, "a bad photo does not fail the run: \(run.stdout) \(run.stderr)")
        let c = JobrunHarness.counters(run.stdout)
        XCTAssertEqual(c["photos"], photos + 1, run.stdout)
        XCTAssertEqual(c["failed"], 1, run.stdout)
        XCTAssertEqual(c["generated_thumbnail"], photos, run.stdout)
        XCTAssertEqual(c["generated_placeholder"], photos, run.stdout)
        let failure = try XCTUnwrap(
            h.logEvents().first { $0["event"] as? String == "representations.failed" }, "the failure is logged")
        XCTAssertEqual(failure["resource"] as? String, "truncated-photo")
        let reason = try XCTUnwrap(failure["error"] as? String)
        XCTAssertTrue(reason.contains("image decode failed"), reason)
        XCTAssertTrue(reason.lowercased().contains("premature end") || reason.lowercased().contains("truncated"), reason)

        let reps = try representationEntries(h)
        XCTAssertEqual(reps.count, 2 * photos)
        for (entry, path) in reps {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            XCTAssertEqual(Int64(data.count), entry.size)
            XCTAssertEqual(Array(data.prefix(2)), [0xFF, 0xD8], entry.resourceId)
            let (w, h) = try XCTUnwrap(Self.jpegDimensions(data), entry.resourceId)
            if entry.resourceId.hasSuffix(":thumbnail-200x200") {
                XCTAssertEqual(max(w, h), 200, entry.resourceId)
            } else {
                XCTAssertTrue(entry.resourceId.hasSuffix(":placeholder-10x10"), entry.resourceId)
                XCTAssertEqual(max(w, h), 10, entry.resourceId)
            }
            XCTAssertEqual(entry.info.location, .cache, "both are general-tier by default")
        }
        // A rerun makes nothing.
        let again = try h.run(["run", "reps", "--json"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertEqual(JobrunHarness.counters(again.stdout)["generated"], 0, again.stdout)
        XCTAssertEqual(JobrunHarness.counters(again.stdout)["already_present"], 2 * photos, again.stdout)
        // `stats` shows them by tier.
        let stats = try h.run(["stats"])
        XCTAssertEqual(stats.status, 0, stats.stderr)
        XCTAssertTrue(stats.stdout.contains("representations by tier:"), stats.stdout)
        let json = try h.run(["stats", "--json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        let account = try XCTUnwrap((object["accounts"] as? [[String: Any]])?.first, json.stdout)
        let byTier = try XCTUnwrap(account["representations_by_tier"] as? [String: [String: Any]], json.stdout)
        XCTAssertEqual((byTier["general"]?["files"] as? NSNumber)?.intValue, 2 * photos, json.stdout)
        XCTAssertEqual((byTier["short-lived"]?["files"] as? NSNumber)?.intValue, 0, json.stdout)
    }

    /// Each run is killed at a random moment shortly after it has stored new representations
    /// (a photo's are stored together), so every kill lands while representations are being
    /// made. A run stores one group commit before its kill, and on a loaded machine, where a
    /// sync is slow, a group holds many photos: the dataset has photos for well over twenty
    /// such runs.
    func testTwentySigkillsAtRandomMomentsLeaveEntriesConsistentAndTheRunResumes() throws {
        let (_, h, photos) = try start(seed: 42, messages: 160, representations: "[thumbnail, placeholder, display]")
        let total = 3 * photos
        var kills = 0
        var progress: [Int] = []
        var midway = 0
        var attempts = 0
        while kills < 20 && attempts < 60 {
            attempts += 1
            let before = representationFileCount(h)
            if before >= total { break }
            // Each photo waits 30 ms first, so a kill lands between, or inside, photos.
            let run = try h.start(["run", "reps", "--json"], failpoints: "representation-before-item=sleep(30)")
            let target = before + Int.random(in: 1...2)
            let deadline = Date().addingTimeInterval(120)
            while run.process.isRunning, representationFileCount(h) < target, Date() < deadline { usleep(2_000) }
            usleep(UInt32(Int.random(in: 0...40_000)))
            guard run.process.isRunning else {
                run.wait()
                continue
            }
            run.signal(SIGKILL)
            run.wait()
            guard run.process.terminationReason == .uncaughtSignal else { continue }  // it finished first
            kills += 1
            try assertConsistent(h)
            let count = try representationEntries(h).count
            if count > (progress.last ?? 0) && count < total { midway += 1 }
            progress.append(count)
        }
        XCTAssertEqual(kills, 20, "twenty runs killed (\(photos) photos, entries after each kill \(progress))")
        XCTAssertGreaterThanOrEqual(midway, 15, "kills land while representations are being made: \(progress)")
        let before = try representationEntries(h).count
        let last = try h.run(["run", "reps", "--json"])
        XCTAssertEqual(last.status, 0, last.stdout + last.stderr)
        let c = JobrunHarness.counters(last.stdout)
        XCTAssertEqual(c["failed"], 1, last.stdout)
        XCTAssertEqual((c["generated"] ?? 0) + (c["already_present"] ?? 0), total, last.stdout)
        XCTAssertGreaterThan(c["already_present"] ?? 0, 0, "the killed runs' work is kept: \(last.stdout)")
        XCTAssertLessThanOrEqual(c["generated"] ?? 0, total - before, "only what was missing is made: \(last.stdout)")
        let entries = try representationEntries(h)
        XCTAssertEqual(entries.count, total)
        XCTAssertEqual(entries.filter { $0.0.info.location == .shortCache }.count, photos, "display sizes are short-lived")
        try assertConsistent(h)
    }

    /// libvips and its seventy-odd libraries are not part of the binary: `--version`, an idle
    /// cron run and a representations run that finds everything made never load them; a run
    /// that makes representations loads libvips itself (`dlopen`), once.
    func testLibvipsIsLoadedOnlyByARunThatMakesRepresentations() throws {
        let idle = JobrunHarness()
        let ldd = try ChildProcess.run("/usr/bin/ldd", [idle.binary])
        XCTAssertEqual(ldd.status, 0, ldd.stderr)
        XCTAssertTrue(ldd.stdout.contains("libc.so.6"), ldd.stdout)
        for library in ["libvips", "libgobject", "libglib"] {
            XCTAssertFalse(ldd.stdout.contains(library), "jobrun links \(library): \(ldd.stdout)")
        }
        let version = try runTracingLibraries(idle, ["--version"])
        XCTAssertEqual(version.status, 0, version.stderr)
        XCTAssertTrue(version.loader.contains("file=libc.so.6"), "the loader's trace is read: \(version.loader.prefix(500))")
        XCTAssertFalse(version.loader.contains("libvips"), "--version loads libvips")
        try idle.writeCleanupJob("cleanup")
        let cron = try runTracingLibraries(idle, ["run", "cleanup"])
        XCTAssertEqual(cron.status, 0, cron.stdout + cron.stderr)
        XCTAssertFalse(cron.loader.contains("libvips"), "an idle run loads libvips")

        let (_, h, photos) = try start(seed: 43, messages: 8, truncatedPhoto: false)
        let first = try runTracingLibraries(h, ["run", "reps", "--json"])
        XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
        XCTAssertEqual(JobrunHarness.counters(first.stdout)["generated"], 2 * photos, first.stdout)
        let loads = first.loader.split(separator: "\n").filter { $0.contains("file=libvips.so.42 [0];  dynamically loaded by") }
        XCTAssertEqual(loads.count, 1, "libvips is loaded once, by dlopen: \(first.loader.split(separator: "\n").filter { $0.contains("libvips") })")
        let again = try runTracingLibraries(h, ["run", "reps", "--json"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertEqual(JobrunHarness.counters(again.stdout)["generated"], 0, again.stdout)
        XCTAssertFalse(again.loader.contains("libvips"), "a run with nothing to make loads libvips")
    }

    /// On a host whose libvips cannot be loaded (here: hidden, in a private mount namespace, by
    /// an empty file bound over it), `generate-representations` exits 78 naming the Debian
    /// package and makes nothing, and the other kinds run as ever.
    func testAHostWithoutLibvipsFailsTheKindWithExit78AndRunsTheOthers() throws {
        if geteuid() != 0 { throw XCTSkip("a private mount namespace needs root") }
        let (_, h, _) = try start(seed: 44, messages: 8, truncatedPhoto: false)
        try h.writeCleanupJob("cleanup")
        func runWithoutLibvips(_ args: [String]) throws -> (status: Int32, output: String) {
            let quoted = ([h.binary] + h.arguments(args)).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            let script = """
                set -e
                for f in $(/sbin/ldconfig -p | awk '/libvips\\.so\\.42 /{print $NF}'); do mount --bind /dev/null "$(readlink -f "$f")"; done
                exec \(quoted.joined(separator: " "))
                """
            let p = try ChildProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script])
            let status = p.wait(timeout: 300)
            return (status, p.stdout + p.stderr)
        }
        let reps = try runWithoutLibvips(["run", "reps"])
        XCTAssertEqual(reps.status, 78, reps.output)
        XCTAssertTrue(reps.output.contains("generate-representations needs libvips (Debian package libvips42)"), reps.output)
        XCTAssertTrue(reps.output.contains("libvips.so.42: "), "names the library and the loader's reason: \(reps.output)")
        XCTAssertEqual(try representationEntries(h).count, 0, "nothing made")
        XCTAssertEqual(representationFileCount(h), 0, "nothing made")
        let cleanup = try runWithoutLibvips(["run", "cleanup"])
        XCTAssertEqual(cleanup.status, 0, cleanup.output)
        // Outside the namespace libvips is there again, and the same job makes the representations.
        let again = try h.run(["run", "reps", "--json"])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertGreaterThan(JobrunHarness.counters(again.stdout)["generated"] ?? 0, 0, again.stdout)
    }

    // MARK: helpers

    /// Runs `jobrun args…` with the dynamic loader tracing the libraries it loads
    /// (`LD_DEBUG=files`, written to a file of its own); `loader` is that trace.
    func runTracingLibraries(_ h: JobrunHarness, _ args: [String]) throws -> (status: Int32, stdout: String, stderr: String, loader: String) {
        let dir = TemporaryDirectory(prefix: "jobrun-ld")
        let p = try ChildProcess(h.binary, h.arguments(args), environment: ["LD_DEBUG": "files", "LD_DEBUG_OUTPUT": dir.file("ld")])
        let status = p.wait(timeout: 300)
        let traces = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        let loader = try traces.map { try String(contentsOfFile: dir.file($0), encoding: .utf8) }.joined()
        return (status, p.stdout, p.stderr, loader)
    }

    /// Representation files on disk (in `cache/` and `short-cache/`), rows or not.
    func representationFileCount(_ h: JobrunHarness) -> Int {
        let media = h.root + "/account-0/postbox/media"
        return [MediaStorageLocation.cache, .shortCache].reduce(0) { n, location in
            let dir = ResourceStorePaths.locationDirectory(mediaDirectory: media, location: location)
            return n + ((try? MediaShard.storedFileNames(in: dir).count) ?? 0)
        }
    }

    /// The representation rows of account 0, with their complete paths.
    func representationEntries(_ h: JobrunHarness) throws -> [(StorageBoxEntry, String)] {
        try h.prefetchedEntries().filter { $0.0.info.location != .resources }
    }

    /// Every representation row names a whole JPEG of its size; every representation file is a
    /// whole JPEG (a file linked just before a kill may lack its row: the next request adds it);
    /// no partial file is left; the index totals are the rows'.
    func assertConsistent(_ h: JobrunHarness, file: StaticString = #filePath, line: UInt = #line) throws {
        for (entry, path) in try representationEntries(h) {
            let data = try XCTUnwrap(FileManager.default.contents(atPath: path), "row without file: \(entry.resourceId)", file: file, line: line)
            XCTAssertEqual(Int64(data.count), entry.size, entry.resourceId, file: file, line: line)
            XCTAssertTrue(Self.isWholeJPEG(data), "torn representation \(entry.resourceId)", file: file, line: line)
        }
        let media = h.root + "/account-0/postbox/media"
        for location in [MediaStorageLocation.cache, .shortCache] {
            let dir = ResourceStorePaths.locationDirectory(mediaDirectory: media, location: location)
            for name in (try? MediaShard.storedFileNames(in: dir)) ?? [] {
                XCTAssertFalse(name.contains("_partial"), "left behind: \(name)", file: file, line: line)
                let path = try XCTUnwrap(MediaShard.path(in: dir, storedFile: name), file: file, line: line)
                let data = try XCTUnwrap(FileManager.default.contents(atPath: path), file: file, line: line)
                XCTAssertTrue(Self.isWholeJPEG(data), "torn file \(name)", file: file, line: line)
            }
        }
        let box = try MediaBox(basePath: media, readOnly: true)
        let rows = try box.storageBox.entries(after: nil, limit: 100_000)
        XCTAssertEqual(try box.stats().total, StorageUsage(bytes: rows.reduce(0) { $0 + $1.size }, count: Int64(rows.count)), file: file, line: line)
    }

    static func isWholeJPEG(_ data: Data) -> Bool {
        data.count > 4 && data.prefix(2) == Data([0xFF, 0xD8]) && data.suffix(2) == Data([0xFF, 0xD9])
    }

    /// Width and height from a JPEG's start-of-frame segment.
    static func jpegDimensions(_ data: Data) -> (Int, Int)? {
        let b = [UInt8](data)
        var i = 2
        while i + 9 < b.count {
            guard b[i] == 0xFF else { return nil }
            let marker = b[i + 1]
            let length = Int(b[i + 2]) << 8 | Int(b[i + 3])
            if (0xC0...0xC2).contains(marker) {
                return (Int(b[i + 7]) << 8 | Int(b[i + 8]), Int(b[i + 5]) << 8 | Int(b[i + 6]))
            }
            i += 2 + length
        }
        return nil
    }
}
