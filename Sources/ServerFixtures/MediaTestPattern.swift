import Foundation

/// The deterministic bytes of a test media resource: what the `jobrun-testkit` child writes and
/// what the tests expect to read back, so both sides compute them with the same function.
public enum MediaTestPattern {
    /// `count` bytes of resource `id`, starting at `offset`.
    public static func bytes(id: String, offset: Int64 = 0, count: Int) -> Data {
        var seed: UInt64 = 1469598103934665603
        for b in id.utf8 { seed = (seed ^ UInt64(b)) &* 1099511628211 }
        var data = Data(count: count)
        data.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            for i in 0..<count {
                let x = UInt64(offset) + UInt64(i)
                raw[i] = UInt8(truncatingIfNeeded: (x &* 2654435761) ^ (seed >> (x % 7)) ^ (x >> 8))
            }
        }
        return data
    }
}
