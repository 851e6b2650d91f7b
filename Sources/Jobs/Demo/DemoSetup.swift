import CloudCore
import Foundation
import Postbox

/// What the demo puts into account 0's stores before a kind's run (`KindDemo.Setup`), so that the
/// run has work to show.
enum DemoSetup {
    /// Queues a few generated files (a small one, a big-file-mode one, a secret one) to the first
    /// synced chat, as `jobrun enqueue-upload` would; returns how many.
    static func queueUploads(account: AccountContext, scratch: String) async throws -> Int {
        let peers = try await account.postbox.read { try $0.peers.all() }
        guard let peer = peers.first else { return 0 }
        let queue = UploadQueue(postbox: account.postbox, uploads: try account.paths.uploadsDirectory(create: true))
        var rng = SystemRandomNumberGenerator()
        var count = 0
        for (name, size, secret) in [("note.txt", 48 << 10, false), ("video.mp4", 12 << 20, false), ("secret.jpg", 300 << 10, true)] {
            let path = scratch + "/" + name
            var bytes = [UInt8](repeating: 0, count: size)
            for i in stride(from: 0, to: size, by: 8) { withUnsafeBytes(of: rng.next()) { for j in 0..<min(8, size - i) { bytes[i + j] = $0[j] } } }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            _ = try await queue.enqueue(UploadRequest(path: path, peerId: peer.id.rawValue, secret: secret, caption: "jobrun demo"))
            count += 1
        }
        return count
    }

    /// Moves every stored reference of the account `seconds` into the past, as if that long had
    /// gone by: the revalidation job selects references by when they were obtained.
    static func ageStoredReferences(account: AccountContext, by seconds: Int64) async throws {
        try await account.postbox.transaction { tx in
            var records: [MediaReferenceRecord] = []
            try tx.mediaReferences.obtained(before: .max) {
                records.append($0)
                return true
            }
            for var record in records {
                record.obtainedAt -= seconds
                try tx.mediaReferences.set(record)
            }
        }
    }
}
