/// How a problem sentence shows the range a value must lie in: `1…1000`, `0.001…3600`.
extension ClosedRange where Bound == Int {
    var shownBounds: String { "\(lowerBound)…\(upperBound)" }
}

extension ClosedRange where Bound == Double {
    var shownBounds: String { "\(lowerBound.shownBound)…\(upperBound.shownBound)" }
}

extension Double {
    /// The number without a trailing `.0` when it is whole (`3600`, `0.001`).
    var shownBound: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : "\(self)"
    }
}
