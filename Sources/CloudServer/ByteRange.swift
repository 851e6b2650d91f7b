import Foundation

/// Parses a single HTTP `Range: bytes=…` header against a resource size (RFC 9110 §14).
enum ByteRange {
    enum Result: Equatable {
        /// No usable Range header: serve everything with 200.
        case full
        /// Serve `range` with 206.
        case partial(Range<Int64>)
        /// 416 Range Not Satisfiable.
        case unsatisfiable
    }

    /// Multi-range requests are answered with the first range only.
    static func parse(_ header: String?, size: Int64) -> Result {
        guard let header, header.hasPrefix("bytes=") else { return .full }
        let spec = header.dropFirst(6).split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .full }
        if parts[0].isEmpty {
            guard let n = Int64(parts[1]), n > 0 else { return .unsatisfiable }
            guard size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - n)..<size)
        }
        guard let start = Int64(parts[0]), start >= 0 else { return .full }
        guard start < size else { return .unsatisfiable }
        if parts[1].isEmpty { return .partial(start..<size) }
        guard let end = Int64(parts[1]), end >= start else { return .full }
        return .partial(start..<min(end + 1, size))
    }
}
