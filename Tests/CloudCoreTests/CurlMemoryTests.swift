import CloudCore
import Foundation
import TestSupport
import XCTest

/// libcurl's per-transfer buffers come from kept blocks once a transfer has given one back, and
/// the bytes that pass through them are intact (real nginx on loopback). The transfers run in a
/// `jobrun-testkit` child, a process like jobrun's whose first libcurl user is `CurlTransport`:
/// in this test process Foundation's networking may have initialised libcurl first, and libcurl
/// takes the memory functions of whoever initialises it.
final class CurlMemoryTests: XCTestCase {
    func testSequentialTransfersReuseTheirBuffersAndKeepTheBytes() throws {
        let size = (3 << 20) + 4099
        let fixture = try NginxFixture { root in _ = try TransportFixtures.writeLarge("file.bin", size: size, in: root) }
        defer { fixture.stop() }
        let expected = try Data(contentsOf: fixture.root.appendingPathComponent("file.bin"))
        // Above 64 KiB a body gets an upload buffer of its own size (up to 512 KiB); a file
        // descriptor destination gets the 256 KiB receive buffer.
        let body = TransportFixtures.bytes((1 << 20) + 77, seed: 5)
        let bodyFile = try TransportFixtures.write(body, "body.bin", in: fixture.directory.url)
        let out = fixture.directory.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let rounds = 4
        let run = try ChildProcess.run(
            try Products.builtExecutable("jobrun-testkit"),
            ["transfer-rounds", out.path, fixture.url("file.bin"), fixture.url("upload/"), bodyFile.path, "\(rounds)"])
        XCTAssertEqual(run.status, 0, run.stderr)
        for round in 0..<rounds {
            XCTAssertTrue(try Data(contentsOf: out.appendingPathComponent("\(round).bin")) == expected, "download \(round)")
            XCTAssertTrue(try Data(contentsOf: fixture.root.appendingPathComponent("upload/\(round).bin")) == body, "upload \(round)")
        }
        // After the first round, each download and each upload finds the last one's buffer kept.
        let reused = run.stdout.split(separator: "\n").first { $0.hasPrefix("reused ") }.flatMap { Int($0.dropFirst(7)) }
        XCTAssertGreaterThanOrEqual(reused ?? -1, 2 * (rounds - 1), run.stdout)
    }
}
