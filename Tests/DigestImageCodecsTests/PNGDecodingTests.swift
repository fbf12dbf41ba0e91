import DigestDemo
@testable import DigestImageCodecs
import DigestTesting
import Testing

/// Every PNG colour type and bit depth, interlaced and not, decoded and compared pixel by pixel.
@Suite struct PNGDecodingTests {
    static let width = 13
    static let height = 7

    struct Case: CustomTestStringConvertible, Sendable {
        var colorType: PNGFixture.ColorType
        var bitDepth: Int
        var interlaced: Bool
        var testDescription: String { "\(colorType) \(bitDepth)-bit\(interlaced ? " interlaced" : "")" }
    }

    static let cases: [Case] = PNGFixture.ColorType.allCases.flatMap { type in
        type.bitDepths.flatMap { depth in [false, true].map { Case(colorType: type, bitDepth: depth, interlaced: $0) } }
    }

    /// Samples for pixel (x, y), within the bit depth.
    static func samples(_ c: Case, _ x: Int, _ y: Int) -> [Int] {
        let max = (1 << c.bitDepth) - 1
        let spread = c.bitDepth == 16 ? 257 : 1
        return (0..<c.colorType.channels).map { (channel: Int) -> Int in
            let base: Int = x * 37 + y * 101 + channel * 53
            return (base * spread) % (max + 1)
        }
    }

    /// A palette of `count` entries and a tRNS chunk making entry i's alpha `i * 17 % 256`.
    static func palette(_ count: Int) -> ([(UInt8, UInt8, UInt8)], [UInt8]) {
        var entries: [(UInt8, UInt8, UInt8)] = []
        var alpha: [UInt8] = []
        for i in 0..<count {
            let r: Int = i * 7 % 256, g: Int = 255 - i % 256, b: Int = i * 13 % 256
            entries.append((UInt8(r), UInt8(g), UInt8(b)))
            alpha.append(UInt8(i * 17 % 256))
        }
        return (entries, alpha)
    }

    /// What libpng's 8-bit RGBA output should hold for a sample.
    static func to8(_ value: Int, _ depth: Int) -> Int {
        depth == 16 ? (value * 255 + 32895) >> 16 : value * 255 / ((1 << depth) - 1)
    }

    static func expected(_ c: Case, _ x: Int, _ y: Int) -> [Int] {
        let s = samples(c, x, y)
        switch c.colorType {
        case .gray: return [to8(s[0], c.bitDepth), to8(s[0], c.bitDepth), to8(s[0], c.bitDepth), 255]
        case .grayAlpha: return [to8(s[0], c.bitDepth), to8(s[0], c.bitDepth), to8(s[0], c.bitDepth), to8(s[1], c.bitDepth)]
        case .rgb: return s.map { to8($0, c.bitDepth) } + [255]
        case .rgba: return s.map { to8($0, c.bitDepth) }
        case .palette:
            let (entries, alpha) = palette(1 << c.bitDepth)
            let e = entries[s[0]]
            return [Int(e.0), Int(e.1), Int(e.2), Int(alpha[s[0]])]
        }
    }

    @Test(arguments: cases)
    func decodesEveryPixel(_ c: Case) throws {
        let (entries, alpha) = Self.palette(1 << min(c.bitDepth, 8))
        let png = PNGFixture.make(
            width: Self.width, height: Self.height, colorType: c.colorType, bitDepth: c.bitDepth, interlaced: c.interlaced,
            palette: c.colorType == .palette ? entries : [], transparency: c.colorType == .palette ? alpha : nil
        ) { x, y in Self.samples(c, x, y) }
        let pixels = try png.withUnsafeBytes { raw in try PNGCodec.decode(raw) { _ in } }
        #expect(pixels.width == Self.width && pixels.height == Self.height)
        var worst = 0
        for y in 0..<Self.height {
            for x in 0..<Self.width {
                let p = pixels[x, y]
                let got = [Int(p.0), Int(p.1), Int(p.2), Int(p.3)]
                let want = Self.expected(c, x, y)
                // Fully transparent pixels may carry any colour.
                let channels = want[3] == 0 ? [3] : [0, 1, 2, 3]
                for i in channels { worst = max(worst, abs(got[i] - want[i])) }
            }
        }
        #expect(worst <= (c.bitDepth == 16 ? 1 : 0), "largest difference \(worst)")
    }

    @Test func grayWithTRNSMakesThatGrayTransparent() throws {
        let png = PNGFixture.make(width: 4, height: 1, colorType: .gray, bitDepth: 8, transparency: [0, 100]) { x, _ in [x == 1 ? 100 : 50] }
        let pixels = try png.withUnsafeBytes { raw in try PNGCodec.decode(raw) { _ in } }
        #expect(pixels[1, 0].3 == 0)
        #expect(pixels[0, 0].3 == 255)
        #expect(pixels.hasTransparency)
    }

    @Test func rgbWithTRNSMakesThatColourTransparent() throws {
        let png = PNGFixture.make(width: 3, height: 1, colorType: .rgb, bitDepth: 8, transparency: [0, 10, 0, 20, 0, 30]) { x, _ in
            x == 2 ? [10, 20, 30] : [200, 100, 50]
        }
        let pixels = try png.withUnsafeBytes { raw in try PNGCodec.decode(raw) { _ in } }
        #expect(pixels[2, 0].3 == 0)
        #expect(pixels[0, 0] == (200, 100, 50, 255))
    }

    @Test func encodedPNGsDecodeToTheSamePixels() throws {
        var source = SamplePictures.logo(width: 40, height: 30, seed: 7)
        source[0, 0] = (1, 2, 3, 4)
        let png = try PNGCodec.encode(source)
        let back = try png.withUnsafeBytes { raw in try PNGCodec.decode(raw) { _ in } }
        #expect(back == source)
        let palette = try PNGCodec.encodePalette(source, keepAlpha: true)
        let decoded = try palette.withUnsafeBytes { raw in try PNGCodec.decode(raw) { _ in } }
        #expect(decoded.hasTransparency)
    }
}
