import COpenSSL
import Foundation

/// AES-256-CTR over libcrypto's EVP interface, able to start at any 16-byte-aligned offset.
///
/// The counter block for stream byte offset `o` is `iv + o/16` (128-bit big-endian addition,
/// as OpenSSL increments it), so `crypt(part, offset: o)` equals bytes `o..<o+n` of the
/// whole-stream transform. Used for CDN parts and by cloudd to generate file bytes fast.
public enum AESCTR {
    /// Encrypts or decrypts (the same operation) `data`, which sits at stream offset `offset`
    /// (multiple of 16).
    public static func crypt(_ data: Data, key: Data, iv: Data, offset: Int64 = 0) throws -> Data {
        var out = data
        try out.withUnsafeMutableBytes { try cryptInPlace($0, key: key, iv: iv, offset: offset) }
        return out
    }

    /// In-place variant over raw memory.
    public static func cryptInPlace(_ buffer: UnsafeMutableRawBufferPointer, key: Data, iv: Data, offset: Int64) throws {
        guard key.count == 32 else { throw CryptoError.invalidKeyLength(key.count) }
        guard iv.count == 16 else { throw CryptoError.invalidIVLength(iv.count) }
        guard offset >= 0, offset % 16 == 0 else { throw CryptoError.unalignedOffset(offset) }
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        let counter = counterBlock(iv: iv, blockIndex: UInt64(offset / 16))
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.libcrypto("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let ok: Int32 = key.withUnsafeBytes { k in
            counter.withUnsafeBufferPointer { c in
                EVP_EncryptInit_ex(ctx, EVP_aes_256_ctr(), nil, k.bindMemory(to: UInt8.self).baseAddress, c.baseAddress)
            }
        }
        guard ok == 1 else { throw CryptoError.libcrypto("EVP_EncryptInit_ex") }
        let p = base.assumingMemoryBound(to: UInt8.self)
        var done = 0
        // EVP_EncryptUpdate takes an Int32 length: go in chunks of at most 1 GiB.
        while done < buffer.count {
            let n = min(buffer.count - done, 1 << 30)
            var outLen: Int32 = 0
            guard EVP_EncryptUpdate(ctx, p + done, &outLen, p + done, Int32(n)) == 1 else {
                throw CryptoError.libcrypto("EVP_EncryptUpdate")
            }
            done += n
        }
    }

    /// Writes the keystream (the encryption of zeros) for stream offset `offset` into `buffer`.
    public static func keystream(into buffer: UnsafeMutableRawBufferPointer, key: Data, iv: Data, offset: Int64) throws {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        memset(base, 0, buffer.count)
        try cryptInPlace(buffer, key: key, iv: iv, offset: offset)
    }

    /// `iv + blockIndex` as a 128-bit big-endian integer.
    public static func counterBlock(iv: Data, blockIndex: UInt64) -> [UInt8] {
        var c = [UInt8](iv)
        var carry = blockIndex
        var i = 15
        while i >= 0 && carry != 0 {
            let sum = UInt64(c[i]) + (carry & 0xFF)
            c[i] = UInt8(sum & 0xFF)
            carry = (carry >> 8) + (sum >> 8)
            i -= 1
        }
        return c
    }
}
