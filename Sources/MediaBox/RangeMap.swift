import Foundation

/// A set of byte ranges as sorted, disjoint, non-adjacent half-open intervals: which parts of a
/// partial file hold data. Inserting merges overlapping and touching ranges.
public struct RangeMap: Sendable, Equatable, CustomStringConvertible {
    public private(set) var ranges: [Range<Int64>] = []

    public init() {}
    public init(_ ranges: [Range<Int64>]) { for r in ranges { insert(r) } }

    public mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var lower = range.lowerBound
        var upper = range.upperBound
        var result: [Range<Int64>] = []
        result.reserveCapacity(ranges.count + 1)
        var inserted = false
        for r in ranges {
            if r.upperBound < lower {
                result.append(r)
            } else if r.lowerBound > upper {
                if !inserted { result.append(lower..<upper); inserted = true }
                result.append(r)
            } else {
                lower = min(lower, r.lowerBound)
                upper = max(upper, r.upperBound)
            }
        }
        if !inserted { result.append(lower..<upper) }
        ranges = result
    }

    /// Whether every byte of `range` is present.
    public func contains(_ range: Range<Int64>) -> Bool {
        if range.isEmpty { return true }
        return ranges.contains { $0.lowerBound <= range.lowerBound && $0.upperBound >= range.upperBound }
    }

    /// The bytes present from offset 0 without a gap.
    public var contiguousPrefix: Int64 {
        guard let first = ranges.first, first.lowerBound == 0 else { return 0 }
        return first.upperBound
    }

    /// The parts of `0..<size` that are missing.
    public func missing(upTo size: Int64) -> [Range<Int64>] {
        var out: [Range<Int64>] = []
        var cursor: Int64 = 0
        for r in ranges {
            if r.lowerBound >= size { break }
            if r.lowerBound > cursor { out.append(cursor..<r.lowerBound) }
            cursor = max(cursor, r.upperBound)
        }
        if cursor < size { out.append(cursor..<size) }
        return out
    }

    public var totalBytes: Int64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    public var description: String { ranges.map { "\($0.lowerBound)..<\($0.upperBound)" }.joined(separator: ",") }
}

extension RangeMap {
    /// Removes every byte of `range`.
    public mutating func remove(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var result: [Range<Int64>] = []
        result.reserveCapacity(ranges.count + 1)
        for r in ranges {
            if r.upperBound <= range.lowerBound || r.lowerBound >= range.upperBound {
                result.append(r)
                continue
            }
            if r.lowerBound < range.lowerBound { result.append(r.lowerBound..<range.lowerBound) }
            if range.upperBound < r.upperBound { result.append(range.upperBound..<r.upperBound) }
        }
        self = RangeMap(result)
    }

    /// The range that holds byte `offset`, if any.
    public func range(containing offset: Int64) -> Range<Int64>? {
        ranges.first { $0.contains(offset) }
    }
}
