/// SplitMix64: a tiny deterministic PRNG so the dataset is a pure function of the seed.
struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value below 2^53 (exact in JSON), never zero.
    mutating func jsonSafeNonZero() -> Int64 {
        while true {
            let v = Int64(next() & ((1 << 53) - 1))
            if v != 0 { return v }
        }
    }

    /// Log-uniform integer in `lo…hi` (favours small sizes, as real media does).
    mutating func logUniform(_ lo: Int64, _ hi: Int64) -> Int64 {
        guard hi > lo else { return lo }
        let a = Double(lo).squareRoot(), b = Double(hi).squareRoot()
        let x = Double.random(in: 0...1, using: &self)
        let v = Int64((a + (b - a) * x) * (a + (b - a) * x))
        return min(max(v, lo), hi)
    }

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}

/// FNV-1a 64-bit hash of a string (stable across runs, unlike `Hashable`).
func stableHash(_ s: String) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in s.utf8 {
        h ^= UInt64(b)
        h = h &* 0x100_0000_01b3
    }
    return h
}
