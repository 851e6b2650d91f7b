import CloudCrypto
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// The secret-chat encryption of one queue item: AES-256 key and 32-byte IGE IV (random), the
/// random padding bytes that fill the last block, the key fingerprint and the sizes.
///
/// Stored in the item (Postbox only — the key material as `SecretKeyMaterial`, which never
/// prints, and the plaintext size it was made for) so that a resumed upload re-creates exactly
/// the bytes it sent before: the container is a pure function of the plaintext and these values.
struct SecretUploadKey: Sendable, Equatable {
    var key: Data
    var iv: Data
    var padding: Data
    var decryptedSize: Int64

    var containerSize: Int64 { UploadPlan.secretContainerSize(plaintextSize: decryptedSize) }
    var fingerprint: Int32 { SecretFileKey.fingerprint(key: key, iv: iv) }

    /// A fresh random key, IV and padding for `plaintextSize` bytes.
    static func random(plaintextSize: Int64) -> SecretUploadKey {
        let k = SecretFileKey.random()
        let pad = Int(UploadPlan.secretContainerSize(plaintextSize: plaintextSize) - plaintextSize)
        return SecretUploadKey(key: k.key, iv: k.iv, padding: SecureRandom.bytes(pad), decryptedSize: plaintextSize)
    }

    /// Reads the item's key; nil if it has none yet. Throws on a damaged record. A row written
    /// before the key material was typed holds it as hex text (`legacySecretKey`): it is read
    /// from there, and `store(into:)` moves it into the typed field.
    static func load(_ item: UploadItem) throws -> SecretUploadKey? {
        let material: SecretKeyMaterial?
        if let typed = item.secretKey {
            material = typed
        } else if let text = item.legacySecretKey {
            material = Data(hexString: text.key).flatMap { key in
                Data(hexString: text.iv).flatMap { iv in Data(hexString: text.padding).map { SecretKeyMaterial(key: key, iv: iv, padding: $0) } }
            }
            if material == nil { throw MultipartUploadError.corruptItem(item: item.id, reason: "secret key fields are damaged") }
        } else if item.secretDecryptedSize != nil {
            throw MultipartUploadError.corruptItem(item: item.id, reason: "secret key fields are damaged")
        } else {
            return nil
        }
        guard let material, material.key.count == 32, material.iv.count == 32, material.padding.count < 16,
            let size = item.secretDecryptedSize, size > 0,
            UploadPlan.secretContainerSize(plaintextSize: size) - size == Int64(material.padding.count)
        else {
            throw MultipartUploadError.corruptItem(item: item.id, reason: "secret key fields are damaged")
        }
        return SecretUploadKey(key: material.key, iv: material.iv, padding: material.padding, decryptedSize: size)
    }

    /// Writes the key into `item`: its material and the plaintext size it was made for.
    func store(into item: inout UploadItem) {
        item.secretKey = SecretKeyMaterial(key: key, iv: iv, padding: padding)
        item.legacySecretKey = nil
        item.secretDecryptedSize = decryptedSize
    }
}

/// Produces the AES-256-IGE container of a staged file part by part, in order (IGE chains every
/// block to the previous one, so it cannot seek). Holds one part in memory at a time; hashes the
/// plaintext as it goes so a change of the file during the upload is caught.
///
/// Confined to one task at a time (the upload's producer), hence `@unchecked Sendable`.
final class SecretPartEncryptor: @unchecked Sendable {
    private let fd: Int32
    private let key: SecretUploadKey
    private let plan: UploadPlan
    private var iv: Data
    private var sha = SHA256()
    private(set) var nextPart = 0

    init(fd: Int32, key: SecretUploadKey, plan: UploadPlan) {
        self.fd = fd
        self.key = key
        self.plan = plan
        self.iv = key.iv
    }

    /// The ciphertext of the next part (blocking: call it off the cooperative pool).
    func next() throws -> (part: Int, data: Data) {
        let part = nextPart
        precondition(part < plan.totalParts, "no part left")
        let offset = plan.offset(of: part)
        let length = plan.length(of: part)
        var data = Data(count: length)
        let plainLength = Int(max(0, min(Int64(length), key.decryptedSize - offset)))
        try data.withUnsafeMutableBytes { raw in
            let got = try UploadIO.readFully(fd: fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<plainLength]), offset: offset)
            guard got == plainLength else { throw POSIXFailure(EIO) }
            sha.update(UnsafeRawBufferPointer(rebasing: raw[0..<plainLength]))
            if plainLength < length {
                // The last part: the stored random padding fills the final block.
                key.padding.withUnsafeBytes { pad in
                    raw.baseAddress!.advanced(by: plainLength).copyMemory(from: pad.baseAddress!, byteCount: length - plainLength)
                }
            }
            try AESIGE.cryptInPlace(raw, key: key.key, iv: &iv, encrypt: true)
        }
        nextPart += 1
        return (part, data)
    }

    /// SHA-256 (hex) of the plaintext read so far; complete once every part was produced.
    func plaintextSHA256() -> String {
        var copy = SHA256()
        swap(&copy, &sha)
        return copy.finalize().hexString
    }
}
