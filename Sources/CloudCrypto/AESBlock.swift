import COpenSSL
import Foundation

/// Single-block AES (ECB on exactly 16 bytes), for checking modes against their definition.
public enum AESBlock {
    /// Encrypts one 16-byte block with a 16/24/32-byte key.
    public static func encrypt(_ block: Data, key: Data) throws -> Data {
        guard block.count == 16 else { throw CryptoError.invalidDataLength(block.count) }
        guard [16, 24, 32].contains(key.count) else { throw CryptoError.invalidKeyLength(key.count) }
        var aesKey = AES_KEY()
        let rc = key.withUnsafeBytes { AES_set_encrypt_key($0.bindMemory(to: UInt8.self).baseAddress!, Int32(key.count * 8), &aesKey) }
        guard rc == 0 else { throw CryptoError.libcrypto("AES_set_encrypt_key \(rc)") }
        var out = [UInt8](repeating: 0, count: 16)
        let input = [UInt8](block)
        AES_encrypt(input, &out, &aesKey)
        return Data(out)
    }
}
