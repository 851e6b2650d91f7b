import CloudProtocol
import Foundation
import TestSupport
import XCTest

/// The `cloudd` executable: prints its URLs as one JSON line, serves, exits on SIGTERM.
final class ClouddProcessTests: XCTestCase {
    struct Ready: Decodable {
        let dcs: [DcOption]
        let cdn: DcOption
        let admin: String
    }

    func testStopDoesNotWaitForSlowDownloads() async throws {
        let server = try await TestCloud.start { $0.dataset.bigFiles = [5_000_000] }
        let f = server.dataset().files.first { $0.size == 5_000_000 }!
        server.updateFaults(FaultConfig(bandwidthBytesPerSecond: 200_000))
        let url = server.dcURLs[0].appendingPathComponent("plain/\(f.id)")
        // A real client in another process: cancelling an in-flight URLSession task can deadlock
        // in swift-corelibs-foundation, which once hung this whole suite.
        let curl = try ChildProcess("/usr/bin/curl", ["-s", "-o", "/dev/null", url.absoluteString])
        try await Task.sleep(for: .milliseconds(300))
        let t0 = ContinuousClock.now
        await server.stop()
        XCTAssertLessThan(ContinuousClock.now - t0, .seconds(3), "stop() must not wait 25 s for the paced body")
        curl.signal(SIGKILL)
        curl.wait()
    }

    /// Starts the built `cloudd` with `arguments` and reads its ready line.
    private func launch(_ arguments: [String]) throws -> (Process, Ready) {
        let exe = try Products.builtExecutable("cloudd")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        addTeardownBlock { if p.isRunning { p.terminate() } }
        // Read the first line.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        return (p, try JSONDecoder().decode(Ready.self, from: line.prefix { $0 != UInt8(ascii: "\n") }))
    }

    func testClouddPrintsReadyLineServesAndStopsOnSIGTERM() async throws {
        let (p, ready) = try launch([
            "--seed", "7", "--dcs", "2", "--port-base", "0", "--peers", "3", "--messages-per-peer", "5", "--cdn-fraction", "0.5",
        ])
        XCTAssertEqual(ready.dcs.count, 2)
        XCTAssertEqual(ready.cdn.id, 101)
        let cfg = try await TestHTTP.api(URL(string: ready.dcs[1].url)!, .getConfig, Empty()).decode(ConfigResponse.self)
        XCTAssertEqual(cfg.thisDc, 2)
        let listing = try await TestHTTP.request(URL(string: ready.admin + "/admin/dataset")!).decode(DatasetListing.self)
        XCTAssertEqual(listing.peers.count, 3)
        p.terminate()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationReason, .exit)
        XCTAssertEqual(p.terminationStatus, 0)
    }

    /// `--bench-videos COUNT:SIZE` (or `SIZE`), repeatable: that many streamable videos of each
    /// size in the bench channel, as a benchmark's in-process cloud would hold them; a bad value
    /// is refused.
    func testBenchVideosOptionServesVideosOfTheSizesGiven() async throws {
        let (p, ready) = try launch([
            "--seed", "3", "--dcs", "1", "--peers", "1", "--messages-per-peer", "1", "--bench-videos", "2:3000000", "--bench-videos", "3.5MB",
        ])
        let listing = try await TestHTTP.request(URL(string: ready.admin + "/admin/dataset")!).decode(DatasetListing.self)
        let bench = try XCTUnwrap(listing.benchPeerId)
        let videos = listing.files.filter { $0.parent?.hasPrefix("message:\(bench):") ?? false }.map(\.size).sorted()
        XCTAssertEqual(videos, [3_000_000, 3_000_000, 3_500_000])
        p.terminate()
        p.waitUntilExit()

        let bad = Process()
        bad.executableURL = URL(fileURLWithPath: try Products.builtExecutable("cloudd"))
        bad.arguments = ["--bench-videos", "2:1M-2M"]
        bad.standardOutput = FileHandle.nullDevice
        bad.standardError = FileHandle.nullDevice
        try bad.run()
        bad.waitUntilExit()
        XCTAssertNotEqual(bad.terminationStatus, 0, "a range is not an exact size")
    }
}
