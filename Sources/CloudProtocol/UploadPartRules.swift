/// Part rules for `upload.saveFilePart` / `upload.saveBigFilePart`.
///
/// Every part except the last has the same size, a multiple of 1 KiB that divides 512 KiB;
/// the last part is 1 byte … part size. Files over 10 MiB must use big-file mode, which also
/// sends `totalParts` with each part. At most 8000 parts (4000 MiB at 512 KiB).
public enum UploadPartRules {
    public static let partAlignment = 1024
    public static let maxPartSize = 512 << 10
    public static let maxParts = 8000
    /// Files larger than this must be uploaded with `saveBigFilePart`.
    public static let bigFileThreshold: Int64 = 10 << 20

    /// `true` when `size` is allowed for a non-last part.
    public static func isValidFullPartSize(_ size: Int) -> Bool {
        size > 0 && size % partAlignment == 0 && maxPartSize % size == 0
    }

    /// `true` when `size` is allowed for some part (a last part may be shorter).
    public static func isValidAnyPartSize(_ size: Int) -> Bool {
        size > 0 && size <= maxPartSize
    }

    /// Whether a file of this size must use big-file mode.
    public static func isBigFile(size: Int64) -> Bool { size > bigFileThreshold }

    /// Part size to upload with: the largest the protocol allows (512 KiB), at every size.
    /// Parts in flight are capped by count (30 for a big file), so the part size decides how many
    /// bytes a round trip carries (at 100 ms, 30 parts of 512 KiB fill 150 MB/s, 30 of 256 KiB
    /// only 75 MB/s), and a file of up to 512 KiB is one part: with its pipelined `sendMedia`,
    /// two requests instead of up to five at 128 KiB.
    public static func preferredPartSize(fileSize: Int64) -> Int { maxPartSize }

    /// Number of parts for a file of `fileSize` bytes at `partSize` (an empty file has one empty part: not allowed, so ≥1 byte).
    public static func partCount(fileSize: Int64, partSize: Int) -> Int {
        Int((fileSize + Int64(partSize) - 1) / Int64(partSize))
    }
}
