import CloudCore
import Foundation
import TestSupport
import XCTest

/// Prints download figures against nginx on loopback next to curl's in the same run.
/// Not a timed assertion (shared, noisy machines); it only checks the bytes arrived.
final class TransportThroughputTests: XCTestCase {
    func testThroughputFiguresAgainstNginxAndCurl() async throws {
        let smallCount = Int(ProcessInfo.processInfo.environment["JOBRUN_TRANSPORT_SMALL_FILES"] ?? "") ?? 1000
        let largeSize = (Int(ProcessInfo.processInfo.environment["JOBRUN_TRANSPORT_LARGE_MB"] ?? "") ?? 200) << 20
        let sizes = (0..<smallCount).map { _ in Int.random(in: 10_000...200_000) }
        let fixture = try NginxFixture(options: .init(workers: 2)) { root in
            for (i, size) in sizes.enumerated() {
                try TransportFixtures.write(TransportFixtures.bytes(size, seed: UInt64(i)), "s/\(i).bin", in: root)
            }
            _ = try TransportFixtures.writeLarge("large.bin", size: largeSize, in: root)
        }
        defer { fixture.stop() }
        let transport = try CurlTransport()
        let totalSmall = sizes.reduce(0, +)

        // Small files: 16 in flight, each to its own new file (no fsync, like curl).
        let outSmall = fixture.directory.url.appendingPathComponent("out-small")
        try FileManager.default.createDirectory(at: outSmall, withIntermediateDirectories: true)
        sync()  // start every measurement with no dirty pages pending
        var started = Date()
        let connections = try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0
            var connections = 0
            func add() {
                let i = next
                next += 1
                group.addTask {
                    let fd = try openScratchFile(outSmall.appendingPathComponent("\(i).bin"))
                    defer { close(fd) }
                    let r = try await transport.download(fixture.url("s/\(i).bin"), to: fd, at: 0)
                    guard r.status == 200, r.bytesReceived == sizes[i] else { throw TransportError.other(code: -1, reason: "bad \(i)") }
                    return r.newConnections
                }
            }
            for _ in 0..<min(16, smallCount) { add() }
            while let c = try await group.next() {
                connections += c
                if next < smallCount { add() }
            }
            return connections
        }
        let smallSeconds = Date().timeIntervalSince(started)

        // Large file: one stream to a file descriptor.
        let outLarge = fixture.directory.url.appendingPathComponent("large.out")
        let fd = try openScratchFile(outLarge)
        let rssBefore = Self.memoryKiB("VmRSS")
        sync()
        started = Date()
        let large = try await transport.download(fixture.url("large.bin"), to: fd, at: 0)
        let largeSeconds = Date().timeIntervalSince(started)
        let rssAfter = Self.memoryKiB("VmRSS")
        // Network path alone (no file writes): body discarded.
        started = Date()
        let discarded = try await transport.send(HTTPRequest(url: fixture.url("large.bin"), destination: .discard))
        let discardSeconds = Date().timeIntervalSince(started)
        XCTAssertEqual(discarded.bytesReceived, Int64(largeSize))
        close(fd)
        XCTAssertEqual(large.bytesReceived, Int64(largeSize))
        try? FileManager.default.removeItem(at: outLarge)

        var report = String(
            format: "transport throughput: %d small files (%.0f MB): %.0f files/s, %.0f MB/s, %d connections; %d MB large: %.0f MB/s",
            smallCount, Double(totalSmall) / 1e6, Double(smallCount) / smallSeconds,
            Double(totalSmall) / 1e6 / smallSeconds, connections, largeSize >> 20,
            Double(largeSize) / 1e6 / largeSeconds)
        report += " (RSS \(rssBefore >> 10) MiB before, \(rssAfter >> 10) MiB after)"
        report += String(format: ", discarded: %.0f MB/s", Double(largeSize) / 1e6 / discardSeconds)

        // curl on the same server, same run.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") {
            let curlSmall = fixture.directory.url.appendingPathComponent("curl-small")
            try FileManager.default.createDirectory(at: curlSmall, withIntermediateDirectories: true)
            let config = (0..<smallCount).map { "url = \"\(fixture.url("s/\($0).bin"))\"\noutput = \"\($0).bin\"\n" }.joined()
            let configURL = fixture.directory.url.appendingPathComponent("curl.cfg")
            try config.write(to: configURL, atomically: true, encoding: .utf8)
            sync()
            started = Date()
            try Self.run("/usr/bin/curl", ["-s", "--parallel", "--parallel-max", "16", "--output-dir", curlSmall.path, "-K", configURL.path])
            let curlSmallSeconds = Date().timeIntervalSince(started)
            sync()
            started = Date()
            try Self.run("/usr/bin/curl", ["-s", "-o", outLarge.path, fixture.url("large.bin")])
            let curlLargeSeconds = Date().timeIntervalSince(started)
            started = Date()
            try Self.run("/usr/bin/curl", ["-s", "-o", "/dev/null", fixture.url("large.bin")])
            let curlDiscardSeconds = Date().timeIntervalSince(started)
            report += String(
                format: " | curl: %.0f files/s, %.0f MB/s large, %.0f MB/s to /dev/null | ratio: %.2f× files/s, %.2f× large, %.2f× discarded",
                Double(smallCount) / curlSmallSeconds, Double(largeSize) / 1e6 / curlLargeSeconds,
                Double(largeSize) / 1e6 / curlDiscardSeconds,
                curlSmallSeconds / smallSeconds, curlLargeSeconds / largeSeconds, curlDiscardSeconds / discardSeconds)
        }
        print(report)
    }

    /// A field of /proc/self/status in KiB (0 where unavailable).
    static func memoryKiB(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    static func run(_ executable: String, _ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw TransportError.other(code: Int(p.terminationStatus), reason: "\(executable) failed")
        }
    }
}
