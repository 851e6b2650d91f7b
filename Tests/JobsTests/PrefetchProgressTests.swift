import Foundation
import XCTest

@testable import Jobs

/// `PrefetchProgress`: the terminal line's format (files, bytes, rate, ETA) and the throttling
/// of renders, with the final log event and no render after `finish()`.
final class PrefetchProgressTests: XCTestCase {
    func testLineShowsFilesBytesRateAndEta() {
        // 3 MiB of 12 MiB in 2.5 s: 1.2 MiB/s, 9 MiB left → 7.5 s → "8s".
        let l = PrefetchProgress.line(files: 12, totalFiles: 40, bytes: 3 << 20, totalBytes: 12 << 20, elapsed: 2.5)
        XCTAssertEqual(l.text, "prefetch: 12/40 files, 3.0 MiB/12.0 MiB, 1.2 MiB/s, ETA 8s")
        XCTAssertEqual(l.rate, Double(3 << 20) / 2.5, accuracy: 0.001)
        XCTAssertEqual(try XCTUnwrap(l.eta), 7.5, accuracy: 0.001)

        // Nothing yet: no rate, unknown ETA.
        let start = PrefetchProgress.line(files: 0, totalFiles: 5, bytes: 0, totalBytes: 1 << 20, elapsed: 0)
        XCTAssertEqual(start.text, "prefetch: 0/5 files, 0 B/1.0 MiB, 0 B/s, ETA ?")
        XCTAssertEqual(start.rate, 0)
        XCTAssertNil(start.eta)

        // Files done without bytes (skipped/cached) after some time: still no ETA.
        XCTAssertEqual(
            PrefetchProgress.line(files: 3, totalFiles: 5, bytes: 0, totalBytes: 4096, elapsed: 4).text,
            "prefetch: 3/5 files, 0 B/4.0 KiB, 0 B/s, ETA ?")

        // Done: ETA 0s; bytes past the total (a resumed file counted whole) never give a negative ETA.
        XCTAssertEqual(
            PrefetchProgress.line(files: 2, totalFiles: 2, bytes: 2048, totalBytes: 2048, elapsed: 2).text,
            "prefetch: 2/2 files, 2.0 KiB/2.0 KiB, 1.0 KiB/s, ETA 0s")
        XCTAssertEqual(PrefetchProgress.line(files: 2, totalFiles: 2, bytes: 4096, totalBytes: 2048, elapsed: 1).eta, 0)

        // Long runs: minutes and hours in the ETA; GiB in the byte counts.
        XCTAssertEqual(
            PrefetchProgress.line(files: 1, totalFiles: 9, bytes: 1 << 20, totalBytes: (1 << 30) + (1 << 20), elapsed: 1).text,
            "prefetch: 1/9 files, 1.0 MiB/1.0 GiB, 1.0 MiB/s, ETA 17m04s")
        XCTAssertEqual(PrefetchProgress.formatSeconds(0), "0s")
        XCTAssertEqual(PrefetchProgress.formatSeconds(59.4), "59s")
        XCTAssertEqual(PrefetchProgress.formatSeconds(59.6), "1m00s")
        XCTAssertEqual(PrefetchProgress.formatSeconds(3599), "59m59s")
        XCTAssertEqual(PrefetchProgress.formatSeconds(3600), "1h00m")
        XCTAssertEqual(PrefetchProgress.formatSeconds(7325), "2h02m")

        // The instance form uses the run's totals.
        let log = JobLogger(sink: try! LogSink(configuration: .init(directory: nil, process: "t", console: .off)))
        let p = PrefetchProgress(totalFiles: 40, totalBytes: 12 << 20, log: log, mode: .off)
        XCTAssertEqual(p.line(files: 12, bytes: 3 << 20, elapsed: 2.5).text, l.text)
    }

    func testLogModeIsThrottledAndEndsWithTheFinalState() throws {
        let directory = try TestPaths.makeTempDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = DataRoot(url: directory)
        let sink = try LogSink(root: root, process: "jobrun", console: .off)
        let file = try XCTUnwrap(sink.fileURL)
        func events() throws -> [[String: Any]] {
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            return try text.split(separator: "\n").compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["event"] as? String == "prefetch.progress" }
        }
        func int(_ e: [String: Any]?, _ key: String) -> Int64? { (e?[key] as? NSNumber)?.int64Value }

        let interval = Duration.milliseconds(400)
        let p = PrefetchProgress(totalFiles: 4, totalBytes: 4000, log: JobLogger(sink: sink), mode: .log, interval: interval)
        XCTAssertEqual(p.mode, .log)
        // The first file renders at once; the next ones within the interval do not.
        p.fileDone(bytes: 1000)
        p.fileDone(bytes: 1000)
        p.tick()
        var e = try events()
        XCTAssertEqual(e.count, 1, "\(e)")
        XCTAssertEqual(int(e.first, "files"), 1)
        XCTAssertEqual(int(e.first, "bytes"), 1000)
        XCTAssertEqual(int(e.first, "files_total"), 4)
        XCTAssertEqual(int(e.first, "bytes_total"), 4000)
        XCTAssertNotNil(int(e.first, "rate_bps"))
        XCTAssertNotNil(int(e.first, "eta_s"), "bytes arrived: an ETA")

        // After the interval, a tick renders the current state; an immediate second one does not.
        Thread.sleep(forTimeInterval: 0.5)
        p.tick()
        p.tick()
        e = try events()
        XCTAssertEqual(e.count, 2, "\(e)")
        XCTAssertEqual(int(e.last, "files"), 2)
        XCTAssertEqual(int(e.last, "bytes"), 2000)

        // finish() logs the final state (changed since the last event) even inside the interval…
        p.fileDone(bytes: 0)
        p.fileDone(bytes: 2000)
        p.finish()
        e = try events()
        XCTAssertEqual(e.count, 3, "\(e)")
        XCTAssertEqual(int(e.last, "files"), 4)
        XCTAssertEqual(int(e.last, "bytes"), 4000)
        XCTAssertEqual(int(e.last, "eta_s"), 0)
        // … and nothing renders after it: a late tick, another finish.
        Thread.sleep(forTimeInterval: 0.5)
        p.tick()
        p.finish()
        p.fileDone(bytes: 1)
        XCTAssertEqual(try events().count, 3)

        // finish() right after a render of the same state logs no duplicate.
        let q = PrefetchProgress(totalFiles: 1, totalBytes: 10, log: JobLogger(sink: sink), mode: .log, interval: interval)
        q.fileDone(bytes: 10)
        q.finish()
        XCTAssertEqual(try events().count, 4)
        // A run with nothing done logs nothing.
        let r = PrefetchProgress(totalFiles: 3, totalBytes: 10, log: JobLogger(sink: sink), mode: .log, interval: interval)
        r.finish()
        XCTAssertEqual(try events().count, 4)
    }

    func testDefaultIntervalsAndModes() {
        let log = JobLogger(sink: try! LogSink(configuration: .init(directory: nil, process: "t", console: .off)))
        XCTAssertEqual(PrefetchProgress(totalFiles: 1, totalBytes: 1, log: log, mode: .terminal).interval, .milliseconds(500))
        XCTAssertEqual(PrefetchProgress(totalFiles: 1, totalBytes: 1, log: log, mode: .log).interval, .seconds(10))
        // Under `swift test` stderr is a pipe: the default is the log.
        if isatty(STDERR_FILENO) == 0 { XCTAssertEqual(PrefetchProgress(totalFiles: 1, totalBytes: 1, log: log).mode, .log) }
    }
}
