import DigestCore
package import DigestImageCodecs

/// Pictures made from a seed, for the demo, the benchmark corpus and tests: photo-like landscapes
/// (gradient sky, sun, hills, textured grass, sensor noise) and logo-like shapes on a transparent
/// background. Encoded with the project's own JPEG and PNG encoders.
package enum SamplePictures {
    /// A file to serve or write.
    package struct Picture: Sendable {
        package var name: String
        package var bytes: [UInt8]
        package var contentType: String
    }

    /// A landscape `width`×`height`, opaque.
    package static func photo(width: Int, height: Int, seed: UInt64) -> PixelBuffer {
        var random = SplitMix64(seed: seed)
        let skyTop = (random.next(in: 40...120), random.next(in: 90...170), random.next(in: 170...250))
        let skyLow = (random.next(in: 180...250), random.next(in: 160...230), random.next(in: 150...220))
        let grass = (random.next(in: 40...110), random.next(in: 100...170), random.next(in: 30...80))
        let sunX = Int(random.next() % UInt64(max(1, width)))
        let sunY = height / 6 + Int(random.next() % UInt64(max(1, height / 4)))
        let sunR = max(2, min(width, height) / 12)
        // Hill height per column: a few octaves of a cheap periodic function.
        var horizon = [Int](repeating: 0, count: width)
        let phases = (0..<4).map { _ in Int(random.next() % 1024) }
        for x in 0..<width {
            var h = 0
            for (octave, phase) in phases.enumerated() {
                let period = max(8, width >> (octave + 1))
                let t = ((x + phase * period / 1024) % period) * 512 / period  // 0..<512
                let tri = t < 256 ? t : 511 - t  // 0…255 triangle
                h += (tri * height) >> (octave + 11)
            }
            horizon[x] = height / 2 + h - height / 8
        }
        var pixels = PixelBuffer(width: width, height: height)
        var noise = random.next() | 1
        pixels.bytes.withUnsafeMutableBufferPointer { p in
            for y in 0..<height {
                let t = y * 256 / max(1, height)
                let sky = (
                    (skyTop.0 * (256 - t) + skyLow.0 * t) >> 8, (skyTop.1 * (256 - t) + skyLow.1 * t) >> 8,
                    (skyTop.2 * (256 - t) + skyLow.2 * t) >> 8
                )
                let dy = y - sunY
                for x in 0..<width {
                    noise ^= noise << 13
                    noise ^= noise >> 7
                    noise ^= noise << 17
                    let grain = Int(noise & 15) - 8
                    var (r, g, b): (Int, Int, Int)
                    if y > horizon[x] {
                        let depth = (y - horizon[x]) * 64 / max(1, height)
                        let blade = Int((noise >> 8) & 31) - 16
                        r = grass.0 - depth + blade / 2
                        g = grass.1 - depth + blade
                        b = grass.2 - depth / 2
                    } else {
                        let dx = x - sunX
                        if dx * dx + dy * dy < sunR * sunR {
                            (r, g, b) = (255, 236, 170)
                        } else {
                            (r, g, b) = sky
                        }
                    }
                    let i = (y * width + x) * 4
                    p[i] = UInt8(clamping: r + grain)
                    p[i + 1] = UInt8(clamping: g + grain)
                    p[i + 2] = UInt8(clamping: b + grain)
                    p[i + 3] = 255
                }
            }
        }
        return pixels
    }

    /// A logo: a coloured disc with a soft edge and a square hole, on a transparent background.
    package static func logo(width: Int, height: Int, seed: UInt64) -> PixelBuffer {
        var random = SplitMix64(seed: seed)
        let colour = (UInt8(random.next(in: 0...255)), UInt8(random.next(in: 0...200)), UInt8(random.next(in: 60...255)))
        var pixels = PixelBuffer(width: width, height: height)
        let cx = width * 8, cy = height * 8  // 1/16 pixel units
        let radius = min(width, height) * 7
        let hole = min(width, height) / 6
        pixels.bytes.withUnsafeMutableBufferPointer { p in
            for y in 0..<height {
                for x in 0..<width {
                    let dx = x * 16 + 8 - cx, dy = y * 16 + 8 - cy
                    let distance = Int(Double(dx * dx + dy * dy).squareRoot())
                    var alpha = max(0, min(255, (radius - distance) * 255 / 24))
                    if abs(x - width / 2) < hole && abs(y - height / 2) < hole { alpha = 0 }
                    let i = (y * width + x) * 4
                    p[i] = colour.0
                    p[i + 1] = colour.1
                    p[i + 2] = colour.2
                    p[i + 3] = UInt8(alpha)
                }
            }
        }
        return pixels
    }

    /// `pixels` as a JPEG (RGBX input), optionally progressive and with an EXIF orientation.
    package static func jpeg(_ pixels: PixelBuffer, quality: Int = 88, progressive: Bool = false, orientation: Int? = nil) throws(ImageError) -> [UInt8] {
        let encoder = try JPEGEncoder()
        return try pixels.bytes.withImageBytes { (raw) throws(ImageError) in
            try encoder.encode(
                raw, width: pixels.width, height: pixels.height, stride: pixels.stride, quality: quality,
                progressive: progressive, app1: orientation.map { ExifOrientation.block(orientation: $0) })
        }
    }

    /// `pixels` (straight alpha) as an RGBA PNG, or RGB when `opaque`.
    package static func png(_ pixels: PixelBuffer, opaque: Bool = false) throws(ImageError) -> [UInt8] {
        try PNGCodec.encode(pixels, opaque: opaque)
    }

    /// A palette PNG made by quantising `pixels` to a 6×6×6 colour cube (plus alpha as tRNS when
    /// `keepAlpha`), written through libpng's colour-mapped simplified API.
    package static func palettePNG(_ pixels: PixelBuffer, keepAlpha: Bool = false) throws(ImageError) -> [UInt8] {
        try PNGCodec.encodePalette(pixels, keepAlpha: keepAlpha)
    }

    /// The demo's pictures: `count` distinct images, mostly photos (baseline and progressive JPEG,
    /// one turned by EXIF orientation), some opaque PNGs and some logos with transparency.
    package static func demo(count: Int, width: Int = 960, height: Int = 640) throws(ImageError) -> [Picture] {
        var pictures: [Picture] = []
        for index in 0..<count {
            let seed = UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15
            switch index % 6 {
            case 4:
                let logo = logo(width: height, height: height, seed: seed)
                pictures.append(Picture(name: "picture-\(index + 1).png", bytes: try png(logo), contentType: "image/png"))
            case 5:
                let photo = photo(width: width, height: height, seed: seed)
                pictures.append(Picture(name: "picture-\(index + 1).png", bytes: try png(photo, opaque: true), contentType: "image/png"))
            default:
                let photo = photo(width: width, height: height, seed: seed)
                let bytes = try jpeg(photo, progressive: index % 6 == 1, orientation: index % 6 == 2 ? 1 : nil)
                pictures.append(Picture(name: "picture-\(index + 1).jpg", bytes: bytes, contentType: "image/jpeg"))
            }
        }
        return pictures
    }
}
