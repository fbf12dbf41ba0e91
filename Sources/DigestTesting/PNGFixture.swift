/// Writes PNG files byte by byte, for tests: any colour type and bit depth, palettes with tRNS,
/// Adam7 interlacing, and deliberate damage (bad CRCs, truncation, lying headers). The image data is
/// stored uncompressed (deflate "stored" blocks), so the bytes are fully under the test's control.
package enum PNGFixture {
    package enum ColorType: UInt8, Sendable, CaseIterable {
        case gray = 0, rgb = 2, palette = 3, grayAlpha = 4, rgba = 6

        package var channels: Int {
            switch self {
            case .gray, .palette: 1
            case .grayAlpha: 2
            case .rgb: 3
            case .rgba: 4
            }
        }

        /// Bit depths the PNG specification allows for this colour type.
        package var bitDepths: [Int] {
            switch self {
            case .gray: [1, 2, 4, 8, 16]
            case .palette: [1, 2, 4, 8]
            case .rgb, .grayAlpha, .rgba: [8, 16]
            }
        }
    }

    package static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// A PNG whose pixel (x, y) has the channel samples `sample(x, y)` (each within the bit depth).
    package static func make(
        width: Int, height: Int, colorType: ColorType, bitDepth: Int, interlaced: Bool = false,
        palette: [(UInt8, UInt8, UInt8)] = [], transparency: [UInt8]? = nil, sample: (Int, Int) -> [Int]
    ) -> [UInt8] {
        var out = signature
        out += chunk("IHDR", header(width: width, height: height, bitDepth: bitDepth, colorType: colorType.rawValue, interlaced: interlaced))
        if colorType == .palette { out += chunk("PLTE", palette.flatMap { [$0.0, $0.1, $0.2] }) }
        if let transparency { out += chunk("tRNS", transparency) }
        var raw: [UInt8] = []
        let passes: [(Int, Int, Int, Int)] =
            interlaced ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)] : [(0, 0, 1, 1)]
        for (x0, y0, dx, dy) in passes {
            let xs = Array(stride(from: x0, to: width, by: dx))
            let ys = Array(stride(from: y0, to: height, by: dy))
            guard !xs.isEmpty, !ys.isEmpty else { continue }
            for y in ys {
                raw.append(0)  // filter: none
                raw += packRow(xs.map { sample($0, y) }, bitDepth: bitDepth)
            }
        }
        out += chunk("IDAT", zlibStored(raw))
        out += chunk("IEND", [])
        return out
    }

    /// The 13 bytes of an IHDR chunk's data.
    package static func header(width: Int, height: Int, bitDepth: Int, colorType: UInt8, interlaced: Bool = false) -> [UInt8] {
        be32(UInt32(truncatingIfNeeded: width)) + be32(UInt32(truncatingIfNeeded: height))
            + [UInt8(bitDepth), colorType, 0, 0, interlaced ? 1 : 0]
    }

    /// A chunk: length, type, data, CRC.
    package static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return be32(UInt32(data.count)) + typeBytes + data + be32(crc32(typeBytes + data))
    }

    /// Packs samples (MSB first below 8 bits, big-endian at 16).
    static func packRow(_ pixels: [[Int]], bitDepth: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        if bitDepth >= 8 {
            for pixel in pixels {
                for value in pixel {
                    if bitDepth == 16 { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] } else { bytes.append(UInt8(value)) }
                }
            }
            return bytes
        }
        var current = 0, used = 0
        for pixel in pixels {
            for value in pixel {
                current = current << bitDepth | value
                used += bitDepth
                if used == 8 {
                    bytes.append(UInt8(current))
                    current = 0
                    used = 0
                }
            }
        }
        if used > 0 { bytes.append(UInt8(current << (8 - used))) }
        return bytes
    }

    /// zlib stream of stored deflate blocks.
    package static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65535, data.count - offset)
            let final: UInt8 = offset + length == data.count ? 1 : 0
            out += [final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out += data[offset..<offset + length]
            offset += length
        } while offset < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return out + be32(b << 16 | a)
    }

    package static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}
