/// Telegram's `upload.getFile` part rules as pure functions, shared by client and server.
///
/// A part request is valid when `offset` and `limit` are multiples of 4 KiB, `limit` divides
/// 1 MiB, and the part does not cross a 1 MiB boundary.
public enum FilePartRules {
    /// Alignment of offsets and limits: 4 KiB.
    public static let alignment: Int64 = 4096
    /// Largest part and the boundary no part may cross: 1 MiB.
    public static let maxPartSize: Int64 = 1 << 20
    /// Size of one CDN hash block: 128 KiB of plaintext per SHA-256.
    public static let cdnHashBlockSize: Int64 = 128 << 10
    /// Files at or above this size use 1 MiB parts; below it 128 KiB parts (as in the seed).
    public static let bigFileThreshold: Int64 = 10 << 20

    /// `nil` when the part is valid, else the error the server answers with.
    /// Offset is checked first (`OFFSET_INVALID`), then limit (`LIMIT_INVALID`).
    public static func validate(offset: Int64, limit: Int64) -> CloudErrorName? {
        if offset < 0 || offset % alignment != 0 { return .offsetInvalid }
        if limit <= 0 || limit % alignment != 0 || maxPartSize % limit != 0 { return .limitInvalid }
        if offset / maxPartSize != (offset + limit - 1) / maxPartSize { return .limitInvalid }
        return nil
    }

    /// Part size a client should use for a file of this size: the smallest power of two ≥ 4 KiB
    /// covering a file under 128 KiB (one request), 128 KiB below 10 MiB, 1 MiB from 10 MiB.
    /// Unknown size (`nil`) gives 128 KiB.
    public static func preferredPartSize(fileSize: Int64?) -> Int64 {
        guard let size = fileSize else { return 128 << 10 }
        if size <= 128 << 10 {
            var p = alignment
            while p < size { p <<= 1 }
            return p
        }
        return size < bigFileThreshold ? 128 << 10 : maxPartSize
    }

    /// The valid `(offset, limit)` parts covering `range` (offsets aligned down to `partSize`);
    /// `partSize` must itself be valid (power of two between 4 KiB and 1 MiB).
    public static func parts(covering range: Range<Int64>, partSize: Int64) -> [(offset: Int64, limit: Int64)] {
        precondition(partSize >= alignment && partSize <= maxPartSize && maxPartSize % partSize == 0)
        guard !range.isEmpty else { return [] }
        var result: [(Int64, Int64)] = []
        var o = (range.lowerBound / partSize) * partSize
        while o < range.upperBound {
            result.append((o, partSize))
            o += partSize
        }
        return result
    }
}
