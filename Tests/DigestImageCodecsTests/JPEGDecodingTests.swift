import DigestDemo
@testable import DigestImageCodecs
import Testing

/// JPEG variants decoded through the rendition path at 1:1 and compared with the colours drawn.
@Suite struct JPEGDecodingTests {
    static let red: (Int, Int, Int) = (230, 30, 40)
    static let green: (Int, Int, Int) = (40, 200, 60)
    static let blue: (Int, Int, Int) = (30, 50, 220)
    static let white: (Int, Int, Int) = (250, 250, 250)

    /// Four flat quadrants: red, green / blue, white.
    static func quadrants(width: Int, height: Int) -> PixelBuffer {
        var pixels = PixelBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let c = y < height / 2 ? (x < width / 2 ? red : green) : (x < width / 2 ? blue : white)
                pixels[x, y] = (UInt8(c.0), UInt8(c.1), UInt8(c.2), 255)
            }
        }
        return pixels
    }

    static func encode(_ pixels: PixelBuffer, layout: JPEGEncoder.Layout = .rgbx, progressive: Bool = false, orientation: Int? = nil) throws -> [UInt8] {
        let encoder = try JPEGEncoder()
        var input = pixels.bytes
        var stride = pixels.stride
        switch layout {
        case .gray:
            input = stride0(pixels) { r, _, _ in [UInt8(r)] }
            stride = pixels.width
        case .cmyk, .cmykAsYCCK:
            // Adobe convention: stored values are inverted ink (255 = no ink).
            input = stride0(pixels) { r, g, b in
                let k = max(r, g, b)
                guard k > 0 else { return [0, 0, 0, 0] }
                return [r * 255 / k, g * 255 / k, b * 255 / k, k].map { UInt8($0) }
            }
        default: break
        }
        return try input.withUnsafeBytes { raw in
            try encoder.encode(
                raw, width: pixels.width, height: pixels.height, stride: stride, layout: layout, quality: 100,
                progressive: progressive, app1: orientation.map { ExifOrientation.block(orientation: $0) })
        }
    }

    static func stride0(_ pixels: PixelBuffer, _ f: (Int, Int, Int) -> [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for y in 0..<pixels.height {
            for x in 0..<pixels.width {
                let p = pixels[x, y]
                out += f(Int(p.0), Int(p.1), Int(p.2))
            }
        }
        return out
    }

    static func decodeAtFullSize(_ jpeg: [UInt8], width: Int, height: Int) throws -> PixelBuffer {
        let spec = RenditionSpec(name: "same", width: width, height: height, maxBytes: 10_000_000)
        return try RenditionMaker().resample(jpeg, specs: [spec])[0].pixels
    }

    static func close(_ p: (UInt8, UInt8, UInt8, UInt8), _ c: (Int, Int, Int), tolerance: Int = 4) -> Bool {
        abs(Int(p.0) - c.0) <= tolerance && abs(Int(p.1) - c.1) <= tolerance && abs(Int(p.2) - c.2) <= tolerance && p.3 == 255
    }

    enum Variant: String, CaseIterable, Sendable {
        case baseline, progressive, storedAsRGB, cmykAdobe, ycckAdobe
    }

    @Test(arguments: Variant.allCases)
    func decodesColourVariants(_ variant: Variant) throws {
        let source = Self.quadrants(width: 64, height: 48)
        let jpeg: [UInt8]
        switch variant {
        case .baseline: jpeg = try Self.encode(source)
        case .progressive: jpeg = try Self.encode(source, progressive: true)
        case .storedAsRGB: jpeg = try Self.encode(source, layout: .rgbxAsRGB)
        case .cmykAdobe: jpeg = try Self.encode(source, layout: .cmyk)
        case .ycckAdobe: jpeg = try Self.encode(source, layout: .cmykAsYCCK)
        }
        let decoded = try Self.decodeAtFullSize(jpeg, width: 64, height: 48)
        let tolerance = variant == .cmykAdobe || variant == .ycckAdobe ? 6 : 4
        #expect(Self.close(decoded[16, 12], Self.red, tolerance: tolerance), "\(decoded[16, 12])")
        #expect(Self.close(decoded[48, 12], Self.green, tolerance: tolerance), "\(decoded[48, 12])")
        #expect(Self.close(decoded[16, 36], Self.blue, tolerance: tolerance), "\(decoded[16, 36])")
        #expect(Self.close(decoded[48, 36], Self.white, tolerance: tolerance), "\(decoded[48, 36])")
    }

    @Test func decodesGrayscale() throws {
        let source = Self.quadrants(width: 32, height: 32)
        let jpeg = try Self.encode(source, layout: .gray)
        let decoded = try Self.decodeAtFullSize(jpeg, width: 32, height: 32)
        #expect(Self.close(decoded[8, 8], (230, 230, 230), tolerance: 3), "\(decoded[8, 8])")
        #expect(Self.close(decoded[8, 24], (30, 30, 30), tolerance: 3), "\(decoded[8, 24])")
    }

    @Test(arguments: Orientation.allCases)
    func appliesEXIFOrientation(_ orientation: Orientation) throws {
        let stored = Self.quadrants(width: 64, height: 32)
        let jpeg = try Self.encode(stored, orientation: orientation.rawValue)
        let (w, h) = orientation.displaySize(width: 64, height: 32)
        let decoded = try Self.decodeAtFullSize(jpeg, width: w, height: h)
        #expect(decoded.width == w && decoded.height == h)
        // Each display corner shows the stored pixel the orientation maps it to.
        for (dx, dy) in [(4, 4), (w - 5, 4), (4, h - 5), (w - 5, h - 5)] {
            let (sx, sy) = orientation.storedPixel(dx: dx, dy: dy, width: 64, height: 32)
            let s = stored[sx, sy]
            #expect(Self.close(decoded[dx, dy], (Int(s.0), Int(s.1), Int(s.2))), "\(orientation) at \(dx),\(dy)")
        }
    }

    @Test func exifParsesBothByteOrders() {
        for bigEndian in [false, true] {
            let block = ExifOrientation.block(orientation: 6, bigEndian: bigEndian).dropFirst(6)
            let parsed = Array(block).withUnsafeBytes { ExifOrientation.read($0) }
            #expect(parsed == .right)
        }
        let garbage: [UInt8] = [0x49, 0x49, 42, 0, 0xFF, 0xFF, 0xFF, 0x7F]
        #expect(garbage.withUnsafeBytes { ExifOrientation.read($0) } == .up)
    }

    @Test func shrinkOnLoadPicksTheLargestScaleThatKeepsEnoughPixels() {
        func factor(_ w: Int, _ h: Int, _ spec: RenditionSpec) -> Int {
            RenditionMaker.shrinkFactor([CropPlan(spec: spec, width: w, height: h, orientation: .up)])
        }
        #expect(factor(4000, 3000, .hero) == 2)  // crop 4000×2000 → 2000×1000 ≥ 1024×512
        #expect(factor(8192, 4096, .hero) == 8)
        #expect(factor(1024, 512, .hero) == 1)
        #expect(factor(4000, 3000, .icon) == 8)  // crop 3000×3000 → 375 ≥ 256
        #expect(RenditionMaker.shrinkFactor([
            CropPlan(spec: .hero, width: 4000, height: 3000, orientation: .up),
            CropPlan(spec: .icon, width: 4000, height: 3000, orientation: .up),
        ]) == 2)
    }

    @Test func shrinkOnLoadLooksLikeAFullDecode() throws {
        let photo = SamplePictures.photo(width: 1200, height: 800, seed: 3)
        let jpeg = try SamplePictures.jpeg(photo, quality: 90)
        let spec = RenditionSpec(name: "small", width: 120, height: 80, maxBytes: 1_000_000)
        let fast = try RenditionMaker().resample(jpeg, specs: [spec])[0].pixels
        var configuration = RenditionMaker.Configuration()
        configuration.shrinkOnLoad = false
        let full = try RenditionMaker(configuration: configuration).resample(jpeg, specs: [spec])[0].pixels
        var total = 0
        for i in 0..<fast.bytes.count { total += abs(Int(fast.bytes[i]) - Int(full.bytes[i])) }
        let mean = Double(total) / Double(fast.bytes.count)
        #expect(mean < 4, "mean difference \(mean)")
    }
}
