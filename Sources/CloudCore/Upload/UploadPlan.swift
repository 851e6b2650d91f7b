import CloudProtocol
import Foundation

/// The part layout of one upload: how many bytes go to the server (the plaintext size, or the
/// AES-IGE container size of a secret file), in which part size, how many parts, and which mode.
///
/// Sizes follow `UploadPartRules`: 512 KiB parts, in "small file" mode (`upload.saveFilePart`)
/// up to 10 MiB and in big-file mode (`upload.saveBigFilePart` with `totalParts`) above. Every part but the last is full; the last has
/// 1 byte … part size. An empty upload has no valid layout (the protocol has no zero-part file).
public struct UploadPlan: Sendable, Equatable {
    /// Bytes sent to the server.
    public let size: Int64
    public let partSize: Int
    public let totalParts: Int
    /// Big-file mode (`saveBigFilePart`).
    public let isBig: Bool

    /// The layout for `size` bytes; nil for 0 bytes or more than `UploadPartRules.maxParts` parts.
    public init?(size: Int64) {
        guard size > 0 else { return nil }
        let partSize = UploadPartRules.preferredPartSize(fileSize: size)
        let total = UploadPartRules.partCount(fileSize: size, partSize: partSize)
        guard total >= 1, total <= UploadPartRules.maxParts else { return nil }
        self.size = size
        self.partSize = partSize
        self.totalParts = total
        self.isBig = UploadPartRules.isBigFile(size: size)
    }

    /// Re-creates a stored layout, checking it against the rules (a damaged record is refused).
    public init?(size: Int64, partSize: Int, totalParts: Int) {
        guard size > 0, UploadPartRules.isValidFullPartSize(partSize),
            totalParts == UploadPartRules.partCount(fileSize: size, partSize: partSize),
            totalParts <= UploadPartRules.maxParts
        else { return nil }
        self.size = size
        self.partSize = partSize
        self.totalParts = totalParts
        self.isBig = UploadPartRules.isBigFile(size: size)
    }

    /// Largest file (bytes sent) the protocol can take: 8000 parts of 512 KiB.
    public static let maxSize = Int64(UploadPartRules.maxParts) * Int64(UploadPartRules.maxPartSize)

    /// Byte offset of `part`.
    public func offset(of part: Int) -> Int64 { Int64(part) * Int64(partSize) }

    /// Length of `part` (the last may be shorter).
    public func length(of part: Int) -> Int {
        Int(min(Int64(partSize), size - offset(of: part)))
    }

    /// Parts in flight for this layout: `bigLimit` (the seed's 30) for big files; small files
    /// have at most 80 parts and gain little from more than a few.
    public func partsInFlight(bigLimit: Int, smallLimit: Int) -> Int {
        max(1, min(totalParts, isBig ? bigLimit : smallLimit))
    }

    /// The AES-IGE container size of a plaintext of `plaintextSize` bytes (padded to 16).
    public static func secretContainerSize(plaintextSize: Int64) -> Int64 {
        (plaintextSize + 15) / 16 * 16
    }
}
