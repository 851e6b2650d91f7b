import CloudProtocol
import Foundation

/// One part request: `limit` bytes from `offset` (the answer is shorter at the end of the file).
struct PartSpec: Sendable, Hashable {
    let offset: Int64
    let limit: Int64
}

/// Which parts to request for the missing ranges of a file.
enum PartPlan {
    /// Part size for a cloud file of `size` bytes (`FilePartRules.preferredPartSize`): whole
    /// small files in one part, 128 KiB below 10 MiB, 1 MiB above.
    static func cloudPartSize(fileSize: Int64?) -> Int64 { FilePartRules.preferredPartSize(fileSize: fileSize) }

    /// Valid parts (aligned to `partSize`, never crossing 1 MiB) covering `missing` within
    /// `0..<size`, in offset order, without duplicates.
    static func parts(missing: [Range<Int64>], size: Int64, partSize: Int64) -> [PartSpec] {
        var out: [PartSpec] = []
        var last: Int64 = -1
        for r in missing {
            let clipped = max(0, r.lowerBound)..<min(r.upperBound, size)
            guard !clipped.isEmpty else { continue }
            for p in FilePartRules.parts(covering: clipped, partSize: partSize) where p.offset > last {
                out.append(PartSpec(offset: p.offset, limit: p.limit))
                last = p.offset
            }
        }
        return out
    }

    /// `missing` without `covered`.
    static func subtract(_ covered: Range<Int64>, from missing: [Range<Int64>]) -> [Range<Int64>] {
        var out: [Range<Int64>] = []
        for r in missing {
            if covered.upperBound <= r.lowerBound || covered.lowerBound >= r.upperBound { out.append(r); continue }
            if r.lowerBound < covered.lowerBound { out.append(r.lowerBound..<covered.lowerBound) }
            if covered.upperBound < r.upperBound { out.append(covered.upperBound..<r.upperBound) }
        }
        return out
    }
}
