import CloudCrypto
import CloudProtocol
import Foundation
import MediaBox

/// A secret-chat file: fetched as its AES-256-IGE container, decrypted sequentially with the key
/// and IV from the message, trimmed to `decryptedSize` (its `size`). Not streamable; a resumed
/// download starts the decryption (and so the fetch) again from offset 0.
/// Id `secret-file-<dc>-<id>`. The key and IV are secrets: descriptions never show them.
public struct SecretFileMediaResource: CloudFetchableResource, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let datacenterId: Int
    public let fileId: Int64
    public let containerSize: Int64
    public let decryptedSize: Int64
    public let location: FileLocation
    let key: SecretFileKey
    let keyFingerprint: Int32

    public init(secretFile: SecretFile) {
        self.datacenterId = secretFile.dcId
        self.fileId = secretFile.id
        self.containerSize = secretFile.size
        self.decryptedSize = secretFile.decryptedSize
        self.location = secretFile.location
        self.key = SecretFileKey(key: secretFile.key, iv: secretFile.iv)
        self.keyFingerprint = secretFile.keyFingerprint
    }

    /// The stored (decrypted) size.
    public var size: Int64? { decryptedSize }

    public var id: MediaResourceId { MediaResourceId("secret-file-\(datacenterId)-\(fileId)") }

    public var fetchSource: ResourceFetchSource {
        .secret(location: location, key: key, keyFingerprint: keyFingerprint, containerSize: containerSize, decryptedSize: decryptedSize)
    }

    public var description: String { "SecretFileMediaResource(\(id), container: \(containerSize), decrypted: \(decryptedSize), key: [redacted])" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": id.stringRepresentation, "key": "[redacted]"], displayStyle: .struct) }
}
