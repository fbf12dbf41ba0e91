/// Resizes rows as they arrive from a decoder: each input row is filtered horizontally at once
/// (while it is hot in cache) into a small intermediate image of output width, and the vertical pass
/// runs at the end. Memory is (input rows used) × (output width) × 4 bytes, never the source image.
///
/// Pixels are 4 bytes (premultiplied RGBA or RGBX); filtering is separable Lanczos-3 in `Float`.
final class StreamingResampler {
    let outputWidth: Int
    let outputHeight: Int
    private let horizontal: AxisWeights
    private let vertical: AxisWeights
    /// Input rows that the vertical filter reads: [rows.lowerBound, rows.upperBound).
    let rows: Range<Int>
    private let intermediate: UnsafeMutablePointer<UInt8>
    private let intermediateStride: Int
    private var received = 0

    /// Resamples the rectangle `source` of an input `inputWidth`×`inputHeight` (in input pixel
    /// coordinates) to `outputWidth`×`outputHeight`.
    init(inputWidth: Int, inputHeight: Int, source: Rect, outputWidth: Int, outputHeight: Int) {
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
        horizontal = AxisWeights(inputCount: inputWidth, outputCount: outputWidth, start: source.x, length: source.width)
        vertical = AxisWeights(inputCount: inputHeight, outputCount: outputHeight, start: source.y, length: source.height)
        rows = vertical.inputRange
        intermediateStride = outputWidth * 4
        intermediate = .allocate(capacity: max(1, rows.count * intermediateStride))
    }

    deinit { intermediate.deallocate() }

    /// Input columns the horizontal filter reads.
    var columns: Range<Int> { horizontal.inputRange }

    /// Takes input row `y` (`inputWidth` pixels at `row`); rows outside `rows` are ignored.
    func consume(row: UnsafePointer<UInt8>, y: Int) {
        guard rows.contains(y) else { return }
        received += 1
        let out = intermediate + (y - rows.lowerBound) * intermediateStride
        horizontal.starts.withUnsafeBufferPointer { starts in
            horizontal.counts.withUnsafeBufferPointer { counts in
                horizontal.weights.withUnsafeBufferPointer { weights in
                    Self.filterRow(
                        row, into: out, count: outputWidth, starts: starts.baseAddress!, counts: counts.baseAddress!,
                        weights: weights.baseAddress!, stride: horizontal.stride)
                }
            }
        }
    }

    /// Whether every row the vertical pass needs has arrived.
    var isComplete: Bool { received == rows.count }

    /// Runs the vertical pass. `premultiplied` clamps colour to alpha (ringing cannot make colour
    /// brighter than its coverage).
    func finish(premultiplied: Bool) -> PixelBuffer {
        let width = outputWidth
        let count = width * 4
        var output = PixelBuffer(width: width, height: outputHeight)
        let accumulator = UnsafeMutablePointer<Float>.allocate(capacity: count)
        defer { accumulator.deallocate() }
        output.bytes.withUnsafeMutableBufferPointer { outBytes in
            vertical.weights.withUnsafeBufferPointer { weights in
                for y in 0..<outputHeight {
                    accumulator.initialize(repeating: 0.5, count: count)
                    let start = vertical.starts[y] - rows.lowerBound
                    let taps = vertical.counts[y]
                    for k in 0..<taps {
                        let w = weights[y * vertical.stride + k]
                        let source = intermediate + (start + k) * intermediateStride
                        for i in 0..<count {
                            accumulator[i] += Float(source[i]) * w
                        }
                    }
                    let target = outBytes.baseAddress! + y * count
                    for i in 0..<count {
                        target[i] = UInt8(min(max(accumulator[i], 0), 255))
                    }
                    if premultiplied {
                        var i = 0
                        while i < count {
                            let a = target[i + 3]
                            target[i] = min(target[i], a)
                            target[i + 1] = min(target[i + 1], a)
                            target[i + 2] = min(target[i + 2], a)
                            i += 4
                        }
                    }
                }
            }
        }
        return output
    }

    @inline(__always)
    private static func filterRow(
        _ row: UnsafePointer<UInt8>, into out: UnsafeMutablePointer<UInt8>, count: Int,
        starts: UnsafePointer<Int>, counts: UnsafePointer<Int>, weights: UnsafePointer<Float>, stride: Int
    ) {
        let raw = UnsafeRawPointer(row)
        let half = SIMD4<Float>(repeating: 0.5)
        let zero = SIMD4<Float>(repeating: 0)
        let top = SIMD4<Float>(repeating: 255)
        for x in 0..<count {
            var acc = half
            let first = starts[x] * 4
            let w = weights + x * stride
            for k in 0..<counts[x] {
                let px = raw.loadUnaligned(fromByteOffset: first + k * 4, as: SIMD4<UInt8>.self)
                acc += SIMD4<Float>(SIMD4<Int32>(truncatingIfNeeded: px)) * w[k]
            }
            acc = acc.replacing(with: zero, where: acc .< zero).replacing(with: top, where: acc .> top)
            let bytes = SIMD4<UInt8>(truncatingIfNeeded: SIMD4<Int32>(acc))
            UnsafeMutableRawPointer(out + x * 4).storeBytes(of: bytes, as: SIMD4<UInt8>.self)
        }
    }
}
