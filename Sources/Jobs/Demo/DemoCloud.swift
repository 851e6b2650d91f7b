import CloudCore
import CloudProtocol
import Foundation

/// The demo's cloud: the `cloudd` executable built beside `jobrun`, started as a child process on
/// loopback ports with a small seeded dataset, and the admin calls the demo makes on it (expire
/// every reference, read and reset the per-parent counters). Nothing here links the server.
final class DemoCloud: @unchecked Sendable {
    /// What `cloudd` prints on its first line when it is ready.
    struct Ready: Decodable {
        let dcs: [DcOption]
        let cdn: DcOption
        let admin: String
    }

    /// How long the demo cloud's file references live, in seconds.
    static let referenceTTL: Int64 = 3600

    let ready: Ready
    private let process: Process
    private let transport: CurlTransport

    /// Starts `cloudd` and waits (at most 60 s) for its ready line.
    init(seed: UInt64, uploadDirectory: String) throws {
        let executable = Self.executableBesideThisOne("cloudd")
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw DemoError("the demo needs the cloudd executable beside jobrun (\(executable)): build it with `swift build --product cloudd`")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--port-base", "0", "--seed", String(seed), "--peers", "8", "--messages-per-peer", "40",
            "--max-media-size", "4MiB", "--reference-ttl", String(Self.referenceTTL), "--upload-dir", uploadDirectory,
        ]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let line = Self.firstLine(of: stdout.fileHandleForReading),
            let parsed = try? JSONDecoder().decode(Ready.self, from: Data(line.utf8))
        else {
            process.terminate()
            throw DemoError("cloudd did not start (\(executable))")
        }
        ready = parsed
        transport = try CurlTransport()
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// `account-<id>/config.yaml` text for this cloud.
    var accountConfig: String {
        "datacenters:\n" + ready.dcs.map { "  \($0.id): \($0.url)\n" }.joined() + "cdn: \(ready.cdn.url)\nmainDc: 1\n"
    }

    func fileCount() async throws -> Int { try await admin("dataset", as: DatasetListing.self).files.count }
    func counters() async throws -> CountersResponse { try await admin("counters", as: CountersResponse.self) }
    func resetCounters() async throws { _ = try await admin("counters/reset", body: Data("{}".utf8), as: OkResponse.self) }
    func expireReferences() async throws {
        _ = try await admin("references/expire", body: try JSONEncoder().encode(ExpireReferencesRequest()), as: OkResponse.self)
    }

    private func admin<T: Decodable>(_ path: String, body: Data? = nil, as type: T.Type) async throws -> T {
        var request = HTTPRequest(url: ready.admin + "/admin/" + path)
        if let body {
            request.method = .post
            request.body = .data(body)
            request.headers = [HTTPHeader("Content-Type", "application/json")]
        }
        let response = try await transport.send(request)
        guard response.status == 200 else { throw DemoError("cloudd admin \(path) answered \(response.status)") }
        return try JSONDecoder().decode(T.self, from: response.body)
    }

    private static func firstLine(of handle: FileHandle) -> String? {
        var data = Data()
        while !data.contains(UInt8(ascii: "\n")) {
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            data.append(chunk)
        }
        return String(decoding: data.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    private static func executableBesideThisOne(_ name: String) -> String {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent(name).path
    }
}

/// Why the demo could not run.
struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
