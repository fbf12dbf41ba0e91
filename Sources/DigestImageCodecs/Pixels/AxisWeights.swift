#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lanczos-3 filter weights along one axis: for each output sample, the first input index, the
/// number of taps and their weights (normalised to sum to 1, so image edges keep their brightness).
///
/// The output covers input coordinates [`start`, `start + length`) — a crop need not fall on pixel
/// edges — and the filter may read input outside that range (but inside the image), as a continuous
/// image would have it.
struct AxisWeights {
    static let support = 3.0

    let outputCount: Int
    /// Taps reserved per output sample.
    let stride: Int
    private(set) var starts: [Int]
    private(set) var counts: [Int]
    private(set) var weights: [Float]

    /// The lowest and one past the highest input index any output reads.
    var inputRange: Range<Int> {
        guard outputCount > 0 else { return 0..<0 }
        var low = Int.max, high = 0
        for i in 0..<outputCount {
            low = min(low, starts[i])
            high = max(high, starts[i] + counts[i])
        }
        return low..<high
    }

    init(inputCount: Int, outputCount: Int, start: Double, length: Double) {
        precondition(inputCount > 0 && outputCount > 0 && length > 0)
        self.outputCount = outputCount
        let scale = length / Double(outputCount)
        let filterScale = max(scale, 1)
        let support = Self.support * filterScale
        let stride = Int(support.rounded(.up)) * 2 + 1
        self.stride = stride
        var starts = [Int](repeating: 0, count: outputCount)
        var counts = [Int](repeating: 0, count: outputCount)
        var weights = [Float](repeating: 0, count: outputCount * stride)
        var taps = [Double](repeating: 0, count: stride)
        for out in 0..<outputCount {
            let center = start + (Double(out) + 0.5) * scale
            var low = Int((center - support + 0.5).rounded(.down))
            var high = Int((center + support + 0.5).rounded(.down))
            low = min(max(low, 0), inputCount - 1)
            high = min(max(high, low + 1), inputCount)
            high = min(high, low + stride)
            var sum = 0.0
            for i in low..<high {
                let w = Self.lanczos((Double(i) - center + 0.5) / filterScale)
                taps[i - low] = w
                sum += w
            }
            if sum == 0 {
                // Far outside the image (cannot happen for crops inside it): take the nearest pixel.
                for i in low..<high { taps[i - low] = 0 }
                taps[0] = 1
                sum = 1
            }
            for i in 0..<(high - low) { weights[out * stride + i] = Float(taps[i] / sum) }
            starts[out] = low
            counts[out] = high - low
        }
        self.starts = starts
        self.counts = counts
        self.weights = weights
    }

    /// sinc(x)·sinc(x/3) on (−3, 3).
    static func lanczos(_ x: Double) -> Double {
        if x == 0 { return 1 }
        guard x > -support, x < support else { return 0 }
        let px = Double.pi * x
        return support * sin(px) * sin(px / support) / (px * px)
    }
}
