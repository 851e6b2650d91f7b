import COpenSSL
import Foundation

/// AES-256-IGE (Infinite Garble Extension), as used for Telegram secret-chat files.
///
/// The IV is 32 bytes (two 16-byte halves: previous ciphertext block, previous plaintext block)
/// and is **updated in place**: after a call it holds the chaining state, so the next call
/// continues the same stream. Encrypting/decrypting a file in several calls with the same `iv`
/// variable therefore equals one call over the whole file. Data must be a multiple of 16 bytes.
/// Keys are 32 bytes for secret files; 16/24-byte keys are accepted too (the published IGE test
/// vectors use AES-128).
public enum AESIGE {
    /// Encrypts `data` (multiple of 16 bytes) and advances `iv`.
    public static func encrypt(_ data: Data, key: Data, iv: inout Data) throws -> Data {
        try crypt(data, key: key, iv: &iv, encrypt: true)
    }

    /// Decrypts `data` (multiple of 16 bytes) and advances `iv`.
    public static func decrypt(_ data: Data, key: Data, iv: inout Data) throws -> Data {
        try crypt(data, key: key, iv: &iv, encrypt: false)
    }

    /// Pads `plaintext` with random bytes to a multiple of 16 and encrypts it (a fresh copy of
    /// `iv` is used, so the caller's IV is unchanged). The container for a secret file.
    public static func encryptPadded(_ plaintext: Data, key: Data, iv: Data) throws -> Data {
        var padded = plaintext
        let pad = (16 - padded.count % 16) % 16
        if pad > 0 { padded.append(SecureRandom.bytes(pad)) }
        var ivCopy = iv
        return try encrypt(padded, key: key, iv: &ivCopy)
    }

    /// Decrypts a container and trims it to `decryptedSize` (fresh copy of `iv`).
    public static func decryptTrimmed(_ container: Data, key: Data, iv: Data, decryptedSize: Int) throws -> Data {
        var ivCopy = iv
        let plain = try decrypt(container, key: key, iv: &ivCopy)
        guard decryptedSize <= plain.count, decryptedSize >= 0 else { throw CryptoError.invalidDataLength(decryptedSize) }
        return plain.prefix(decryptedSize)
    }

    /// In-place variant over raw memory (for the download path). `iv` must be 32 bytes.
    public static func cryptInPlace(_ buffer: UnsafeMutableRawBufferPointer, key: Data, iv: inout Data, encrypt: Bool) throws {
        guard [16, 24, 32].contains(key.count) else { throw CryptoError.invalidKeyLength(key.count) }
        guard iv.count == 32 else { throw CryptoError.invalidIVLength(iv.count) }
        guard buffer.count % 16 == 0 else { throw CryptoError.invalidDataLength(buffer.count) }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        var aesKey = AES_KEY()
        let rc: Int32 = key.withUnsafeBytes { k in
            let kp = k.bindMemory(to: UInt8.self).baseAddress!
            return encrypt ? AES_set_encrypt_key(kp, Int32(key.count * 8), &aesKey) : AES_set_decrypt_key(kp, Int32(key.count * 8), &aesKey)
        }
        guard rc == 0 else { throw CryptoError.libcrypto("AES_set_key \(rc)") }
        var ivBytes = [UInt8](iv)
        let p = base.assumingMemoryBound(to: UInt8.self)
        AES_ige_encrypt(p, p, buffer.count, &aesKey, &ivBytes, encrypt ? AES_ENCRYPT : AES_DECRYPT)
        iv = Data(ivBytes)
    }

    private static func crypt(_ data: Data, key: Data, iv: inout Data, encrypt: Bool) throws -> Data {
        var out = data
        try out.withUnsafeMutableBytes { try cryptInPlace($0, key: key, iv: &iv, encrypt: encrypt) }
        return out
    }
}
