import CloudCore
import Foundation
import TestSupport
import XCTest

/// TLS verification and HTTP/2 against nginx with a throwaway certificate.
final class TransportTLSTests: XCTestCase {
    func testTLSIsVerifiedByDefaultAndHTTP2Multiplexes() async throws {
        let directory = TemporaryDirectory(prefix: "jobrun-tls")
        let certificate = try TestCertificate.make(in: directory.url)
        let root = directory.url.appendingPathComponent("www")
        let payloads = (0..<50).map { TransportFixtures.bytes(20_000 + $0 * 100, seed: UInt64($0)) }
        for (i, payload) in payloads.enumerated() { try TransportFixtures.write(payload, "f\(i).bin", in: root) }
        let server = try NginxServer.start(serving: root, options: .init(tls: certificate, http2: true))
        defer { server.stop() }

        // Default configuration: the self-signed certificate is refused.
        let strict = try CurlTransport()
        let error = await assertTransportError { try await strict.get(server.url("f0.bin")) }
        guard case .tls? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(error?.isRetryable, false)
        print("transport: untrusted certificate error reads: \(error!)")

        // Trusting the test CA: HTTP/2, and concurrent requests share one connection.
        var configuration = TransportConfiguration()
        configuration.caFile = certificate.certificate
        let transport = try CurlTransport(configuration: configuration)
        let first = try await transport.get(server.url("f0.bin"))
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.httpVersion, 2)
        XCTAssertTrue(first.body == payloads[0])
        let results = try await withThrowingTaskGroup(of: (Bool, Int).self) { group in
            for i in 0..<payloads.count {
                group.addTask {
                    let r = try await transport.get(server.url("f\(i).bin"))
                    return (r.body == payloads[i] && r.httpVersion == 2, r.newConnections)
                }
            }
            var all: [(Bool, Int)] = []
            for try await r in group { all.append(r) }
            return all
        }
        XCTAssertTrue(results.allSatisfy(\.0), "all byte-equal over HTTP/2")
        let connections = results.map(\.1).reduce(0, +)
        XCTAssertLessThanOrEqual(connections, 1, "HTTP/2 multiplexes over the existing connection")
    }

    func testCleartextHTTP2WithPriorKnowledge() async throws {
        let directory = TemporaryDirectory(prefix: "jobrun-h2c")
        let root = directory.url.appendingPathComponent("www")
        let payload = TransportFixtures.bytes(500_000, seed: 11)
        try TransportFixtures.write(payload, "a.bin", in: root)
        let server = try NginxServer.start(serving: root, options: .init(http2: true))
        defer { server.stop() }
        var configuration = TransportConfiguration()
        configuration.httpVersion = .http2PriorKnowledge
        let transport = try CurlTransport(configuration: configuration)
        let r = try await transport.get(server.url("a.bin"), range: HTTPRange(offset: 4096, length: 100_000))
        XCTAssertEqual(r.status, 206)
        XCTAssertEqual(r.httpVersion, 2)
        XCTAssertTrue(r.body == payload.subdata(in: 4096..<104_096))
    }
}
