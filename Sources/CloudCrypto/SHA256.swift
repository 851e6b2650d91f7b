import COpenSSL
import Foundation

/// SHA-256 over libcrypto's EVP interface: one-shot and incremental (for multi-GiB streams).
public struct SHA256: ~Copyable {
    private let ctx: OpaquePointer

    /// Starts a new incremental hash.
    public init() {
        guard let c = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed") }
        guard EVP_DigestInit_ex(c, EVP_sha256(), nil) == 1 else { fatalError("EVP_DigestInit_ex failed") }
        ctx = c
    }

    deinit { EVP_MD_CTX_free(ctx) }

    /// Feeds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(ctx, base, bytes.count)
    }

    /// Feeds bytes.
    public mutating func update<D: ContiguousBytes>(_ data: D) {
        data.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest; the hasher must not be used afterwards.
    public consuming func finalize() -> Data {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        _ = EVP_DigestFinal_ex(ctx, &out, &len)
        return Data(out)
    }

    /// One-shot digest of `data`.
    public static func hash<D: ContiguousBytes>(_ data: D) -> Data {
        var h = SHA256()
        h.update(data)
        return h.finalize()
    }

    /// One-shot digest of raw bytes.
    public static func hash(bytes: UnsafeRawBufferPointer) -> Data {
        var h = SHA256()
        h.update(bytes)
        return h.finalize()
    }
}

extension Data {
    /// Lowercase hex.
    public var hexString: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var chars = [UInt8]()
        chars.reserveCapacity(count * 2)
        for b in self {
            chars.append(digits[Int(b >> 4)])
            chars.append(digits[Int(b & 0xF)])
        }
        return String(decoding: chars, as: UTF8.self)
    }

    /// Parses hex (upper or lower case, even length); `nil` otherwise.
    public init?(hexString: String) {
        let utf8 = Array(hexString.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count / 2)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
            i += 2
        }
        self.init(bytes)
    }
}
