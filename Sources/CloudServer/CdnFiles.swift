import CloudCrypto
import CloudProtocol
import Foundation

/// CDN bookkeeping: file tokens (file id + MAC), per-file AES-256-CTR key/IV, and which
/// "not yet on CDN" files have been reuploaded.
final class CdnFiles: Sendable {
    private let secret: Data
    private let reuploaded = Locked<Set<Int64>>([])

    init(secret: Data) { self.secret = secret }

    func token(fileId: Int64) -> Data {
        var d = Data()
        withUnsafeBytes(of: fileId.bigEndian) { d.append(contentsOf: $0) }
        return d + SHA256.hash(secret + Data("token".utf8) + d).prefix(8)
    }

    /// The file id in a token, or `nil` if forged/malformed.
    func fileId(token: Data) -> Int64? {
        guard token.count == 16 else { return nil }
        let head = Data(token.prefix(8))
        guard SHA256.hash(secret + Data("token".utf8) + head).prefix(8) == token.suffix(8) else { return nil }
        return head.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    func key(fileId: Int64) -> Data { SHA256.hash(secret + Data("cdn-key-\(fileId)".utf8)) }
    func iv(fileId: Int64) -> Data { SHA256.hash(secret + Data("cdn-iv-\(fileId)".utf8)).prefix(16) }

    func markReuploaded(_ id: Int64) { _ = reuploaded.withLock { $0.insert(id) } }
    func isOnCdn(_ file: ServerFile) -> Bool {
        file.cdn && (!file.cdnNeedsReupload || reuploaded.withLock { $0.contains(file.id) })
    }
}
