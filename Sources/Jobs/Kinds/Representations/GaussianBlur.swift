import Foundation

/// 8-bit pixels in band-packed rows, as libvips keeps an image in memory.
struct UcharPixels: Sendable, Equatable {
    var bytes: [UInt8]
    let width: Int
    let height: Int
    let bands: Int
}

/// A Gaussian blur of 8-bit pixels, for the blurred placeholder: a few dozen pixels,
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

    /// `pixels` blurred.
    func apply(_ pixels: UcharPixels) -> UcharPixels {
        let (width, height, bands) = (pixels.width, pixels.height, pixels.bands)
        guard width > 0, height > 0, bands > 0, pixels.bytes.count == width * height * bands else { return pixels }
        var samples = pixels.bytes.map(Double.init)
        // Along the rows (samples `bands` apart), then down the columns (a row apart).
        samples = convolve(samples, lines: height, length: width, lineStride: width * bands, step: bands, bands: bands)
        samples = convolve(samples, lines: width, length: height, lineStride: bands, step: width * bands, bands: bands)
        var blurred = pixels
        blurred.bytes = samples.map { UInt8(min(255, max(0, $0.rounded()))) }
        return blurred
    }

    /// The mask applied along `lines` lines of `length` pixels, each line `lineStride` samples
    /// after the previous, its pixels `step` samples apart; positions past an end take the edge
    /// pixel's value.
    private func convolve(_ input: [Double], lines: Int, length: Int, lineStride: Int, step: Int, bands: Int) -> [Double] {
        var output = input
        for line in 0..<lines {
            for position in 0..<length {
                for band in 0..<bands {
                    func sample(_ at: Int) -> Double { input[line * lineStride + min(length - 1, max(0, at)) * step + band] }
                    var sum = weights[0] * sample(position)
                    for distance in weights.indices.dropFirst() {
                        sum += weights[distance] * (sample(position - distance) + sample(position + distance))
                    }
                    output[line * lineStride + position * step + band] = sum
                }
            }
        }
        return output
    }
}
