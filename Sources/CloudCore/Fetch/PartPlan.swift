import CloudProtocol
import Foundation

/// One part request: `limit` bytes from `offset` (the answer is shorter at the end of the file).
struct PartSpec: Sendable, Hashable {
    let offset: Int64
    let limit: Int64
    /// A streamable file's header fetched again because its revision changed: kept in memory
    /// (never written into the partial file directly) and sent as `replaceHeader`.
    var replacesHeader = false
    /// Someone waits for these bytes now (`.maximum`): the part neither waits for a slot nor
    /// shares the transport with background transfers (see `PartLimiter`, `HTTPRequest.urgent`).
    var urgent = false
}

/// Which parts to request for the missing ranges of a file.
enum PartPlan {
    /// Part size for a cloud file of `size` bytes (`FilePartRules.preferredPartSize`): whole
    /// small files in one part, 128 KiB below 10 MiB, 1 MiB above.
    ///
    /// A file of at most `singleRequestLimit` is fetched in one request instead: the smallest
    /// power of two ≥ its size (a valid part: offset 0, limit dividing 1 MiB), so a 200 KB file
    /// costs one round trip and one server answer rather than two 128 KiB parts. Larger files
    /// keep 128 KiB parts, so a slow or interrupted download still leaves progress to resume.
    static func cloudPartSize(fileSize: Int64?) -> Int64 {
        if let size = fileSize, size > 0, size <= singleRequestLimit {
            var p = FilePartRules.alignment
            while p < size { p <<= 1 }
            return p
        }
        return FilePartRules.preferredPartSize(fileSize: fileSize)
    }

    /// Files up to this size come in one request (see `cloudPartSize`).
    static let singleRequestLimit: Int64 = 256 << 10

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
