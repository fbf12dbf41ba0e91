import DigestDemo
@testable import DigestImageCodecs
import DigestTesting
import Testing

/// Source → hero and icon: sizes, formats, byte limits, transparency, GIF pass-through, and every
/// kind of bad file ending in a reason.
@Suite struct RenditionTests {
    static let maker = RenditionMaker()

    static func jpeg(_ w: Int, _ h: Int, seed: UInt64 = 1, progressive: Bool = false) throws -> [UInt8] {
        try SamplePictures.jpeg(SamplePictures.photo(width: w, height: h, seed: seed), quality: 85, progressive: progressive)
    }

    static func pixels(of file: RenderedImage) throws -> PixelBuffer {
        let spec = RenditionSpec(name: "check", width: file.width, height: file.height, maxBytes: 10_000_000)
        return try maker.resample(file.data, specs: [spec])[0].pixels
    }

    static func reason(_ bytes: [UInt8], maker: RenditionMaker = maker) -> String? {
        do {
            _ = try maker.render(bytes, specs: [.hero, .icon])
            return nil
        } catch {
            return error.reason
        }
    }

    @Test(arguments: [(1600, 1200, false), (1200, 1600, true), (3000, 800, false), (640, 480, true), (300, 200, false)])
    func photosMakeAJPEGHeroAndIcon(_ w: Int, _ h: Int, _ progressive: Bool) throws {
        let files = try Self.maker.render(try Self.jpeg(w, h, progressive: progressive), specs: [.hero, .icon])
        #expect(files.count == 2)
        #expect(files[0].mimeType == "image/jpeg" && files[0].width == 1024 && files[0].height == 512)
        #expect(files[1].mimeType == "image/jpeg" && files[1].width == 256 && files[1].height == 256)
        #expect(files.allSatisfy { $0.data.count < 1_000_000 && $0.data.starts(with: [0xFF, 0xD8, 0xFF]) })
        #expect(files[0].quality == 82)
        #expect(fileExtension(forMIMEType: files[0].mimeType) == "jpg")
        let hero = try Self.pixels(of: files[0])
        #expect(hero.width == 1024 && hero.height == 512)
    }

    @Test func heroShowsTheCentreOfTheSource() throws {
        // Source: a green band across the middle third of a red picture; the 2:1 crop of a 4:3
        // source keeps the middle rows, so the hero's centre is green and its top edge red.
        var pixels = PixelBuffer(width: 800, height: 600)
        for y in 0..<600 { for x in 0..<800 { pixels[x, y] = (200..<400).contains(y) ? (0, 200, 0, 255) : (200, 0, 0, 255) } }
        let files = try Self.maker.render(try SamplePictures.jpeg(pixels, quality: 95), specs: [.hero])
        let hero = try Self.pixels(of: files[0])
        #expect(hero[512, 256].1 > 180 && hero[512, 256].0 < 30)
        #expect(hero[512, 3].0 > 180 && hero[512, 3].1 < 30)
    }

    /// The JPEG path (DCT scaling, column crop in the decoder, skipped rows) gives the same picture as
    /// the PNG path (whole image decoded, no shortcuts) for the same pixels.
    @Test(arguments: [(2400, 1800, false), (2400, 1800, true), (1000, 1400, false), (3000, 1000, true)])
    func croppedScaledJPEGDecodingMatchesAFullDecode(_ w: Int, _ h: Int, _ progressive: Bool) throws {
        let photo = SamplePictures.photo(width: w, height: h, seed: 31)
        let jpeg = try SamplePictures.jpeg(photo, quality: 100, progressive: progressive)
        let png = try SamplePictures.png(photo, opaque: true)
        for spec in [RenditionSpec.hero, .icon] {
            let viaJPEG = try Self.maker.resample(jpeg, specs: [spec])[0].pixels
            let viaPNG = try Self.maker.resample(png, specs: [spec])[0].pixels
            var total = 0
            for i in 0..<viaJPEG.bytes.count { total += abs(Int(viaJPEG.bytes[i]) - Int(viaPNG.bytes[i])) }
            let mean = Double(total) / Double(viaJPEG.bytes.count)
            #expect(mean < 3, "\(spec.name): mean difference \(mean)")
        }
    }

    @Test func qualityStepsDownToMeetTheByteLimit() throws {
        let source = try Self.jpeg(1024, 512, seed: 9)
        let tight = RenditionSpec(name: "tight", width: 1024, height: 512, maxBytes: 60_000)
        let file = try Self.maker.render(source, specs: [tight])[0]
        #expect(file.data.count < 60_000)
        #expect((file.quality ?? 100) < 82)
        let impossible = RenditionSpec(name: "tiny", width: 1024, height: 512, maxBytes: 2_000)
        #expect(throws: ImageError.self) { try Self.maker.render(source, specs: [impossible]) }
        #expect(Self.reason(source, maker: RenditionMaker()) == nil)
    }

    @Test func transparencyStaysPNGAndOpaquePNGsBecomeJPEG() throws {
        let logo = try SamplePictures.png(SamplePictures.logo(width: 600, height: 400, seed: 4))
        let files = try Self.maker.render(logo, specs: [.hero, .icon])
        #expect(files.map(\.mimeType) == ["image/png", "image/png"])
        #expect(files[0].width == 1024 && files[0].height == 512)
        let hero = try Self.pixels(of: files[0])
        #expect(hero.hasTransparency)
        #expect(hero[0, 0].3 == 0)

        let opaque = try SamplePictures.png(SamplePictures.photo(width: 600, height: 400, seed: 4), opaque: true)
        #expect(try Self.maker.render(opaque, specs: [.hero]).map(\.mimeType) == ["image/jpeg"])
        let palette = try SamplePictures.palettePNG(SamplePictures.photo(width: 300, height: 200, seed: 5))
        #expect(try Self.maker.render(palette, specs: [.hero]).map(\.mimeType) == ["image/jpeg"])
        let paletteAlpha = try SamplePictures.palettePNG(SamplePictures.logo(width: 300, height: 200, seed: 5), keepAlpha: true)
        #expect(try Self.maker.render(paletteAlpha, specs: [.icon]).map(\.mimeType) == ["image/png"])
    }

    @Test func transparencyTooLargeForPNGIsFlattenedOnWhiteAsJPEG() throws {
        // A grainy photo with a transparent corner: as PNG it is far over the limit, as JPEG well under.
        var photo = SamplePictures.photo(width: 256, height: 256, seed: 8)
        for y in 0..<64 { for x in 0..<64 { photo[x, y] = (0, 0, 0, 0) } }
        let source = try SamplePictures.png(photo)
        let limited = RenditionSpec(name: "limited", width: 256, height: 256, maxBytes: 100_000)
        #expect(try PNGCodec.encode(photo).count > 100_000)
        let file = try Self.maker.render(source, specs: [limited])[0]
        #expect(file.mimeType == "image/jpeg")
        let pixels = try Self.pixels(of: file)
        // The transparent corner is white now, not black.
        #expect(pixels[10, 10].0 > 240 && pixels[10, 10].1 > 240 && pixels[10, 10].2 > 240, "\(pixels[10, 10])")
    }

    @Test func gifsPassThroughUnchangedForTheHeroOnly() throws {
        let gif = ImageBytes.gif(width: 40, height: 20)
        let files = try Self.maker.render(gif, specs: [.hero, .icon])
        #expect(files.count == 1)
        #expect(files[0].mimeType == "image/gif" && files[0].data == gif && files[0].width == 40 && files[0].height == 20)
        let big = ImageBytes.gif(width: 40, height: 20, padding: 1_100_000)
        #expect(Self.reason(big) == "rendition_too_large")
    }


    // MARK: Bad files

    @Test func truncatedJPEGsAreRejected() throws {
        for progressive in [false, true] {
            let jpeg = try Self.jpeg(800, 600, progressive: progressive)
            #expect(Self.reason(Array(jpeg.prefix(jpeg.count / 2))) == "truncated", "progressive: \(progressive)")
            #expect(Self.reason(Array(jpeg.prefix(400))) == "truncated", "progressive: \(progressive)")
        }
    }

    @Test func truncatedPNGsAndBadCRCsAreRejected() throws {
        let png = try SamplePictures.png(SamplePictures.photo(width: 300, height: 200, seed: 2), opaque: true)
        #expect(Self.reason(Array(png.prefix(png.count / 2))) == "truncated")
        #expect(Self.reason(Array(png.prefix(40))) != nil)
        // Flip a byte inside the first IDAT's data: its CRC no longer matches.
        var damaged = png
        let idat = ImageBytes.find(Array("IDAT".utf8), in: png)!
        damaged[idat + 20] ^= 0x55
        #expect(Self.reason(damaged) == "corrupt")
        // A bad CRC on IHDR itself.
        var header = png
        header[29] ^= 0xFF
        #expect(Self.reason(header) == "corrupt")
    }

    @Test func hugeClaimsAreRefusedBeforeDecoding() throws {
        let png = PNGFixture.signature + PNGFixture.chunk("IHDR", PNGFixture.header(width: 100_000, height: 100_000, bitDepth: 8, colorType: 2))
            + PNGFixture.chunk("IDAT", PNGFixture.zlibStored([0, 1, 2, 3])) + PNGFixture.chunk("IEND", [])
        #expect(Self.reason(png) == "too_many_pixels")
        // JPEG sizes are 16-bit: 65,535 × 65,535 is the largest claim possible.
        var jpeg = try Self.jpeg(64, 48)
        let sof = ImageBytes.find([0xFF, 0xC0], in: jpeg)!
        jpeg[sof + 5] = 0xFF; jpeg[sof + 6] = 0xFF; jpeg[sof + 7] = 0xFF; jpeg[sof + 8] = 0xFF
        #expect(Self.reason(jpeg) == "too_many_pixels")
        jpeg[sof + 5] = 0xEA; jpeg[sof + 6] = 0x60; jpeg[sof + 7] = 0xEA; jpeg[sof + 8] = 0x60  // 60,000 × 60,000
        #expect(Self.reason(jpeg) == "too_many_pixels")
        #expect(Self.reason(ImageBytes.gif(width: 65_535, height: 65_535)) == "too_many_pixels")
    }

    @Test func zeroSizedImagesAreRejected() throws {
        let png = PNGFixture.signature + PNGFixture.chunk("IHDR", PNGFixture.header(width: 0, height: 10, bitDepth: 8, colorType: 2))
            + PNGFixture.chunk("IEND", [])
        #expect(Self.reason(png) == "zero_size")
        var jpeg = try Self.jpeg(64, 48)
        let sof = ImageBytes.find([0xFF, 0xC0], in: jpeg)!
        jpeg[sof + 5] = 0; jpeg[sof + 6] = 0
        #expect(Self.reason(jpeg) == "zero_size")
        #expect(Self.reason(ImageBytes.gif(width: 0, height: 0)) == "zero_size")
    }

    @Test func otherTypesAreRejectedWithTheirReason() {
        let webp = Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WEBPVP8 ".utf8) + [UInt8](repeating: 0, count: 24)
        #expect(Self.reason(webp) == "unsupported_type")
        #expect(Self.reason(Array("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8)) == "unsupported_type")
        #expect(Self.reason(Array("  <!DOCTYPE html><html><body>Not found</body></html>".utf8)) == "not_an_image")
        #expect(Self.reason([]) == "empty_body")
        #expect(Self.reason([0, 1, 2, 3, 4, 5]) == "not_an_image")
        #expect(Self.reason([0xFF, 0xD8, 0xFF]) != nil)
    }

    @Test func sniffingReadsMagicBytesOnly() {
        #expect(ImageKind(sniffing: [0xFF, 0xD8, 0xFF, 0xE0]) == .jpeg)
        #expect(ImageKind(sniffing: PNGFixture.signature) == .png)
        #expect(ImageKind(sniffing: Array("GIF87a".utf8)) == .gif)
        #expect(ImageKind(sniffing: Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBP".utf8)) == .webp)
        #expect(ImageKind(sniffing: Array("\u{FEFF}<svg>".utf8)) == .svg)
        #expect(ImageKind(sniffing: Array("<HTML>".utf8)) == .html)
        #expect(ImageKind(sniffing: [UInt8]()) == .empty)
    }
}
