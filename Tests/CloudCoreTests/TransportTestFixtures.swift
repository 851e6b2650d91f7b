import CloudCore
import Foundation
import TestSupport
import XCTest

/// Files on disk for transport tests, with deterministic pseudo-random content.
enum TransportFixtures {
    /// `count` bytes from a seeded xorshift generator (fast; not all zeros, so offsets matter).
    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { raw in
            var x = seed &* 0x9E37_79B9_7F4A_7C15 | 1
            let words = count / 8
            let p = raw.baseAddress!
            for i in 0..<words {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17
                p.storeBytes(of: x, toByteOffset: i * 8, as: UInt64.self)
            }
            for i in (words * 8)..<count {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17
                p.storeBytes(of: UInt8(truncatingIfNeeded: x), toByteOffset: i, as: UInt8.self)
            }
        }
        return data
    }

    /// Writes `data` to `directory/name`.
    @discardableResult
    static func write(_ data: Data, _ name: String, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
        return url
    }

    /// Creates a file of `size` bytes without holding it in memory (1 MiB chunks).
    static func writeLarge(_ name: String, size: Int, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written = 0
        var seed: UInt64 = 1
        while written < size {
            let n = min(1 << 20, size - written)
            try handle.write(contentsOf: bytes(n, seed: seed))
            seed += 1
            written += n
        }
        return url
    }
}

/// A scratch directory with nginx serving it; both cleaned up by `stop()`.
final class NginxFixture: Sendable {
    let directory: TemporaryDirectory
    let root: URL
    let server: NginxServer

    init(options: NginxServer.Options = .init(), prepare: (URL) throws -> Void = { _ in }) throws {
        directory = TemporaryDirectory(prefix: "jobrun-transport")
        root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try prepare(root)
        server = try NginxServer.start(serving: root, options: options)
    }

    func url(_ path: String) -> String { server.url(path) }

    func stop() {
        server.stop()

    }
}

/// Opens `path` for reading and writing (created/truncated), returns the fd.
func openScratchFile(_ url: URL) throws -> Int32 {
    let fd = open(url.path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    return fd
}

/// Asserts that `body` throws a `TransportError` and returns it.
func assertTransportError<T>(
    _ body: () async throws -> T, file: StaticString = #filePath, line: UInt = #line
) async -> TransportError? {
    do {
        _ = try await body()
        XCTFail("expected a TransportError, got success", file: file, line: line)
    } catch let error as TransportError {
        return error
    } catch {
        XCTFail("expected a TransportError, got \(type(of: error)): \(error)", file: file, line: line)
    }
    return nil
}
