import Foundation
import XCTest

@testable import Jobs
@testable import MediaBox

/// `TransferProgress`: the terminal line's format (files, bytes, recent rate, ETA), the rate over
/// the last seconds, bytes counted as parts land, the throttling of renders, with the final log
/// event and no render after `finish()`.
final class TransferProgressTests: XCTestCase {
    func testLineShowsFilesBytesRateAndEta() {
        // 3 MiB of 12 MiB at 1.2 MiB/s: 9 MiB left → 7.5 s → "8s".
        let l = TransferProgress.line(label: "prefetch", files: 12, totalFiles: 40, bytes: 3 << 20, totalBytes: 12 << 20, rate: Double(3 << 20) / 2.5)
        XCTAssertEqual(l.text, "prefetch: 12/40 files, 3.0 MiB/12.0 MiB, 1.2 MiB/s, ETA 8s")
        XCTAssertEqual(try XCTUnwrap(l.eta), 7.5, accuracy: 0.001)

        // Nothing moving: unknown ETA.
        let start = TransferProgress.line(label: "upload", files: 0, totalFiles: 5, bytes: 0, totalBytes: 1 << 20, rate: 0)
        XCTAssertEqual(start.text, "upload: 0/5 files, 0 B/1.0 MiB, 0 B/s, ETA ?")
        XCTAssertNil(start.eta)

        // Done: ETA 0s; bytes past the total (a part fetched again) never give a negative ETA.
        XCTAssertEqual(
            TransferProgress.line(label: "prefetch", files: 2, totalFiles: 2, bytes: 2048, totalBytes: 2048, rate: 1024).text,
            "prefetch: 2/2 files, 2.0 KiB/2.0 KiB, 1.0 KiB/s, ETA 0s")
        XCTAssertEqual(TransferProgress.line(label: "prefetch", files: 2, totalFiles: 2, bytes: 4096, totalBytes: 2048, rate: 0).eta, 0)

        // Long runs: minutes and hours in the ETA; GiB in the byte counts.
        XCTAssertEqual(
            TransferProgress.line(label: "prefetch", files: 1, totalFiles: 9, bytes: 1 << 20, totalBytes: (1 << 30) + (1 << 20), rate: Double(1 << 20)).text,
            "prefetch: 1/9 files, 1.0 MiB/1.0 GiB, 1.0 MiB/s, ETA 17m04s")
        XCTAssertEqual(TransferProgress.formatSeconds(0), "0s")
        XCTAssertEqual(TransferProgress.formatSeconds(59.4), "59s")
        XCTAssertEqual(TransferProgress.formatSeconds(59.6), "1m00s")
        XCTAssertEqual(TransferProgress.formatSeconds(3599), "59m59s")
        XCTAssertEqual(TransferProgress.formatSeconds(3600), "1h00m")
        XCTAssertEqual(TransferProgress.formatSeconds(7325), "2h02m")
    }

    /// The rate is the one over the last window, not the run's average: after a fast start and a
    /// stall the displayed rate falls to zero, and a new burst shows at its own speed.
    func testRateIsOverTheLastWindow() {
        let clock = ContinuousClock.now
        var s = TransferProgress.State()
        s.samples = [.init(at: clock, bytes: 0)]
        let window = Duration.seconds(5)
        func at(_ seconds: Double) -> ContinuousClock.Instant { clock + .milliseconds(Int64(seconds * 1000)) }
        s.bytes = 10_000
        XCTAssertEqual(TransferProgress.recentRate(&s, now: at(1), window: window), 10_000, accuracy: 1)
        s.bytes = 20_000
        XCTAssertEqual(TransferProgress.recentRate(&s, now: at(2), window: window), 10_000, accuracy: 1)
        // A stall: 10 s with nothing. The window has only the stall in it.
        XCTAssertEqual(TransferProgress.recentRate(&s, now: at(7), window: window), 0, accuracy: 1, "\(s.samples)")
        XCTAssertEqual(TransferProgress.recentRate(&s, now: at(12), window: window), 0, accuracy: 1, "\(s.samples)")
        // A burst of 50,000 bytes in the next second, measured from the last sample before the window.
        s.bytes = 70_000
        XCTAssertEqual(TransferProgress.recentRate(&s, now: at(13), window: window), 50_000 / 6.0, accuracy: 1, "\(s.samples)")
        XCTAssertLessThanOrEqual(s.samples.count, 4, "old samples are dropped: \(s.samples)")
    }

    /// Bytes advance part by part through the counting fetcher, before the file is done; the file's
    /// completion adds only what the parts did not count.
    func testPartsAdvanceBytesBeforeTheFileIsDone() async throws {
        let log = JobLogger(sink: try LogSink(configuration: .init(directory: nil, process: "t", console: .off)))
        let p = TransferProgress(label: "prefetch", totalFiles: 1, totalBytes: 3000, log: log, mode: .off)
        let (gate, opener) = AsyncStream<Void>.makeStream()
        let inner = ClosureMediaResourceFetcher { _ in
            AsyncThrowingStream { continuation in
                Task {
                    continuation.yield(.dataPart(offset: 0, data: Data(count: 1000)))
                    continuation.yield(.dataPart(offset: 1000, data: Data(count: 1000)))
                    for await _ in gate { break }
                    continuation.yield(.dataPart(offset: 2000, data: Data(count: 1000)))
                    continuation.finish()
                }
            }
        }
        let counting = ProgressCountingFetcher(inner, progress: p)
        let request = MediaResourceFetchRequest(
            resource: SimpleMediaResource(id: MediaResourceId("progress-test"), size: 3000), missingRanges: [0..<3000], knownSize: 3000)
        var received: Int64 = 0
        for try await event in counting.fetch(request) {
            guard case .dataPart(_, let data) = event else { continue }
            received += Int64(data.count)
            if received == 2000 {
                XCTAssertEqual(p.bytesForTesting, 2000, "two parts landed, the file is not done")
                XCTAssertEqual(p.filesForTesting, 0)
                opener.yield()
            }
        }
        XCTAssertEqual(counting.counted, 3000)
        p.fileDone(uncounted: 3000 - counting.counted)
        XCTAssertEqual(p.bytesForTesting, 3000, "completion adds nothing the parts counted")
        XCTAssertEqual(p.filesForTesting, 1)
        p.fileDone(uncounted: -5)
        XCTAssertEqual(p.bytesForTesting, 3000, "progress never goes back")
    }

    /// A completed file is handed on to the wrapped fetcher, so a chain behind the counter (the
    /// shared media tier) still publishes what it fetched.
    func testCompletionReachesTheWrappedFetcher() async throws {
        final class Recording: MediaResourceFetcher, @unchecked Sendable {
            var completed: [String] = []
            func fetch(_ request: MediaResourceFetchRequest) -> AsyncThrowingStream<MediaResourceFetchEvent, any Error> {
                AsyncThrowingStream { $0.finish() }
            }
            func fetchCompleted(_ resource: any MediaResource, reader: MediaResourceReader) async { completed.append(reader.path) }
        }
        let log = JobLogger(sink: try LogSink(configuration: .init(directory: nil, process: "t", console: .off)))
        let inner = Recording()
        let counting = ProgressCountingFetcher(inner, progress: TransferProgress(label: "prefetch", totalFiles: 1, totalBytes: 1, log: log, mode: .off))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("completion-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let box = try MediaBox(basePath: folder)
        let stored = try box.store(Data([7]), id: MediaResourceId("done"), info: MediaResourceStorageInfo())
        let reader = try XCTUnwrap(try box.openForReading(MediaResourceId("done"), touch: false))
        defer { reader.close() }
        await counting.fetchCompleted(SimpleMediaResource(id: MediaResourceId("done"), size: 1), reader: reader)
        XCTAssertEqual(inner.completed, [stored.path])
    }

    /// `upload-queue` counts an item's bytes as its parts are acknowledged: the prefix acknowledged
    /// by an earlier run at start, each part sent now as it lands.
    func testUploadProgressCountsAcknowledgedAndSentParts() throws {
        let log = JobLogger(sink: try LogSink(configuration: .init(directory: nil, process: "t", console: .off)))
        let p = TransferProgress(label: "upload", totalFiles: 1, totalBytes: 10_000, log: log, mode: .off)
        let tally = UploadQueueJob.Tally()
        UploadQueueJob.observe(
            .started(item: 7, fileId: 1, totalParts: 10, partSize: 1000, alreadyAcknowledged: 4, committedOffset: 4000, big: false, secret: false),
            tally: tally, progress: p, log: log)
        XCTAssertEqual(p.bytesForTesting, 4000, "the acknowledged prefix is already in the cloud")
        UploadQueueJob.observe(.partSent(item: 7, part: 4, bytes: 1000), tally: tally, progress: p, log: log)
        UploadQueueJob.observe(.partSent(item: 7, part: 5, bytes: 1000), tally: tally, progress: p, log: log)
        XCTAssertEqual(p.bytesForTesting, 6000, "parts count as they land")
        XCTAssertEqual(p.filesForTesting, 0)
        XCTAssertEqual(tally.values.progressBytes[7], 6000)
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
        let p = TransferProgress(label: "prefetch", totalFiles: 4, totalBytes: 4000, log: JobLogger(sink: sink), mode: .log, interval: interval)
        XCTAssertEqual(p.mode, .log)
        // The first file renders at once; the next ones within the interval do not.
        p.moved(bytes: 1000)
        p.fileDone()
        p.moved(bytes: 1000)
        p.fileDone()
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
        p.fileDone()
        p.fileDone(uncounted: 2000)
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
        p.fileDone(uncounted: 1)
        XCTAssertEqual(try events().count, 3)

        // finish() right after a render of the same state logs no duplicate.
        let q = TransferProgress(label: "prefetch", totalFiles: 1, totalBytes: 10, log: JobLogger(sink: sink), mode: .log, interval: interval)
        q.fileDone(uncounted: 10)
        q.finish()
        XCTAssertEqual(try events().count, 4)
        // A run with nothing done logs nothing.
        let r = TransferProgress(label: "prefetch", totalFiles: 3, totalBytes: 10, log: JobLogger(sink: sink), mode: .log, interval: interval)
        r.finish()
        XCTAssertEqual(try events().count, 4)
    }

    func testDefaultIntervalsAndModes() {
        let log = JobLogger(sink: try! LogSink(configuration: .init(directory: nil, process: "t", console: .off)))
        XCTAssertEqual(TransferProgress(label: "prefetch", totalFiles: 1, totalBytes: 1, log: log, mode: .terminal).interval, .milliseconds(500))
        XCTAssertEqual(TransferProgress(label: "prefetch", totalFiles: 1, totalBytes: 1, log: log, mode: .log).interval, .seconds(10))
        // Under `swift test` stderr is a pipe: the default is the log.
        if isatty(STDERR_FILENO) == 0 { XCTAssertEqual(TransferProgress(label: "prefetch", totalFiles: 1, totalBytes: 1, log: log).mode, .log) }
    }
}
