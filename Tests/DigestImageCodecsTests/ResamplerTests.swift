import DigestDemo
@testable import DigestImageCodecs
import Testing

@Suite struct ResamplerTests {
    static func resample(_ pixels: PixelBuffer, to width: Int, _ height: Int, crop: Rect? = nil, premultiplied: Bool = false) -> PixelBuffer {
        let rect = crop ?? Rect(x: 0, y: 0, width: Double(pixels.width), height: Double(pixels.height))
        let resampler = StreamingResampler(
            inputWidth: pixels.width, inputHeight: pixels.height, source: rect, outputWidth: width, outputHeight: height)
        pixels.bytes.withUnsafeBufferPointer { p in
            for y in 0..<pixels.height { resampler.consume(row: p.baseAddress! + y * pixels.stride, y: y) }
        }
        #expect(resampler.isComplete)
        return resampler.finish(premultiplied: premultiplied)
    }

    static func solid(_ width: Int, _ height: Int, _ c: (UInt8, UInt8, UInt8, UInt8)) -> PixelBuffer {
        var p = PixelBuffer(width: width, height: height)
        for y in 0..<height { for x in 0..<width { p[x, y] = c } }
        return p
    }

    @Test func weightsSumToOneEverywhereEdgesIncluded() {
        for (input, output) in [(100, 10), (10, 100), (1000, 3), (7, 7), (1, 5)] {
            let axis = AxisWeights(inputCount: input, outputCount: output, start: 0, length: Double(input))
            for i in 0..<output {
                let sum = (0..<axis.counts[i]).reduce(Float(0)) { $0 + axis.weights[i * axis.stride + $1] }
                #expect(abs(sum - 1) < 1e-5, "\(input)→\(output) sample \(i)")
                #expect(axis.starts[i] >= 0 && axis.starts[i] + axis.counts[i] <= input)
            }
        }
    }

    @Test func aFlatImageStaysFlatAtEveryScaleAndEdge() {
        let flat = Self.solid(97, 61, (200, 100, 50, 255))
        for (w, h) in [(10, 6), (97, 61), (300, 200), (1, 1), (1024, 512)] {
            let out = Self.resample(flat, to: w, h)
            #expect(out.bytes.enumerated().allSatisfy { i, v in v == [200, 100, 50, 255][i % 4] }, "\(w)×\(h)")
        }
    }

    @Test func sameSizeIsTheIdentity() {
        let photo = SamplePictures.photo(width: 40, height: 30, seed: 11)
        #expect(Self.resample(photo, to: 40, 30) == photo)
    }

    @Test func halvingAFineCheckerboardGivesMidGray() {
        var board = PixelBuffer(width: 64, height: 64)
        for y in 0..<64 { for x in 0..<64 { let v: UInt8 = (x + y) % 2 == 0 ? 255 : 0; board[x, y] = (v, v, v, 255) } }
        let out = Self.resample(board, to: 16, 16)
        for y in 2..<14 { for x in 2..<14 { #expect(abs(Int(out[x, y].0) - 128) <= 2, "\(x),\(y): \(out[x, y])") } }
    }

    @Test func cropSelectsTheSourceRegion() {
        // Left half red, right half blue: a crop of the right half is blue all over.
        var pixels = PixelBuffer(width: 200, height: 100)
        for y in 0..<100 { for x in 0..<200 { pixels[x, y] = x < 100 ? (255, 0, 0, 255) : (0, 0, 255, 255) } }
        let out = Self.resample(pixels, to: 20, 20, crop: Rect(x: 120, y: 0, width: 80, height: 100))
        #expect(out.bytes.enumerated().allSatisfy { i, v in v == [0, 0, 255, 255][i % 4] })
    }

    @Test func premultipliedAlphaLeavesNoDarkFringe() {
        // An opaque red square on a transparent (black, alpha 0) background: after resizing, the
        // half-transparent edge is still pure red once unpremultiplied.
        var pixels = PixelBuffer(width: 64, height: 64)
        for y in 16..<48 { for x in 16..<48 { pixels[x, y] = (255, 0, 0, 255) } }
        pixels.premultiply()
        var out = Self.resample(pixels, to: 20, 20, premultiplied: true)
        out.unpremultiply()
        var sawEdge = false
        for y in 0..<20 {
            for x in 0..<20 where out[x, y].3 > 20 {
                #expect(out[x, y].0 >= 250 && out[x, y].1 <= 3 && out[x, y].2 <= 3, "\(x),\(y): \(out[x, y])")
                if out[x, y].3 < 235 { sawEdge = true }
            }
        }
        #expect(sawEdge)
    }

    @Test func coverCropKeepsTheCentreAtTheTargetAspect() {
        let wide = coverCrop(sourceWidth: 4000, sourceHeight: 1000, targetWidth: 1024, targetHeight: 512)
        #expect(wide == Rect(x: 1000, y: 0, width: 2000, height: 1000))
        let tall = coverCrop(sourceWidth: 1000, sourceHeight: 3000, targetWidth: 256, targetHeight: 256)
        #expect(tall == Rect(x: 0, y: 1000, width: 1000, height: 1000))
    }

    @Test func orientationMapsRectanglesLikePixels() {
        // A one-pixel display rectangle maps to the stored pixel the pixel mapping gives.
        for orientation in Orientation.allCases {
            let (w, h) = (7, 5)
            let (dw, dh) = orientation.displaySize(width: w, height: h)
            for dy in 0..<dh {
                for dx in 0..<dw {
                    let rect = orientation.storedRect(Rect(x: Double(dx), y: Double(dy), width: 1, height: 1), width: Double(w), height: Double(h))
                    let (sx, sy) = orientation.storedPixel(dx: dx, dy: dy, width: w, height: h)
                    #expect(rect == Rect(x: Double(sx), y: Double(sy), width: 1, height: 1), "\(orientation) \(dx),\(dy)")
                }
            }
        }
    }
}
