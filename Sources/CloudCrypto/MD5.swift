import COpenSSL
import Foundation

/// MD5 over libcrypto (Telegram's upload checksum and the secret-file key fingerprint).
/// Not for security, only for compatibility.
public enum MD5 {
    /// The 16-byte digest.
    public static func hash<D: ContiguousBytes>(_ data: D) -> Data {
        var s = MD5Stream()
        s.update(data)
        return s.finalize()
    }
}

/// Incremental MD5.
public struct MD5Stream: ~Copyable {
    private let ctx: OpaquePointer

    public init() {
        guard let c = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        guard EVP_DigestInit_ex(c, EVP_md5(), nil) == 1 else { fatalError("EVP_DigestInit_ex(md5) failed") }
        ctx = c
    }

    deinit { EVP_MD_CTX_free(ctx) }

    public mutating func update<D: ContiguousBytes>(_ data: D) {
        data.withUnsafeBytes { b in
            if let base = b.baseAddress, b.count > 0 { _ = EVP_DigestUpdate(ctx, base, b.count) }
        }
    }

    public consuming func finalize() -> Data {
        var out = [UInt8](repeating: 0, count: 16)
        var len: UInt32 = 0
        _ = EVP_DigestFinal_ex(ctx, &out, &len)
        return Data(out)
    }
}
