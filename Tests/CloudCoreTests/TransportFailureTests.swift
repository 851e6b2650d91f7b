import CloudCore
import Foundation
import TestSupport
import XCTest

/// Failures and edge cases against raw loopback sockets that misbehave on purpose.
final class TransportFailureTests: XCTestCase {
    func testConnectionRefusedIsAClearRetryableError() async throws {
        // A port that was free a moment ago: nothing listens there.
        let listener = try LoopbackListener { _ in }
        let port = listener.port
        listener.stop()
        let transport = try CurlTransport()
        let error = await assertTransportError { try await transport.get("http://127.0.0.1:\(port)/x") }
        guard case .connectFailed(let url, let reason)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(url.contains("\(port)"))
        XCTAssertFalse(reason.isEmpty)
        XCTAssertEqual(error?.isRetryable, true)
        print("transport: refused error reads: \(error!)")
    }

    func testIdleTimeoutOnServerThatNeverAnswers() async throws {
        let listener = try LoopbackListener { client in
            _ = LoopbackListener.readRequest(client)  // read, then stay silent until the client gives up
            LoopbackListener.waitForClose(client)
        }
        defer { listener.stop() }
        var configuration = TransportConfiguration()
        configuration.idleTimeout = 1
        let transport = try CurlTransport(configuration: configuration)
        let started = Date()
        let error = await assertTransportError { try await transport.get("\(listener.baseURL)/silent") }
        let elapsed = Date().timeIntervalSince(started)
        guard case .timedOut(let kind, _, _)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(kind, .idle)
        XCTAssertEqual(error?.isRetryable, true)
        XCTAssertLessThan(elapsed, 5)
        print("transport: idle timeout after \(String(format: "%.2f", elapsed)) s: \(error!)")
    }

    func testConnectTimeoutWhenTheListenQueueIsFull() async throws {
        // A socket that listens with a backlog of 0 and never accepts: once its queue is full,
        // the kernel drops further SYNs and connect() hangs.
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(s) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(listen(s, 0), 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) }
        }
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fillers.append(c)
        }
        var configuration = TransportConfiguration()
        configuration.connectTimeout = 0.5
        let transport = try CurlTransport(configuration: configuration)
        let started = Date()
        let error = await assertTransportError {
            try await transport.get("http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))/x")
        }
        guard case .timedOut(let kind, _, _)? = error else {
            throw XCTSkip("the kernel did not hold the SYN (got \(String(describing: error))); cannot provoke a connect timeout here")
        }
        XCTAssertEqual(kind, .connect)
        XCTAssertEqual(error?.isRetryable, true)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
        print("transport: connect timeout reads: \(error!)")
    }

    func testTotalTimeoutPerRequest() async throws {
        let listener = try LoopbackListener { client in
            _ = LoopbackListener.readRequest(client)
            // Trickle: headers, then one byte every 100 ms (never idle, never done).
            LoopbackListener.writeAll(client, Data("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".utf8))
            for _ in 0..<100 {
                if !LoopbackListener.writeAll(client, Data("x".utf8)) { break }
                usleep(100_000)
            }
        }
        defer { listener.stop() }
        let transport = try CurlTransport()
        let started = Date()
        let error = await assertTransportError {
            try await transport.send(HTTPRequest(url: "\(listener.baseURL)/trickle", timeout: 0.5))
        }
        guard case .timedOut(let kind, _, _)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(kind, .total)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }

    func testCancellationOfSlowRequestReturnsPromptly() async throws {
        let listener = try LoopbackListener { client in
            _ = LoopbackListener.readRequest(client)
            LoopbackListener.writeAll(client, Data("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".utf8))
            for _ in 0..<200 {
                if !LoopbackListener.writeAll(client, Data(repeating: 1, count: 10)) { break }
                usleep(50_000)
            }
        }
        defer { listener.stop() }
        let transport = try CurlTransport()
        let task = Task { try await transport.get("\(listener.baseURL)/slow") }
        try await Task.sleep(nanoseconds: 300_000_000)
        let cancelled = Date()
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected CancellationError")
        } catch is CancellationError {
            let elapsed = Date().timeIntervalSince(cancelled)
            XCTAssertLessThan(elapsed, 0.5, "cancellation took \(elapsed) s")
            print("transport: cancellation returned after \(String(format: "%.1f", elapsed * 1000)) ms")
        } catch {
            XCTFail("expected CancellationError, got \(error)")
        }

        // Already-cancelled task: fails at once without sending.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.get("\(listener.baseURL)/never")
        }
        do {
            _ = try await early.value
            XCTFail("expected CancellationError")
        } catch is CancellationError {}

        // The transport still works afterwards.
        let again = Task { try await transport.get("\(listener.baseURL)/slow") }
        try await Task.sleep(nanoseconds: 100_000_000)
        again.cancel()
        _ = try? await again.value
    }

    func testDroppedConnectionIsRetryable() async throws {
        let listener = try LoopbackListener { client in
            _ = LoopbackListener.readRequest(client)
            LoopbackListener.writeAll(client, Data("HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n".utf8))
            LoopbackListener.writeAll(client, Data(repeating: 7, count: 1234))
        }
        defer { listener.stop() }
        let transport = try CurlTransport()
        let error = await assertTransportError { try await transport.get("\(listener.baseURL)/cut") }
        guard case .connectionDropped(_, _, let received)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(received, 1234)
        XCTAssertEqual(error?.isRetryable, true)
        print("transport: dropped error reads: \(error!)")
    }

    func testOversizeChunkedBodyWithoutLengthIsRefused() async throws {
        let listener = try LoopbackListener { client in
            _ = LoopbackListener.readRequest(client)
            LoopbackListener.writeAll(client, Data("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8))
            for _ in 0..<64 {
                if !LoopbackListener.writeAll(client, Data(repeating: 3, count: 64 << 10)) { break }
            }
        }
        defer { listener.stop() }
        let transport = try CurlTransport()
        let error = await assertTransportError {
            try await transport.send(HTTPRequest(url: "\(listener.baseURL)/big", destination: .collect(maxSize: 100_000)))
        }
        guard case .tooLarge(let limit, let received)? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(limit, 100_000)
        XCTAssertGreaterThan(received, 100_000)
        XCTAssertLessThan(received, 100_000 + (1 << 20), "refused once the limit was crossed")
    }

    func testPostBodyAndCustomHeadersReachTheServer() async throws {
        let listener = try LoopbackListener { client in
            while let (head, body) = LoopbackListener.readRequest(client) {
                let echo = Data("\(head.split(separator: "\r\n").first ?? "")|\(head.contains("X-Job: 42") ? "header" : "no-header")|".utf8) + body
                let response = "HTTP/1.1 200 OK\r\nContent-Length: \(echo.count)\r\nX-Echo: yes\r\n\r\n"
                if !LoopbackListener.writeAll(client, Data(response.utf8) + echo) { break }
            }
        }
        defer { listener.stop() }
        let transport = try CurlTransport()
        let body = TransportFixtures.bytes(200_000, seed: 3)
        let response = try await transport.send(
            HTTPRequest(
                url: "\(listener.baseURL)/api/upload.saveFilePart", method: .post,
                headers: [HTTPHeader("X-Job", "42"), HTTPHeader("Content-Type", "application/octet-stream")],
                body: .data(body)))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("x-echo"), "yes")
        let prefix = Data("POST /api/upload.saveFilePart HTTP/1.1|header|".utf8)
        XCTAssertTrue(response.body.prefix(prefix.count) == prefix, String(decoding: response.body.prefix(80), as: UTF8.self))
        XCTAssertTrue(response.body.dropFirst(prefix.count) == body)

        // Empty POST body (no stdin read, no hang).
        let empty = try await transport.send(HTTPRequest(url: "\(listener.baseURL)/api/x", method: .post, timeout: 5))
        XCTAssertEqual(empty.status, 200)
        XCTAssertEqual(empty.newConnections, 0, "keep-alive connection reused")
    }

    func testInvalidURLIsRejected() async throws {
        let transport = try CurlTransport()
        let error = await assertTransportError { try await transport.get("ftp://127.0.0.1/x") }
        guard case .invalidRequest? = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertEqual(error?.isRetryable, false)
    }

    func testGlobalBandwidthLimitIsShared() async throws {
        // 4 × 100 KB at a global 400 KB/s should take about 1 s, not 0.25 s.
        let payload = Data(repeating: 5, count: 100_000)
        let listener = try LoopbackListener { client in
            while LoopbackListener.readRequest(client) != nil {
                let head = "HTTP/1.1 200 OK\r\nContent-Length: \(payload.count)\r\n\r\n"
                if !LoopbackListener.writeAll(client, Data(head.utf8) + payload) { break }
            }
        }
        defer { listener.stop() }
        var configuration = TransportConfiguration()
        configuration.maxReceiveBytesPerSecond = 400_000
        let transport = try CurlTransport(configuration: configuration)
        let started = Date()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<4 { group.addTask { try await transport.get("\(listener.baseURL)/\(i)").body.count } }
            for try await count in group { XCTAssertEqual(count, 100_000) }
        }
        let elapsed = Date().timeIntervalSince(started)
        print("transport: 400 KB under a 400 KB/s global limit took \(String(format: "%.2f", elapsed)) s")
        XCTAssertGreaterThan(elapsed, 0.6)
    }
}
