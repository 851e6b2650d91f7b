import Foundation

/// A secret-chat file: served as an AES-256-IGE container (plaintext padded with random bytes to
/// a multiple of 16), decrypted sequentially with `key`/`iv` and trimmed to `decryptedSize`.
/// Its location (`type: secret`) needs no file reference.
public struct SecretFile: Codable, Hashable, Sendable {
    public var id: Int64
    public var accessHash: Int64
    public var dcId: Int
    /// Container (ciphertext) size in bytes, a multiple of 16.
    public var size: Int64
    /// Plaintext size; the decrypted container is trimmed to this.
    public var decryptedSize: Int64
    /// 32-byte AES-256 key.
    public var key: Data
    /// 32-byte IGE IV (updated in place while decrypting).
    public var iv: Data
    /// `SecretFileKey.fingerprint(key:iv:)`; the client checks it before decrypting.
    public var keyFingerprint: Int32
    public var mimeType: String
    public var fileName: String?
    public var location: FileLocation

    public init(
        id: Int64, accessHash: Int64, dcId: Int, size: Int64, decryptedSize: Int64, key: Data, iv: Data,
        keyFingerprint: Int32, mimeType: String, fileName: String? = nil, location: FileLocation
    ) {
        self.id = id
        self.accessHash = accessHash
        self.dcId = dcId
        self.size = size
        self.decryptedSize = decryptedSize
        self.key = key
        self.iv = iv
        self.keyFingerprint = keyFingerprint
        self.mimeType = mimeType
        self.fileName = fileName
        self.location = location
    }
}
