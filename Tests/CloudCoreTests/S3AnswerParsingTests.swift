import CloudCore
import Foundation
import TestSupport
import XCTest

/// The client's reading of S3 answers, from a loopback server that answers exactly what each
/// test needs: escaped and CDATA keys, a malformed document, and `SlowDown` retried.
final class S3AnswerParsingTests: XCTestCase {
    /// Answers every request with the next of `answers` (status, body), counting requests.
    private final class ScriptedServer: @unchecked Sendable {
        private let lock = NSLock()
        private var answers: [(Int, String)]
        private(set) var requests = 0
        var listener: LoopbackListener!

        init(_ answers: [(Int, String)]) throws {
            self.answers = answers
            listener = try LoopbackListener { [unowned self] fd in self.serve(fd) }
        }

        private func next() -> (Int, String) {
            lock.lock()
            defer { lock.unlock() }
            requests += 1
            return answers.count > 1 ? answers.removeFirst() : answers[0]
        }

        var count: Int {
            lock.lock()
            defer { lock.unlock() }
            return requests
        }

        private func serve(_ fd: Int32) {
            var request = [UInt8]()
            var byte: UInt8 = 0
            while read(fd, &byte, 1) == 1 {
                request.append(byte)
                if request.count >= 4 && request.suffix(4) == [13, 10, 13, 10] { break }
            }
            let (status, body) = next()
            let head = "HTTP/1.1 \(status) X\r\nContent-Type: application/xml\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
            let bytes = Array((head + body).utf8)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }

    private func client(_ server: ScriptedServer) throws -> S3Client {
        S3Client(
            transport: try CurlTransport(), bucket: S3Bucket(endpoint: server.listener.baseURL, name: "scripted-bucket"),
            credentials: S3Credentials(accessKeyId: "AKID", secretAccessKey: "secret"),
            retryPolicy: CloudRetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.02))
    }

    func testEscapedAndCDATAKeysAreDecoded() async throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <IsTruncated>false</IsTruncated>
              <Contents><Key>a&amp;b &lt;c&gt; &#x263A;&#65;</Key><Size>12</Size><ETag>&quot;e1&quot;</ETag><LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents>
              <Contents><Key><![CDATA[x&y<z>]]></Key><Size>3</Size></Contents>
              <Contents><Owner/><Key>plain</Key></Contents>
            </ListBucketResult>
            """
        let server = try ScriptedServer([(200, body)])
        defer { server.listener.stop() }
        let page = try await client(server).listObjects()
        XCTAssertEqual(page.objects.map(\.key), ["a&b <c> ☺A", "x&y<z>", "plain"])
        XCTAssertEqual(page.objects.first?.eTag, "\"e1\"")
        XCTAssertEqual(page.objects.first?.size, 12)
        XCTAssertNil(page.nextContinuationToken)
    }

    func testMalformedAnswerIsAClearError() async throws {
        let server = try ScriptedServer([(200, "<ListBucketResult><Contents><Key>k</Key>")])
        defer { server.listener.stop() }
        do {
            _ = try await client(server).listObjects()
            XCTFail("a truncated document must not parse")
        } catch let error as S3Error {
            guard case .malformedAnswer = error.reason else { return XCTFail("\(error)") }
            XCTAssertTrue(error.description.contains("scripted-bucket") && error.description.contains("ListObjectsV2"), error.description)
        }
        let truncatedWithoutToken = try ScriptedServer([(200, "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>")])
        defer { truncatedWithoutToken.listener.stop() }
        do {
            _ = try await client(truncatedWithoutToken).listAllObjects()
            XCTFail("a truncated page without a token would loop")
        } catch let error as S3Error {
            XCTAssertTrue(error.description.contains("NextContinuationToken"), error.description)
        }
    }

    func testSlowDownIsRetriedAndOtherErrorsAreNot() async throws {
        let slow = "<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>"
        let server = try ScriptedServer([(503, slow), (503, slow), (200, "")])
        defer { server.listener.stop() }
        try await client(server).putObject("k", body: .data(Data("x".utf8)))
        XCTAssertEqual(server.count, 3, "two SlowDown answers, then success")

        let denied = try ScriptedServer([(403, "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")])
        defer { denied.listener.stop() }
        do {
            try await client(denied).deleteObject("k")
            XCTFail("AccessDenied must fail")
        } catch let error as S3Error {
            XCTAssertEqual(error.code, "AccessDenied")
            XCTAssertEqual(denied.count, 1, "not retried")
            XCTAssertEqual(error.description, "S3 DeleteObject failed for bucket scripted-bucket, key k: AccessDenied (HTTP 403): Access Denied")
        }
    }
}
