import Foundation

/// The key of a secret-chat file: 32-byte AES key + 32-byte IGE IV, and its fingerprint.
public struct SecretFileKey: Hashable, Sendable {
    public let key: Data
    public let iv: Data

    public init(key: Data, iv: Data) {
        self.key = key
        self.iv = iv
    }

    /// A fresh random key and IV.
    public static func random() -> SecretFileKey {
        SecretFileKey(key: SecureRandom.bytes(32), iv: SecureRandom.bytes(32))
    }

    /// Telegram's `key_fingerprint`: `digest = MD5(key ‖ iv)`, then the little-endian Int32 of
    /// `digest[0..<4] XOR digest[4..<8]`. Lets the receiver check it has the right key.
    public static func fingerprint(key: Data, iv: Data) -> Int32 {
        let d = [UInt8](MD5.hash(key + iv))
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(d[i] ^ d[i + 4]) << (8 * UInt32(i)) }
        return Int32(bitPattern: v)
    }

    public var fingerprint: Int32 { SecretFileKey.fingerprint(key: key, iv: iv) }
}
