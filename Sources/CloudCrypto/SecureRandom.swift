import COpenSSL
import Foundation

/// Cryptographically secure random bytes from libcrypto's `RAND_bytes`.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> Data {
        var out = [UInt8](repeating: 0, count: count)
        if count > 0 {
            guard RAND_bytes(&out, Int32(count)) == 1 else { fatalError("RAND_bytes failed") }
        }
        return Data(out)
    }

    /// A random non-zero Int64 (e.g. an upload file id or a message random id); below 2^53 so
    /// JSON tools read it exactly.
    public static func int64() -> Int64 {
        while true {
            let d = bytes(8)
            let v = d.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } & ((1 << 53) - 1)
            if v != 0 { return Int64(v) }
        }
    }
}
