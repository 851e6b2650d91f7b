import Foundation

/// A Gaussian blur of 8-bit pixels in place, for the blurred placeholder: a few dozen pixels,
/// which libvips would blur at the cost of a mask image built and evaluated for each photo
/// (three pipeline runs, each a thread pool with its objects, of the placeholder's four).
///
/// The mask is libvips's `gaussmat` (the default minimum amplitude 0.2, so σ 0.8 gives 3 taps),
/// applied separably, edges extended as libvips extends them (each edge pixel repeated), each
/// result rounded to the nearest level.
struct GaussianBlur: Sendable {
    /// The mask's weights from its centre outwards, summing to 1 over both sides.
    let weights: [Double]

    init(sigma: Double, minimumAmplitude: Double = 0.2) {
        var raw: [Double] = [1]
        // libvips's rule: taps while exp(-x²/2σ²) stays at or above the minimum amplitude.
        while raw.count < 64 {
            let x = Double(raw.count)
            let value = exp(-(x * x) / (2 * sigma * sigma))
            guard value >= minimumAmplitude else { break }
            raw.append(value)
        }
        let total = raw[0] + 2 * raw.dropFirst().reduce(0, +)
        weights = raw.map { $0 / total }
    }

    /// Blurs `width`×`height` pixels of `bands` band-packed 8-bit samples in place.
    func apply(_ pixels: UnsafeMutablePointer<UInt8>, width: Int, height: Int, bands: Int) {
        guard width > 0, height > 0, bands > 0 else { return }
        var scratch = [Double](repeating: 0, count: width * height * bands)
        // Rows: pixels → scratch.
        for y in 0..<height {
            for x in 0..<width {
                for b in 0..<bands {
                    var sum = 0.0
                    for (distance, weight) in weights.enumerated() {
                        let left = max(0, x - distance), right = min(width - 1, x + distance)
                        let pair = Double(pixels[(y * width + left) * bands + b]) + Double(pixels[(y * width + right) * bands + b])
                        sum += distance == 0 ? weight * pair / 2 : weight * pair
                    }
                    scratch[(y * width + x) * bands + b] = sum
                }
            }
        }
        // Columns: scratch → pixels, rounded.
        for y in 0..<height {
            for x in 0..<width {
                for b in 0..<bands {
                    var sum = 0.0
                    for (distance, weight) in weights.enumerated() {
                        let up = max(0, y - distance), down = min(height - 1, y + distance)
                        let pair = scratch[(up * width + x) * bands + b] + scratch[(down * width + x) * bands + b]
                        sum += distance == 0 ? weight * pair / 2 : weight * pair
                    }
                    pixels[(y * width + x) * bands + b] = UInt8(min(255, max(0, sum.rounded())))
                }
            }
        }
    }
}
