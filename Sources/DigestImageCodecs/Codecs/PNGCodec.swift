import CPNG

/// PNG through libpng's simplified API (`png_image_*`), which catches libpng's own errors and returns
/// a status: every colour type and bit depth, palettes with transparency, interlacing.
package enum PNGCodec {
    struct Header {
        var width: Int
        var height: Int
        var hasAlphaChannel: Bool
        var bitDepth = 8
        var interlaced = false
    }

    /// Reads the header, calls `check` (which throws to refuse, e.g. too many pixels) and decodes to
    /// 8-bit RGBA, straight alpha.
    static func decode(_ data: UnsafeRawBufferPointer, check: (Header) throws(ImageError) -> Void) throws(ImageError) -> PixelBuffer {
        // The size straight from IHDR, checked before libpng allocates anything for the image.
        let declared = try peekHeader(data)
        try check(declared)
        var image = png_image()
        image.version = CPNG_IMAGE_VERSION
        guard png_image_begin_read_from_memory(&image, data.baseAddress, data.count) != 0 else {
            throw failure(&image, "reading the PNG header")
        }
        let header = Header(
            width: Int(image.width), height: Int(image.height),
            hasAlphaChannel: image.format & UInt32(PNG_FORMAT_FLAG_ALPHA) != 0)
        do throws(ImageError) {
            try check(header)
        } catch {
            png_image_free(&image)
            throw error
        }
        if declared.bitDepth == 16 && declared.interlaced {
            // 8 bytes a pixel on the way: a quarter of the usual pixel limit keeps the peak the same.
            guard header.width * header.height <= 12_500_000 else {
                png_image_free(&image)
                throw ImageError(
                    .tooManyPixels, "a 16-bit interlaced PNG of \(header.width)×\(header.height) needs too much memory to decode",
                    context: ["width": "\(header.width)", "height": "\(header.height)", "limit": "12500000"])
            }
            return try decodeInterlaced16(&image, header: header)
        }
        image.format = CPNG_FORMAT_RGBA
        // Untagged 16-bit data is sRGB, as browsers show it (libpng would assume linear).
        image.flags |= UInt32(PNG_IMAGE_FLAG_16BIT_sRGB)
        let stride = header.width * 4
        return try PixelBuffer(width: header.width, height: header.height) { (buffer) throws(ImageError) in
            guard png_image_finish_read(&image, nil, buffer.baseAddress, Int32(stride), nil) != 0 else {
                throw failure(&image, "decoding PNG pixels")
            }
        }
    }

    /// Width, height and whether the colour type has alpha, read from the IHDR chunk.
    static func peekHeader(_ data: UnsafeRawBufferPointer) throws(ImageError) -> Header {
        guard data.count >= 33 else { throw ImageError(.truncated, "the PNG ends inside its header", context: ["bytes": "\(data.count)"]) }
        func be32(_ at: Int) -> Int { Int(data[at]) << 24 | Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3]) }
        guard be32(8) == 13, data[12] == 0x49, data[13] == 0x48, data[14] == 0x44, data[15] == 0x52 else {
            throw ImageError(.corrupt, "the PNG does not start with an IHDR chunk")
        }
        return Header(
            width: be32(16), height: be32(20), hasAlphaChannel: data[25] & 4 != 0, bitDepth: Int(data[24]), interlaced: data[28] == 1)
    }

    /// libpng 1.6.39's simplified reader scrambles the rows of 16-bit interlaced images when asked
    /// for 8-bit output (it repeats the last pass's rows); its 16-bit output is right. So read 16-bit
    /// (premultiplied, taken as sRGB-encoded, as browsers show untagged files) and narrow here.
    private static func decodeInterlaced16(_ image: inout png_image, header: Header) throws(ImageError) -> PixelBuffer {
        image.format = CPNG_FORMAT_LINEAR_RGB_ALPHA
        image.flags &= ~UInt32(PNG_IMAGE_FLAG_16BIT_sRGB)
        let count = header.width * header.height * 4
        var wide = [UInt16](repeating: 0, count: count)
        let ok = wide.withUnsafeMutableBytes { raw in
            png_image_finish_read(&image, nil, raw.baseAddress, Int32(header.width * 4), nil)
        }
        guard ok != 0 else { throw failure(&image, "decoding 16-bit interlaced PNG pixels") }
        return try PixelBuffer(width: header.width, height: header.height) { (out) throws(ImageError) in
            var i = 0
            while i < count {
                let a = UInt32(wide[i + 3])
                for c in 0..<3 {
                    let value = a == 0 ? 0 : min(255, (UInt32(wide[i + c]) * 255 + a / 2) / a)
                    out[i + c] = UInt8(value)
                }
                out[i + 3] = UInt8((a * 255 + 32895) >> 16)
                i += 4
            }
        }
    }

    /// Encodes straight-alpha RGBA pixels (or RGB, dropping the fourth byte, when `opaque`).
    package static func encode(_ pixels: PixelBuffer, opaque: Bool = false) throws(ImageError) -> [UInt8] {
        var image = png_image()
        image.version = CPNG_IMAGE_VERSION
        image.width = UInt32(pixels.width)
        image.height = UInt32(pixels.height)
        image.format = CPNG_FORMAT_RGBA
        image.flags = CPNG_IMAGE_FLAG_FAST
        // One pass into a buffer large enough for stored (uncompressed) deflate blocks.
        let raw = pixels.height * (1 + pixels.width * 4)
        var capacity = raw + raw / 64 + 8192
        var output = [UInt8](repeating: 0, count: capacity)
        var source = pixels
        if opaque {
            // Write RGB: pack in place.
            image.format = CPNG_FORMAT_RGB
            source = PixelBuffer(width: pixels.width, height: pixels.height)
            pixels.bytes.withUnsafeBufferPointer { src in
                source.bytes.withUnsafeMutableBufferPointer { dst in
                    var j = 0
                    var i = 0
                    while i < src.count {
                        dst[j] = src[i]
                        dst[j + 1] = src[i + 1]
                        dst[j + 2] = src[i + 2]
                        i += 4
                        j += 3
                    }
                }
            }
        }
        let stride = Int32(opaque ? pixels.width * 3 : pixels.width * 4)
        let ok = output.withUnsafeMutableBytes { out in
            source.bytes.withUnsafeBytes { src in
                png_image_write_to_memory(&image, out.baseAddress, &capacity, 0, src.baseAddress, stride, nil)
            }
        }
        guard ok != 0 else { throw failure(&image, "encoding PNG") }
        output.removeSubrange(capacity...)
        return output
    }

    /// Encodes as a palette PNG: a 6×6×6 colour cube, plus one transparent entry (written as tRNS)
    /// for pixels under half alpha when `keepAlpha`.
    package static func encodePalette(_ pixels: PixelBuffer, keepAlpha: Bool) throws(ImageError) -> [UInt8] {
        var colormap: [UInt8] = keepAlpha ? [0, 0, 0, 0] : []
        for r in 0..<6 { for g in 0..<6 { for b in 0..<6 { colormap += [UInt8(r * 51), UInt8(g * 51), UInt8(b * 51), 255] } } }
        let offset = keepAlpha ? 1 : 0
        var indices = [UInt8](repeating: 0, count: pixels.width * pixels.height)
        pixels.bytes.withUnsafeBufferPointer { p in
            for i in 0..<indices.count {
                if keepAlpha && p[i * 4 + 3] < 128 { continue }
                let r = (Int(p[i * 4]) + 25) / 51, g = (Int(p[i * 4 + 1]) + 25) / 51, b = (Int(p[i * 4 + 2]) + 25) / 51
                indices[i] = UInt8(offset + r * 36 + g * 6 + b)
            }
        }
        var image = png_image()
        image.version = CPNG_IMAGE_VERSION
        image.width = UInt32(pixels.width)
        image.height = UInt32(pixels.height)
        image.format = CPNG_FORMAT_RGBA_COLORMAP
        image.colormap_entries = UInt32(colormap.count / 4)
        var capacity = pixels.width * pixels.height * 2 + 8192
        var output = [UInt8](repeating: 0, count: capacity)
        let ok = output.withUnsafeMutableBytes { out in
            indices.withUnsafeBytes { src in
                colormap.withUnsafeBytes { map in
                    png_image_write_to_memory(&image, out.baseAddress, &capacity, 0, src.baseAddress, Int32(pixels.width), map.baseAddress)
                }
            }
        }
        guard ok != 0 else { throw failure(&image, "encoding a palette PNG") }
        output.removeSubrange(capacity...)
        return output
    }

    private static func failure(_ image: inout png_image, _ doing: String) -> ImageError {
        let message = withUnsafeBytes(of: image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        png_image_free(&image)
        let lowered = message.lowercased()
        let code: ImageError.Code =
            lowered.contains("zero") ? .zeroSize
            : (lowered.contains("eof") || lowered.contains("end") || lowered.contains("truncat") || lowered.contains("not enough")) ? .truncated
            : .corrupt
        return ImageError(code, "libpng failed \(doing): \(message)", context: ["library": "libpng"])
    }
}
