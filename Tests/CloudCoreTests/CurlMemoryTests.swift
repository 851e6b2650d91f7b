import CloudCore
import Foundation
import TestSupport
import XCTest

/// libcurl's per-transfer buffers come from kept blocks once a transfer has given one back, and
/// the bytes that pass through them are intact (real nginx on loopback, plain and over TLS with
/// HTTP/2). The transfers run in a `jobrun-testkit` child, a process like jobrun's whose first
/// libcurl user is `CurlTransport`: in this test process Foundation's networking may have
/// initialised libcurl first, and libcurl takes the memory functions of whoever initialises it.
final class CurlMemoryTests: XCTestCase {
    func testSequentialTransfersReuseTheirBuffersAndKeepTheBytes() throws {
        try checkRounds(tls: false)
    }

    func testTheSameOverTLSWithHTTP2() throws {
        try checkRounds(tls: true)
    }

    private func checkRounds(tls: Bool) throws {
        let directory = TemporaryDirectory(prefix: "jobrun-curl-memory")
        let root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let source = try TransportFixtures.writeLarge("file.bin", size: (3 << 20) + 4099, in: root)
        let certificate = tls ? try TestCertificate.make(in: directory.url) : nil
        let server = try NginxServer.start(serving: root, options: .init(tls: certificate, http2: tls))
        defer { server.stop() }
        // Above 64 KiB a body gets an upload buffer of its own size (up to 512 KiB); a file
        // descriptor destination gets the 64 KiB receive buffer.
        let body = TransportFixtures.bytes((1 << 20) + 77, seed: 5)
        let bodyFile = try TransportFixtures.write(body, "body.bin", in: directory.url)
        let out = directory.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let rounds = 4
        let run = try ChildProcess.run(
            try Products.builtExecutable("jobrun-testkit"),
            ["transfer-rounds", out.path, server.url("file.bin"), server.url("upload/"), bodyFile.path, "\(rounds)"]
                + (certificate.map { [$0.certificate] } ?? []))
        XCTAssertEqual(run.status, 0, run.stderr)
        let expected = try Data(contentsOf: source)
        for round in 0..<rounds {
            XCTAssertTrue(try Data(contentsOf: out.appendingPathComponent("\(round).bin")) == expected, "download \(round)")
            XCTAssertTrue(try Data(contentsOf: root.appendingPathComponent("upload/\(round).bin")) == body, "upload \(round)")
        }
        let lines = run.stdout.split(separator: "\n")
        func value(_ key: String) -> Int? { lines.first { $0.hasPrefix(key + " ") }.flatMap { Int($0.dropFirst(key.count + 1)) } }
        XCTAssertEqual(value("http"), tls ? 2 : 1, run.stdout)
        // After the first round, each download and each upload finds the last one's buffer kept.
        XCTAssertGreaterThanOrEqual(value("reused") ?? -1, 2 * (rounds - 1), run.stdout)
    }
}
