/// Pixels, 4 bytes each (R, G, B, A or X), rows `width * 4` bytes apart.
package struct PixelBuffer: Sendable, Equatable {
    package let width: Int
    package let height: Int
    package var bytes: [UInt8]

    package var stride: Int { width * 4 }

    /// A buffer of `width`×`height` pixels, all zero.
    package init(width: Int, height: Int) {
        precondition(width >= 0 && height >= 0)
        self.width = width
        self.height = height
        self.bytes = [UInt8](repeating: 0, count: width * height * 4)
    }

    /// A buffer whose bytes are written by `fill` (which must write all of them).
    init(width: Int, height: Int, fill: (UnsafeMutableBufferPointer<UInt8>) throws(ImageError) -> Void) throws(ImageError) {
        self.width = width
        self.height = height
        var failure: ImageError?
        self.bytes = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
            do throws(ImageError) {
                try fill(buffer)
            } catch {
                failure = error
                buffer.initialize(repeating: 0)
            }
            count = buffer.count
        }
        if let failure { throw failure }
    }

    package init(width: Int, height: Int, bytes: [UInt8]) {
        precondition(bytes.count == width * height * 4)
        self.width = width
        self.height = height
        self.bytes = bytes
    }

    /// The pixel at (`x`, `y`) as (r, g, b, a).
    package subscript(x: Int, y: Int) -> (UInt8, UInt8, UInt8, UInt8) {
        get {
            let i = (y * width + x) * 4
            return (bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3])
        }
        set {
            let i = (y * width + x) * 4
            bytes[i] = newValue.0
            bytes[i + 1] = newValue.1
            bytes[i + 2] = newValue.2
            bytes[i + 3] = newValue.3
        }
    }

    /// Whether any pixel is less than fully opaque.
    package var hasTransparency: Bool {
        bytes.withUnsafeBufferPointer { p in
            var all: UInt8 = 0xFF
            var i = 3
            while i < p.count {
                all &= p[i]
                i += 4
            }
            return all != 0xFF
        }
    }

    /// Multiplies colour by alpha (the resampler works on premultiplied pixels).
    mutating func premultiply() {
        bytes.withUnsafeMutableBufferPointer { p in
            var i = 0
            while i < p.count {
                let a = UInt32(p[i + 3])
                if a != 255 {
                    p[i] = UInt8((UInt32(p[i]) * a + 127) / 255)
                    p[i + 1] = UInt8((UInt32(p[i + 1]) * a + 127) / 255)
                    p[i + 2] = UInt8((UInt32(p[i + 2]) * a + 127) / 255)
                }
                i += 4
            }
        }
    }

    /// Divides colour by alpha (PNG stores straight alpha).
    mutating func unpremultiply() {
        bytes.withUnsafeMutableBufferPointer { p in
            var i = 0
            while i < p.count {
                let a = UInt32(p[i + 3])
                if a == 0 {
                    p[i] = 0
                    p[i + 1] = 0
                    p[i + 2] = 0
                } else if a != 255 {
                    p[i] = UInt8(min(255, (UInt32(p[i]) * 255 + a / 2) / a))
                    p[i + 1] = UInt8(min(255, (UInt32(p[i + 1]) * 255 + a / 2) / a))
                    p[i + 2] = UInt8(min(255, (UInt32(p[i + 2]) * 255 + a / 2) / a))
                }
                i += 4
            }
        }
    }

    /// Composites premultiplied pixels over white and makes them opaque.
    mutating func flattenPremultipliedOnWhite() {
        bytes.withUnsafeMutableBufferPointer { p in
            var i = 0
            while i < p.count {
                let inverse = 255 - p[i + 3]
                p[i] = p[i] &+ min(inverse, 255 - p[i])
                p[i + 1] = p[i + 1] &+ min(inverse, 255 - p[i + 1])
                p[i + 2] = p[i + 2] &+ min(inverse, 255 - p[i + 2])
                p[i + 3] = 255
                i += 4
            }
        }
    }

    /// The pixels as a viewer shows them under `orientation`.
    func oriented(_ orientation: Orientation) -> PixelBuffer {
        guard orientation != .up else { return self }
        let (w, h) = orientation.displaySize(width: width, height: height)
        var out = PixelBuffer(width: w, height: h)
        bytes.withUnsafeBytes { src in
            out.bytes.withUnsafeMutableBytes { dst in
                for dy in 0..<h {
                    for dx in 0..<w {
                        let (sx, sy) = orientation.storedPixel(dx: dx, dy: dy, width: width, height: height)
                        let value = src.loadUnaligned(fromByteOffset: (sy * width + sx) * 4, as: UInt32.self)
                        dst.storeBytes(of: value, toByteOffset: (dy * w + dx) * 4, as: UInt32.self)
                    }
                }
            }
        }
        return out
    }
}
