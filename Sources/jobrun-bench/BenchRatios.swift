import Foundation

/// One line of the summary `jobrun-bench all` prints: a product figure next to its peer's from
/// the same run, their ratio oriented so that higher is better, and the target it is held to
/// (none for a comparison printed as context, which the count of targets met leaves out).
struct BenchRatio: Codable {
    var benchmark: String
    var measure: String
    var product: String
    var peer: String
    /// Higher is better (peer time ÷ product time, or product rate ÷ peer rate).
    var ratio: Double
    /// The minimum ratio the target asks for; nil for context without a target.
    var target: Double?

    /// Whether the target is met; nil without a target.
    var met: Bool? { target.map { ratio >= $0 } }

    /// The ratio with two decimals, or with as many more as it takes (up to five) for a ratio
    /// that misses its target not to print as the target itself ("0.7997×", not "0.80×").
    var ratioText: String {
        var digits = 2
        while met == false, let target, digits < 5, fmt(ratio, digits) == fmt(target, digits) { digits += 1 }
        return fmt(ratio, digits) + "×"
    }
}

/// Where each benchmark leaves its ratios: appended as JSON lines to the file named by
/// `JOBRUN_BENCH_RATIOS` (set by `jobrun-bench all` for the benchmark processes it starts);
/// a benchmark run on its own just prints its tables.
enum BenchRatios {
    static let environmentKey = "JOBRUN_BENCH_RATIOS"

    static func record(_ benchmark: String, _ measure: String, product: String, peer: String, ratio: Double, target: Double?) {
        guard let path = ProcessInfo.processInfo.environment[environmentKey],
            let line = try? JSONEncoder().encode(
                BenchRatio(
                    benchmark: benchmark, measure: measure, product: product, peer: peer,
                    ratio: ratio, target: target))
        else { return }
        appendLine(line, to: path)
    }

    static func read(_ path: String) -> [BenchRatio] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return data.split(separator: 0x0a).compactMap { try? JSONDecoder().decode(BenchRatio.self, from: Data($0)) }
    }
}
