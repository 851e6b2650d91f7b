import CloudCrypto
import ConfinedFiles
import Foundation
import Postbox

#if canImport(Glibc)
    import Glibc
#endif

/// A secret chat's file is encrypted before it is staged anywhere it would be a copy: the staged
/// bytes (a private copy in the uploads directory, or the object in a bucket) are the file's
/// AES-256-IGE container, made at enqueue with the item's random key, IV and padding (kept in
/// the item, in Postbox only). The send then reads the container as it is; only the
/// host's own source file (or a hard link to it) ever holds the plaintext.
struct SecretStagedContainer: Sendable {
    var key: SecretUploadKey
    /// SHA-256 (hex) of the plaintext, recorded as the item's.
    var plaintextSHA256: String
    var containerSHA256: String
    /// Modification time of the staged container (ns).
    var mtimeNs: Int64

    var containerSize: Int64 { key.containerSize }

    /// Records the key and the container's fields into `item`.
    func record(into item: inout UploadItem) {
        key.store(into: &item)
        item.stagedContainerSHA256 = containerSHA256
    }

    /// Writes the container of the `size` plaintext bytes of `input` (`source` names it in
    /// errors) to a new 0600 file named `name` in `uploads`, synced, under a fresh random key.
    static func write(input: Int32, source: String, size: Int64, to name: String, in uploads: ConfinedDirectory) throws -> SecretStagedContainer {
        let key = SecretUploadKey.random(plaintextSize: size)
        guard let plan = UploadPlan(size: key.containerSize) else { throw MultipartUploadError.fileTooLarge(path: source, size: size) }
        let file = try StagingFile(name, in: uploads, for: source)
        let encryptor = SecretPartEncryptor(fd: input, key: key, plan: plan)
        var sha = SHA256()
        while encryptor.nextPart < plan.totalParts {
            let (_, data) = try encryptor.next()
            data.withUnsafeBytes { sha.update($0) }
            try data.withUnsafeBytes { try file.write($0) }
        }
        let st = try file.sync()
        guard st.size == key.containerSize else { throw MultipartUploadError.fileChanged(item: 0, reason: "\(source) changed size while being staged") }
        file.keep()
        return SecretStagedContainer(
            key: key, plaintextSHA256: encryptor.plaintextSHA256(), containerSHA256: sha.finalize().hexString, mtimeNs: st.mtimeNs)
    }
}

extension UploadItem {
    /// Whether the staged bytes are the item's encrypted container (a secret item staged as a copy).
    var isStagedAsContainer: Bool { stagedContainerSHA256 != nil }

    /// Size of the staged bytes: the container's for an item staged as one, else the file's.
    var stagedByteCount: Int64 {
        isStagedAsContainer ? UploadPlan.secretContainerSize(plaintextSize: size) : size
    }

    /// SHA-256 (hex) of the staged bytes.
    var stagedSHA256: String {
        stagedContainerSHA256 ?? sha256
    }
}
