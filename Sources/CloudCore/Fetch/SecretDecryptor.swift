import CloudCrypto
import Foundation

/// Sequential AES-256-IGE decryption of a secret file's container: parts must arrive in order
/// (the IV is chained), the output is trimmed to the decrypted size.
struct SecretDecryptor: Sendable {
    private let key: Data
    private var iv: Data
    private let decryptedSize: Int64
    /// Container bytes decrypted so far (= the offset the next part must start at).
    private(set) var position: Int64 = 0

    init(key: SecretFileKey, decryptedSize: Int64) {
        self.key = key.key
        self.iv = key.iv
        self.decryptedSize = decryptedSize
    }

    /// Decrypts the next part (a multiple of 16 bytes unless it is the container's end) and
    /// returns its plaintext, trimmed at `decryptedSize`.
    mutating func decrypt(_ part: Data) throws -> Data {
        var plain = part
        try plain.withUnsafeMutableBytes { try AESIGE.cryptInPlace($0, key: key, iv: &iv, encrypt: false) }
        let start = position
        position += Int64(part.count)
        if start >= decryptedSize { return Data() }
        if position > decryptedSize { plain = plain.prefix(Int(decryptedSize - start)) }
        return plain
    }
}
