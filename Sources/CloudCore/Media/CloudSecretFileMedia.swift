import CloudProtocol
import Foundation
import MediaBox
import Postbox

/// A secret-chat file: an AES-256-IGE container on the cloud, decrypted with the key and IV
/// carried in the message and trimmed to `decryptedSize`. Needs no file reference.
///
/// `key` and `iv` are secrets: `description`, `debugDescription` and the mirror never show them.
public struct CloudSecretFileMedia: CloudMedia, Equatable, CustomDebugStringConvertible, CustomReflectable {
    public var fileId: Int64
    public var accessHash: Int64
    public var dcId: Int32
    /// Container (ciphertext) size, a multiple of 16.
    public var containerSize: Int64
    public var keyFingerprint: Int32
    public var fileName: String?
    /// The decrypted file; `file.size` is the decrypted size.
    public var file: CloudFileDescriptor
    /// 32-byte AES key (secret).
    public var key: Data
    /// 32-byte IGE IV (secret).
    public var iv: Data

    public init(_ secretFile: SecretFile, obtainedAt: Int64) {
        fileId = secretFile.id
        accessHash = secretFile.accessHash
        dcId = Int32(clamping: secretFile.dcId)
        containerSize = secretFile.size
        keyFingerprint = secretFile.keyFingerprint
        fileName = secretFile.fileName
        key = secretFile.key
        iv = secretFile.iv
        let resource = SecretFileMediaResource(secretFile: secretFile)
        file = CloudFileDescriptor(
            resourceId: resource.id.stringRepresentation, location: secretFile.location, size: secretFile.decryptedSize,
            contentType: Self.contentType(mimeType: secretFile.mimeType), mimeType: secretFile.mimeType,
            fileReference: .none, referenceObtainedAt: obtainedAt)
    }

    /// Storage content type from a MIME type.
    public static func contentType(mimeType: String) -> MediaContentType {
        let m = mimeType.lowercased()
        if m.hasPrefix("image/") { return .photo }
        if m.hasPrefix("video/") { return .video }
        if m.hasPrefix("audio/") { return .voice }
        return .file
    }

    public static var postboxTypeName: String { "CloudSecretFileMedia" }

    public init(decoder d: PostboxDecoder) throws {
        fileId = d.decodeInt64(forKey: "i") ?? 0
        accessHash = d.decodeInt64(forKey: "h") ?? 0
        dcId = d.decodeInt32(forKey: "dc") ?? 1
        containerSize = d.decodeInt64(forKey: "cs") ?? 0
        keyFingerprint = d.decodeInt32(forKey: "fp") ?? 0
        fileName = d.decodeString(forKey: "n")
        key = d.decodeBytes(forKey: "k") ?? Data()
        iv = d.decodeBytes(forKey: "iv") ?? Data()
        guard let file = try d.decodeObject(CloudFileDescriptor.self, forKey: "f") else {
            throw PostboxError.decoding("secret file without a file")
        }
        self.file = file
    }

    public func encode(_ e: PostboxEncoder) {
        e.encode(fileId, forKey: "i")
        e.encode(accessHash, forKey: "h")
        e.encode(dcId, forKey: "dc")
        e.encode(containerSize, forKey: "cs")
        e.encode(keyFingerprint, forKey: "fp")
        e.encodeIfPresent(fileName, forKey: "n")
        e.encode(key, forKey: "k")
        e.encode(iv, forKey: "iv")
        e.encodeObject(file, forKey: "f")
    }

    public var id: MediaId? { MediaId(namespace: CloudMediaNamespace.secretFile, id: fileId) }

    public var files: [CloudFileDescriptor] { [file] }

    /// The protocol's form (with the key material, for the fetcher only).
    public var secretFile: SecretFile {
        SecretFile(
            id: fileId, accessHash: accessHash, dcId: Int(dcId), size: containerSize, decryptedSize: file.size, key: key, iv: iv,
            keyFingerprint: keyFingerprint, mimeType: file.mimeType ?? "application/octet-stream", fileName: fileName, location: file.location)
    }

    /// Secret files have no parent to revalidate through: `parent` is ignored.
    public func resources(parent: MediaResourceReference) -> [any CloudFetchableResource] {
        [SecretFileMediaResource(secretFile: secretFile)]
    }

    public var description: String {
        "CloudSecretFileMedia(\(fileId), container: \(containerSize), decrypted: \(file.size), key: [redacted])"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "fileId": fileId, "containerSize": containerSize, "decryptedSize": file.size,
                "key": "[redacted]", "iv": "[redacted]",
            ], displayStyle: .struct)
    }
}
