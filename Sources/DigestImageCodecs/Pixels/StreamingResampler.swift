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
    /// The current input row as floats (only the columns the filter reads are filled).
    private let floatRow: UnsafeMutablePointer<Float>
    private let usedColumns: Range<Int>
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
        usedColumns = horizontal.inputRange
        floatRow = .allocate(capacity: max(1, inputWidth * 4))
    }

    deinit {
        intermediate.deallocate()
        floatRow.deallocate()
    }

    /// Input columns the horizontal filter reads.
    var columns: Range<Int> { horizontal.inputRange }

    /// Takes input row `y` (`inputWidth` pixels at `row`); rows outside `rows` are ignored.
    func consume(row: UnsafePointer<UInt8>, y: Int) {
        guard rows.contains(y) else { return }
        received += 1
        let out = intermediate + (y - rows.lowerBound) * intermediateStride
        // Widen once per row, so each tap below is a plain 4-float load.
        let floats = floatRow
        for i in (usedColumns.lowerBound * 4)..<(usedColumns.upperBound * 4) { floats[i] = Float(row[i]) }
        horizontal.starts.withUnsafeBufferPointer { starts in
            horizontal.counts.withUnsafeBufferPointer { counts in
                horizontal.weights.withUnsafeBufferPointer { weights in
                    Self.filterRow(
                        UnsafePointer(floats), into: out, count: outputWidth, starts: starts.baseAddress!, counts: counts.baseAddress!,
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
                    accumulator.initialize(repeating: 0, count: count)
                    let start = vertical.starts[y] - rows.lowerBound
                    let taps = vertical.counts[y]
                    let wy = weights.baseAddress! + y * vertical.stride
                    var k = 0
                    // Two input rows per sweep: half the accumulator traffic.
                    while k + 1 < taps {
                        let w0 = wy[k], w1 = wy[k + 1]
                        let s0 = UnsafePointer(intermediate + (start + k) * intermediateStride)
                        let s1 = s0 + intermediateStride
                        for i in 0..<count {
                            accumulator[i] += Float(s0[i]) * w0 + Float(s1[i]) * w1
                        }
                        k += 2
                    }
                    if k < taps {
                        let w0 = wy[k]
                        let s0 = UnsafePointer(intermediate + (start + k) * intermediateStride)
                        for i in 0..<count {
                            accumulator[i] += Float(s0[i]) * w0
                        }
                    }
                    let target = outBytes.baseAddress! + y * count
                    for i in 0..<count {
                        target[i] = Self.roundToByte(accumulator[i])
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

    /// `value` clamped to 0…255 and rounded to the nearest integer, without the generic
    /// float-to-integer conversion (which the optimiser leaves as a slow call).
    @inline(__always)
    static func roundToByte(_ value: Float) -> UInt8 {
        let clamped = min(max(value, 0), 255)
        return UInt8(truncatingIfNeeded: (clamped + 8_388_608).bitPattern)
    }

    @inline(__always)
    private static func filterRow(
        _ row: UnsafePointer<Float>, into out: UnsafeMutablePointer<UInt8>, count: Int,
        starts: UnsafePointer<Int>, counts: UnsafePointer<Int>, weights: UnsafePointer<Float>, stride: Int
    ) {
        let zero = SIMD4<Float>(repeating: 0)
        let top = SIMD4<Float>(repeating: 255)
        let magic = SIMD4<Float>(repeating: 8_388_608)
        for x in 0..<count {
            // Four accumulators: the additions of consecutive taps do not wait on each other.
            var a0 = zero, a1 = zero, a2 = zero, a3 = zero
            var p = UnsafeRawPointer(row + starts[x] &* 4)
            var w = weights + x &* stride
            var n = counts[x]
            while n >= 4 {
                a0 += p.loadUnaligned(as: SIMD4<Float>.self) * w[0]
                a1 += p.loadUnaligned(fromByteOffset: 16, as: SIMD4<Float>.self) * w[1]
                a2 += p.loadUnaligned(fromByteOffset: 32, as: SIMD4<Float>.self) * w[2]
                a3 += p.loadUnaligned(fromByteOffset: 48, as: SIMD4<Float>.self) * w[3]
                p += 64
                w += 4
                n &-= 4
            }
            while n > 0 {
                a0 += p.loadUnaligned(as: SIMD4<Float>.self) * w[0]
                p += 16
                w += 1
                n &-= 1
            }
            var acc = (a0 + a1) + (a2 + a3)
            acc = acc.replacing(with: zero, where: acc .< zero).replacing(with: top, where: acc .> top)
            // Round to the nearest integer by adding 2^23: the sum's low mantissa bits are the value.
            let bits = unsafeBitCast(acc + magic, to: SIMD4<UInt32>.self)
            let bytes = SIMD4<UInt8>(truncatingIfNeeded: bits)
            UnsafeMutableRawPointer(out + x * 4).storeBytes(of: bytes, as: SIMD4<UInt8>.self)
        }
    }
}
