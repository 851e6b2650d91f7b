import CloudCrypto
import Foundation

/// File bytes as a pure function of (seed, file id, offset): the AES-256-CTR keystream under a
/// key derived from both, so any range of a multi-GiB file is produced on demand at GB/s
/// (libcrypto, AES-NI) with no disk and no per-byte Swift loop.
struct ByteGenerator: Sendable {
    let seed: UInt64

    private static let zeroIV = Data(count: 16)

    /// The 32-byte key of one file.
    func key(fileId: Int64) -> Data {
        var s = Data("cloudd-bytes".utf8)
        withUnsafeBytes(of: seed.littleEndian) { s.append(contentsOf: $0) }
        withUnsafeBytes(of: fileId.littleEndian) { s.append(contentsOf: $0) }
        return SHA256.hash(s)
    }

    /// Fills `buffer` with the file's bytes starting at `offset` (any offset).
    func fill(_ buffer: UnsafeMutableRawBufferPointer, fileId: Int64, offset: Int64, key: Data? = nil) {
        guard buffer.count > 0 else { return }
        let k = key ?? self.key(fileId: fileId)
        let skip = Int(offset % 16)
        if skip == 0 {
            try! AESCTR.keystream(into: buffer, key: k, iv: Self.zeroIV, offset: offset)
            return
        }
        // Unaligned start: produce the first block separately.
        var head = [UInt8](repeating: 0, count: 16)
        head.withUnsafeMutableBytes { try! AESCTR.keystream(into: $0, key: k, iv: Self.zeroIV, offset: offset - Int64(skip)) }
        let n = min(16 - skip, buffer.count)
        for i in 0..<n { buffer[i] = head[skip + i] }
        if buffer.count > n {
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[n...])
            try! AESCTR.keystream(into: rest, key: k, iv: Self.zeroIV, offset: offset + Int64(n))
        }
    }

    /// The bytes `offset..<offset+count` of a file.
    func bytes(fileId: Int64, offset: Int64, count: Int) -> Data {
        var d = Data(count: count)
        d.withUnsafeMutableBytes { fill($0, fileId: fileId, offset: offset) }
        return d
    }
}
