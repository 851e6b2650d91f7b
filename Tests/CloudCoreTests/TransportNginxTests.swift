import CloudCore
import Foundation
import Synchronization
import TestSupport
import XCTest

/// The libcurl transport against a real nginx on loopback (skipped where nginx is absent).
final class TransportNginxTests: XCTestCase {
    var fixture: NginxFixture!
    var transport: CurlTransport!
    let file = TransportFixtures.bytes(3 << 20 + 12345, seed: 7)

    override func setUpWithError() throws {
        let file = self.file
        fixture = try NginxFixture(options: .init(extraServerConfig: "location = /moved { return 302 /file.bin; }")) { root in
            try TransportFixtures.write(file, "file.bin", in: root)
            try TransportFixtures.write(Data(), "empty.bin", in: root)
        }
        transport = try CurlTransport()
    }

    override func tearDown() {
        transport = nil
        fixture?.stop()
        fixture = nil
    }

    func testGetWholeFileIsByteEqual() async throws {
        let response = try await transport.get(fixture.url("file.bin"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.body.count, file.count)
        XCTAssertTrue(response.body == file, "body differs from the served file")
        XCTAssertEqual(response.bytesReceived, Int64(file.count))
        XCTAssertEqual(response.header("content-length"), String(file.count))
        XCTAssertEqual(response.httpVersion, 1)

        let empty = try await transport.get(fixture.url("empty.bin"))
        XCTAssertEqual(empty.status, 200)
        XCTAssertEqual(empty.body.count, 0)
    }

    func testRedirectIsFollowedAndHeadersAreTheFinalResponses() async throws {
        let response = try await transport.get(fixture.url("moved"))
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(response.effectiveURL.hasSuffix("/file.bin"), response.effectiveURL)
        XCTAssertNil(response.header("Location"), "headers of the 302 were dropped")
        XCTAssertTrue(response.body == file)
    }

    func testSinkErrorAbortsTheTransferAndIsRethrown() async throws {
        struct Stop: Error {}
        do {
            _ = try await transport.send(HTTPRequest(url: fixture.url("file.bin"), destination: .sink(maxLength: nil) { _ in throw Stop() }))
            XCTFail("expected the sink's error")
        } catch is Stop {}
        // The transport is still usable.
        let after = try await transport.get(fixture.url("empty.bin"))
        XCTAssertEqual(after.status, 200)
    }

    func testNotFoundIsAStatusNotAnError() async throws {
        let response = try await transport.get(fixture.url("missing.bin"))
        XCTAssertEqual(response.status, 404)
        XCTAssertFalse(response.isSuccess)
    }

    func testRangeRequestAnswers206WithContentRange() async throws {
        let range = HTTPRange(offset: 1 << 20, length: 4096)
        let response = try await transport.get(fixture.url("file.bin"), range: range)
        XCTAssertEqual(response.status, 206)
        XCTAssertTrue(response.body == file.subdata(in: (1 << 20)..<((1 << 20) + 4096)))
        let contentRange = try XCTUnwrap(response.contentRange)
        XCTAssertEqual(contentRange.first, 1 << 20)
        XCTAssertEqual(contentRange.last, (1 << 20) + 4095)
        XCTAssertEqual(contentRange.total, Int64(file.count))

        // Open-ended: from an offset to the end.
        let tail = try await transport.get(fixture.url("file.bin"), range: HTTPRange(first: Int64(file.count - 100)))
        XCTAssertEqual(tail.status, 206)
        XCTAssertTrue(tail.body == file.suffix(100))
    }

    func testHeadReturnsHeadersWithoutBody() async throws {
        let response = try await transport.send(HTTPRequest(url: fixture.url("file.bin"), method: .head))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Content-Length"), String(file.count))
        XCTAssertEqual(response.body.count, 0)
        XCTAssertEqual(response.bytesReceived, 0)
    }

    func testManyConcurrentSmallFilesReuseConnections() async throws {
        let transport = self.transport!
        let fixture = self.fixture!
        for i in 0..<500 {
            try TransportFixtures.write(TransportFixtures.bytes(1_000 + i * 37, seed: UInt64(100 + i)), "small/\(i).bin", in: fixture.root)
        }
        let started = Date()
        let results = try await withThrowingTaskGroup(of: (Int, Bool, Int).self) { group in
            var results: [(Int, Bool, Int)] = []
            var next = 0
            func add() {
                let i = next
                next += 1
                group.addTask {
                    let r = try await transport.get(fixture.url("small/\(i).bin"))
                    let expected = TransportFixtures.bytes(1_000 + i * 37, seed: UInt64(100 + i))
                    return (i, r.status == 200 && r.body == expected, r.newConnections)
                }
            }
            for _ in 0..<16 { add() }
            while let result = try await group.next() {
                results.append(result)
                if next < 500 { add() }
            }
            return results
        }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(results.count, 500)
        XCTAssertEqual(results.filter { !$0.1 }.map(\.0), [], "files not byte-equal")
        let connections = results.map(\.2).reduce(0, +)
        print("transport: 500 small files, 16 in flight: \(String(format: "%.0f", 500 / elapsed)) files/s, \(connections) connections opened")
        XCTAssertLessThanOrEqual(connections, 32, "connections should be reused (≤ 16 per host plus slack)")
        XCTAssertGreaterThan(connections, 0)
    }

    func testCancellationStormLeavesTransportHealthy() async throws {
        let transport = self.transport!
        let url = fixture.url("file.bin")
        let expected = file.count
        // 200 requests, 16 at a time; every third is cancelled after a random short delay.
        var completed = 0, cancelled = 0
        try await withThrowingTaskGroup(of: Bool?.self) { group in
            for i in 0..<200 {
                if i >= 16, let r = try await group.next() { if let r { r ? (completed += 1) : () } else { cancelled += 1 } }
                group.addTask {
                    let task = Task { try await transport.get(url) }
                    if i % 3 == 0 {
                        try? await Task.sleep(nanoseconds: UInt64.random(in: 0...3_000_000))
                        task.cancel()
                    }
                    do {
                        return try await task.value.body.count == expected
                    } catch is CancellationError {
                        return nil
                    }
                }
            }
            for try await r in group { if let r { r ? (completed += 1) : () } else { cancelled += 1 } }
        }
        XCTAssertEqual(completed + cancelled, 200, "every request either completed intact or was cancelled")
        XCTAssertGreaterThan(cancelled, 0)
        print("transport: cancellation storm: \(completed) completed, \(cancelled) cancelled")
        let after = try await transport.get(url)
        XCTAssertTrue(after.body == file)
    }

    func testStreamToFileDescriptorAtOffset() async throws {
        let out = fixture.directory.url.appendingPathComponent("out.bin")
        let fd = try openScratchFile(out)
        defer { close(fd) }
        let prefix = Data(repeating: 0xAB, count: 1000)
        _ = prefix.withUnsafeBytes { pwrite(fd, $0.baseAddress, 1000, 0) }

        // Whole file at offset 1000, then a range of it again at the end.
        let whole = try await transport.download(fixture.url("file.bin"), to: fd, at: 1000)
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.bytesReceived, Int64(file.count))
        XCTAssertEqual(whole.body.count, 0, "streamed body must not be buffered")
        let range = HTTPRange(offset: 5000, length: 70_000)
        let part = try await transport.download(fixture.url("file.bin"), range: range, to: fd, at: Int64(1000 + file.count))
        XCTAssertEqual(part.status, 206)

        let written = try Data(contentsOf: out)
        XCTAssertEqual(written.count, 1000 + file.count + 70_000)
        XCTAssertTrue(written.prefix(1000) == prefix, "bytes before the offset were touched")
        XCTAssertTrue(written.subdata(in: 1000..<(1000 + file.count)) == file)
        XCTAssertTrue(written.suffix(70_000) == file.subdata(in: 5000..<75_000))
    }

    func testErrorStatusIsNotWrittenToFileDescriptor() async throws {
        let out = fixture.directory.url.appendingPathComponent("out404.bin")
        let fd = try openScratchFile(out)
        defer { close(fd) }
        let response = try await transport.download(fixture.url("missing.bin"), to: fd, at: 0)
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(try Data(contentsOf: out).count, 0)
        XCTAssertTrue(String(decoding: response.body, as: UTF8.self).contains("404"), "error body kept for diagnostics")

        // An error page longer than the part's maxLength still comes back as its status.
        let short = try await transport.download(fixture.url("missing.bin"), to: fd, at: 0, maxLength: 10)
        XCTAssertEqual(short.status, 404)
        XCTAssertEqual(try Data(contentsOf: out).count, 0)
    }

    func testSinkReceivesBytesInOrder() async throws {
        final class Collector: @unchecked Sendable {  // only touched on the transport thread, then after send returns
            var data = Data()
        }
        let collector = Collector()
        let response = try await transport.send(
            HTTPRequest(
                url: fixture.url("file.bin"), destination: .sink(maxLength: nil) { collector.data.append(contentsOf: $0) }))
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(collector.data == file)
    }

    /// Answers streamed to a sink are spread over the streaming threads (each a libcurl loop of
    /// its own); one thread when only one is asked for, or when a bandwidth limit must be shared
    /// exactly. nginx sends slowly here, so that all six answers are in flight at once.
    func testStreamedAnswersAreSpreadOverTheStreamingThreads() async throws {
        let body = TransportFixtures.bytes(512 << 10, seed: 11)
        let slow = try NginxFixture(options: .init(extraServerConfig: "location = /slow.bin { limit_rate 2m; sendfile_max_chunk 32k; }")) { root in
            try TransportFixtures.write(body, "slow.bin", in: root)
        }
        defer { slow.stop() }
        final class Threads: Sendable {
            let seen = Mutex<Set<UInt>>([])
        }
        let url = slow.url("slow.bin")
        func threadsUsed(_ configure: (inout TransportConfiguration) -> Void) async throws -> Int {
            var configuration = TransportConfiguration()
            configure(&configuration)
            let transport = try CurlTransport(configuration: configuration)
            let threads = Threads()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        let received = Mutex(Data())
                        let response = try await transport.send(
                            HTTPRequest(
                                url: url,
                                destination: .sink(maxLength: nil) { bytes in
                                    threads.seen.withLock { _ = $0.insert(UInt(pthread_self())) }
                                    received.withLock { $0.append(contentsOf: bytes) }
                                }))
                        XCTAssertEqual(response.status, 200)
                        XCTAssertTrue(received.withLock { $0 == body }, "every answer arrives whole and in order")
                    }
                }
                try await group.waitForAll()
            }
            return threads.seen.withLock { $0.count }
        }
        let spread = try await threadsUsed { $0.streamingThreads = 2 }
        XCTAssertEqual(spread, 2)
        let single = try await threadsUsed { $0.streamingThreads = 1 }
        XCTAssertEqual(single, 1)
        let limited = try await threadsUsed {
            $0.streamingThreads = 2
            $0.maxReceiveBytesPerSecond = 64 << 20
        }
        XCTAssertEqual(limited, 1, "a bandwidth limit keeps every transfer on one thread")
    }

    func testMaxBodySizeIsEnforced() async throws {
        // Declared Content-Length above the limit: refused before buffering.
        let error = await assertTransportError {
            try await self.transport.send(HTTPRequest(url: self.fixture.url("file.bin"), destination: .collect(maxSize: 1 << 20)))
        }
        guard case .tooLarge(let limit, let received)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(limit, 1 << 20)
        XCTAssertEqual(received, Int64(file.count))
        XCTAssertEqual(error?.isRetryable, false)
        print("transport: oversize error reads: \(error!)")

        // Stream with a maximum length.
        let out = fixture.directory.url.appendingPathComponent("limited.bin")
        let fd = try openScratchFile(out)
        defer { close(fd) }
        let streamError = await assertTransportError {
            try await self.transport.download(self.fixture.url("file.bin"), to: fd, at: 0, maxLength: 4096)
        }
        guard case .tooLarge? = streamError else { return XCTFail("got \(String(describing: streamError))") }

        // A limit equal to the size passes.
        let ok = try await transport.send(HTTPRequest(url: fixture.url("file.bin"), destination: .collect(maxSize: file.count)))
        XCTAssertEqual(ok.body.count, file.count)
    }

    func testPutDataAndFileRegionToNginxDAV() async throws {
        let body = TransportFixtures.bytes(300_000, seed: 99)
        let put = try await transport.send(HTTPRequest(url: fixture.url("upload/a.bin"), method: .put, body: .data(body)))
        XCTAssertTrue([200, 201, 204].contains(put.status), "status \(put.status)")
        XCTAssertTrue(try Data(contentsOf: fixture.root.appendingPathComponent("upload/a.bin")) == body)

        // A region of a file, read while sending.
        let source = try TransportFixtures.write(file, "source.bin", in: fixture.directory.url)
        let fd = open(source.path, O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let region = try await transport.send(
            HTTPRequest(
                url: fixture.url("upload/b.bin"), method: .put, body: .fileRegion(fd: fd, offset: 1 << 20, length: 1 << 20)))
        XCTAssertTrue([200, 201, 204].contains(region.status), "status \(region.status)")
        let stored = try Data(contentsOf: fixture.root.appendingPathComponent("upload/b.bin"))
        XCTAssertTrue(stored == file.subdata(in: (1 << 20)..<(2 << 20)))

        // And the uploaded file reads back through GET.
        let back = try await transport.get(fixture.url("upload/b.bin"))
        XCTAssertTrue(back.body == stored)

        let delete = try await transport.send(HTTPRequest(url: fixture.url("upload/a.bin"), method: .delete))
        XCTAssertEqual(delete.status, 204)
    }

    func testUploadBandwidthLimit() async throws {
        var configuration = TransportConfiguration()
        configuration.maxSendBytesPerSecond = 1_000_000
        let limited = try CurlTransport(configuration: configuration)
        let body = TransportFixtures.bytes(1_000_000, seed: 5)
        let started = Date()
        let put = try await limited.send(HTTPRequest(url: fixture.url("upload/limited.bin"), method: .put, body: .data(body)))
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertTrue([200, 201, 204].contains(put.status), "status \(put.status)")
        XCTAssertTrue(try Data(contentsOf: fixture.root.appendingPathComponent("upload/limited.bin")) == body)
        print("transport: 1 MB upload under a 1 MB/s send limit took \(String(format: "%.2f", elapsed)) s")
        XCTAssertGreaterThan(elapsed, 0.7)
    }

    func testRangeIgnoredByServerIsRefused() async throws {
        // nginx ignores a Range on a response it has to generate: use a location that returns a body.
        fixture.stop()
        fixture = try NginxFixture(options: .init(extraServerConfig: "location = /generated { return 200 'abcdefghijklmnopqrstuvwxyz'; }"))
        let error = await assertTransportError {
            try await self.transport.get(self.fixture.url("generated"), range: HTTPRange(first: 5, last: 9))
        }
        guard case .rangeIgnored? = error else { return XCTFail("got \(String(describing: error))") }
    }
}
