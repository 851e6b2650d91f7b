import CloudCore
import CloudCrypto
import CloudProtocol
import CloudServer
import Foundation
import Postbox
import TestSupport
import XCTest

/// A real in-process cloudd, a real Postbox file and real files for the upload tests.
final class UploadFixture: @unchecked Sendable {
    let cloud: ClientFixture
    let directory = TemporaryDirectory(prefix: "multipart-upload")
    let postbox: Postbox
    let client: CloudClient
    let queue: UploadQueue
    let peer: Int64

    static func start() async throws -> UploadFixture {
        let cloud = try await ClientFixture.start()
        return try UploadFixture(cloud: cloud)
    }

    private init(cloud: ClientFixture) throws {
        self.cloud = cloud
        postbox = try Postbox(directory: directory.file("db"), key: TestRoot.storeKey)
        var transport = TransportConfiguration()
        transport.maxConnectionsPerHost = 40
        transport.requestTimeout = 60
        client = try CloudClient(config: cloud.config(), transport: CurlTransport(configuration: transport))
        queue = UploadQueue(postbox: postbox, directory: directory.file("uploads"))
        peer = cloud.server.dataset().peers[0].id
    }

    var server: CloudServer { cloud.server }

    func stop() async { await cloud.stop() }

    /// A file of `size` random bytes (written in 1 MiB blocks); returns its path.
    func makeFile(_ name: String, size: Int) throws -> String {
        let path = directory.file(name)
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? h.close() }
        var left = size
        while left > 0 {
            let n = min(left, 1 << 20)
            try h.write(contentsOf: SecureRandom.bytes(n))
            left -= n
        }
        return path
    }

    func upload(
        _ configure: (inout MultipartUploadConfiguration) -> Void = { _ in },
        observer: (@Sendable (MultipartUploadEvent) -> Void)? = nil
    ) -> MultipartUpload {
        var c = MultipartUploadConfiguration()
        configure(&c)
        return MultipartUpload(client: client, postbox: postbox, configuration: c, observer: observer)
    }

    func item(_ id: Int64) async throws -> UploadItem {
        try await postbox.read { try $0.uploadQueue.get(id)! }
    }

    func acked(_ id: Int64) async throws -> [Int32] {
        try await postbox.read { try $0.uploadQueue.acknowledgedParts(item: id) }
    }

    /// The bytes the server stored for an uploaded document.
    func storedBytes(documentId: Int64) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: server.uploadDirectory + "/files/\(documentId)"))
    }

    /// Messages of `peer` carrying `randomId` (the server's history, newest 100).
    func messages(randomId: Int64, peer: Int64? = nil) async throws -> Int {
        let h = try await client.getHistory(peerId: peer ?? self.peer, limit: 100)
        return h.messages.filter { $0.randomId == randomId }.count
    }

    /// Per-part receipt counts of an upload on the server.
    func receipts(_ fileId: Int64) -> [Int: Int] {
        guard let info = server.uploadInfo(fileId: fileId) else { return [:] }
        return Dictionary(uniqueKeysWithValues: info.partReceipts.map { (Int($0.key)!, $0.value) })
    }

    /// Decrypts a secret upload's container with the key stored in its item.
    static func decrypt(_ container: Data, item: UploadItem) throws -> Data {
        let key = item.secretKey!.key
        let iv = item.secretKey!.iv
        let size = Int(item.secretDecryptedSize!)
        XCTAssertEqual(container.count % 16, 0)
        return try AESIGE.decryptTrimmed(container, key: key, iv: iv, decryptedSize: size)
    }
}

/// Cancels an upload task after `n` acknowledged parts.
final class UploadPartTrigger: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var task: Task<MultipartUploadResult, any Error>?
    let limit: Int

    init(after limit: Int) { self.limit = limit }

    func attach(_ task: Task<MultipartUploadResult, any Error>) {
        lock.lock(); self.task = task; let fire = count >= limit; lock.unlock()
        if fire { task.cancel() }
    }

    func observe(_ event: MultipartUploadEvent) {
        guard case .partSent = event else { return }
        lock.lock(); count += 1; let fire = count == limit; let t = task; lock.unlock()
        if fire { t?.cancel() }
    }
}
