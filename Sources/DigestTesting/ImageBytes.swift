/// Hand-made image bytes for the decoder and rendition tests.
package enum ImageBytes {
    /// A tiny valid GIF89a (one 1×1 frame) claiming `width`×`height`.
    package static func gif(width: Int, height: Int, padding: Int = 0) -> [UInt8] {
        var bytes = Array("GIF89a".utf8) + [UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8)]
        bytes += [0x80, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF]  // global colour table of 2
        if padding > 0 {
            // A comment extension in 255-byte sub-blocks.
            bytes += [0x21, 0xFE]
            var left = padding
            while left > 0 {
                let n = min(255, left)
                bytes += [UInt8(n)] + [UInt8](repeating: 0x41, count: n)
                left -= n
            }
            bytes.append(0)
        }
        bytes += [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B]
        return bytes
    }

    /// Where `needle` first starts in `haystack`.
    package static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<i + needle.count].elementsEqual(needle) { return i }
        return nil
    }
}
