import CloudProtocol
import Foundation
import Postbox
import TestSupport
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real `cloudd` child process (started by `ClouddProcess`) for the upload integration tests,
/// with blocking JSON helpers for its upload and admin endpoints.
final class UploadCloudd: @unchecked Sendable {
    let cloud: ClouddProcess
    let dcs: [String]
    let uploadDirectory: String
    var process: ChildProcess { cloud.process }

    convenience init(uploadDirectory: String) throws {
        try self.init(
            cloud: ClouddProcess(["--seed", "3", "--dcs", "2", "--cdn-fraction", "0", "--upload-dir", uploadDirectory]), uploadDirectory: uploadDirectory)
    }

    /// Wraps a `cloudd` started with `--upload-dir uploadDirectory`.
    init(cloud: ClouddProcess, uploadDirectory: String) {
        self.uploadDirectory = uploadDirectory
        self.cloud = cloud
        dcs = cloud.ready.dcs.sorted { $0.id < $1.id }.map(\.url)
    }

    func stop() { cloud.stop() }

    /// The account `config.yaml` pointing at this server.
    var accountConfig: String {
        "datacenters:\n" + dcs.enumerated().map { "  \($0.offset + 1): \($0.element)" }.joined(separator: "\n") + "\nrequestTimeout: 60\n"
    }

    /// One blocking HTTP exchange (status, body).
    func http(_ url: String, method: String = "GET", body: Data? = nil) throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: (Int, Data)?
        nonisolated(unsafe) var failure: Error?
        URLSession.shared.dataTask(with: request) { data, response, error in
            if let error { failure = error } else { result = ((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()) }
            done.signal()
        }.resume()
        done.wait()
        if let failure { throw failure }
        return result!
    }

    func get<T: Decodable>(_ path: String, as type: T.Type) throws -> T {
        let (status, data) = try http(dcs[0] + path)
        guard status == 200 else { throw NSError(domain: "cloudd", code: status, userInfo: [NSLocalizedDescriptionKey: String(decoding: data, as: UTF8.self)]) }
        return try JSONDecoder().decode(T.self, from: data)
    }

    /// Server-side state of an upload (nil if it never saw a part of it).
    func uploadInfo(_ fileId: Int64) -> UploadInfo? { try? get("/admin/uploads/\(fileId)", as: UploadInfo.self) }

    func receipts(_ fileId: Int64) -> [Int: Int] {
        guard let info = uploadInfo(fileId) else { return [:] }
        return Dictionary(uniqueKeysWithValues: info.partReceipts.map { (Int($0.key)!, $0.value) })
    }

    func fileInfo(_ id: Int64) throws -> FileInfo { try get("/admin/files/\(id)", as: FileInfo.self) }

    /// Messages in `peer`'s newest 100 that carry `randomId`.
    func messageCount(peer: Int64, randomId: Int64) throws -> Int {
        let body = try JSONEncoder().encode(GetHistoryRequest(peerId: peer, limit: 100))
        let (status, data) = try http(dcs[0] + "/api/messages.getHistory", method: "POST", body: body)
        XCTAssertEqual(status, 200)
        return try JSONDecoder().decode(MessagesResponse.self, from: data).messages.filter { $0.randomId == randomId }.count
    }

    func peers() throws -> [Int64] { try get("/admin/dataset", as: DatasetListing.self).peers.map(\.id) }
}

extension JobrunHarness {
    /// Account 0's `config.yaml` for `cloud`.
    func configure(_ cloud: UploadCloudd) throws {
        let dir = root + "/account-0"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try cloud.accountConfig.write(toFile: dir + "/config.yaml", atomically: true, encoding: .utf8)
    }

    /// An `upload-queue` job file.
    func writeUploadJob(_ name: String, policy: String = "Forbid", params: String = "") throws {
        try writeJob(
            name,
            """
            name: \(name)
            kind: upload-queue
            schedule: "*/5 * * * *"
            timeout: 10m
            retry:
              backoffLimit: 0
            concurrencyPolicy: \(policy)
            params:
              concurrency: 2
              itemBackoff: 0s
              leaseDuration: 30s
            \(params)
            """)
    }

    /// `jobrun enqueue-upload … --json`; the queued item id, or the failed exit status and stderr.
    func enqueue(_ file: String, peer: Int64, extra: [String] = []) throws -> Result<Int64, EnqueueFailure> {
        let r = try run(["enqueue-upload", file, "--peer", String(peer), "--json"] + extra)
        guard r.status == 0 else { return .failure(EnqueueFailure(status: r.status, stderr: r.stderr)) }
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        return .success(Int64(object?["item"] as? Int ?? -1))
    }

    /// The upload queue as the last commit left it (read-only, never blocks a writer).
    func uploadItems() throws -> [UploadItem] {
        let postbox = try accountPostbox()
        return try postbox.readSync { tx in
            var out: [UploadItem] = []
            try tx.uploadQueue.scan {
                out.append($0); return true
            }
            return out
        }
    }

    func acknowledgedParts(_ item: Int64) throws -> Set<Int> {
        let postbox = try accountPostbox()
        return Set(try postbox.readSync { try $0.uploadQueue.acknowledgedParts(item: item) }.map(Int.init))
    }

    /// Counters of a `jobrun run … --json` answer.
    static func counters(_ stdout: String) -> [String: Int] {
        guard let line = stdout.split(separator: "\n").last,
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else { return [:] }
        return object["counters"] as? [String: Int] ?? [:]
    }
}

struct EnqueueFailure: Error {
    var status: Int32
    var stderr: String
}

/// A file of `size` random bytes.
func makeUploadTestFile(_ path: String, size: Int) throws {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? h.close() }
    var left = size
    var block = [UInt8](repeating: 0, count: 1 << 20)
    while left > 0 {
        let n = min(left, block.count)
        for i in stride(from: 0, to: n, by: 8) { block[i] = UInt8.random(in: 0...255) }
        block[0] = UInt8(truncatingIfNeeded: left)
        try h.write(contentsOf: Data(block[0..<n]))
        left -= n
    }
}
