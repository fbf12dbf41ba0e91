import CPangoCairo

/// Decoded PNG pixels for comparing previews with goldens (premultiplied ARGB, one `UInt32` each).
package struct PixelImage: Sendable, Equatable {
    package var width: Int
    package var height: Int
    package var pixels: [UInt32]

    package init(width: Int, height: Int, pixels: [UInt32]) {
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Decodes PNG bytes with Cairo; `nil` when they are not a PNG.
    package init?(png: [UInt8]) {
        let source = PNGSource(png)
        let context = Unmanaged.passUnretained(source).toOpaque()
        let surface: OpaquePointer? = withExtendedLifetime(source) {
            cairo_image_surface_create_from_png_stream({ context, data, length in
                guard let context, let data else { return CAIRO_STATUS_READ_ERROR }
                let source = Unmanaged<PNGSource>.fromOpaque(context).takeUnretainedValue()
                let count = Int(length)
                guard source.offset + count <= source.bytes.count else { return CAIRO_STATUS_READ_ERROR }
                source.bytes.withUnsafeBufferPointer { buffer in
                    data.update(from: buffer.baseAddress! + source.offset, count: count)
                }
                source.offset += count
                return CAIRO_STATUS_SUCCESS
            }, context)
        }
        guard let surface else { return nil }
        defer { cairo_surface_destroy(surface) }
        guard cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS else { return nil }
        // Draw onto a fresh ARGB32 surface so every PNG colour type compares the same way.
        let width = Int(cairo_image_surface_get_width(surface))
        let height = Int(cairo_image_surface_get_height(surface))
        guard let target = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, Int32(width), Int32(height)) else { return nil }
        defer { cairo_surface_destroy(target) }
        let cr = cairo_create(target)
        cairo_set_source_surface(cr, surface, 0, 0)
        cairo_paint(cr)
        cairo_destroy(cr)
        cairo_surface_flush(target)
        guard let data = cairo_image_surface_get_data(target) else { return nil }
        let stride = Int(cairo_image_surface_get_stride(target))
        var pixels = [UInt32](repeating: 0, count: width * height)
        for y in 0..<height {
            let row = UnsafeRawPointer(data + y * stride).assumingMemoryBound(to: UInt32.self)
            for x in 0..<width { pixels[y * width + x] = row[x] }
        }
        self.init(width: width, height: height, pixels: pixels)
    }

    /// PNG bytes of these pixels.
    package func png() -> [UInt8] {
        guard let canvas = try? Canvas(width: Double(width), height: Double(height), scale: 1),
            let data = cairo_image_surface_get_data(canvas.surface)
        else { return [] }
        cairo_surface_flush(canvas.surface)
        let stride = Int(cairo_image_surface_get_stride(canvas.surface))
        for y in 0..<height {
            let row = UnsafeMutableRawPointer(data + y * stride).assumingMemoryBound(to: UInt32.self)
            for x in 0..<width { row[x] = pixels[y * width + x] }
        }
        cairo_surface_mark_dirty(canvas.surface)
        return (try? canvas.png()) ?? []
    }

    /// Compares with `other`: pixels whose channels differ by more than `tolerance` count as different.
    /// The diff image shows `self` faded, with differing pixels in red. Sizes must match to compare.
    package func difference(from other: PixelImage, tolerance: UInt8) -> (differing: Int, image: PixelImage)? {
        guard width == other.width, height == other.height else { return nil }
        var differing = 0
        var diff = [UInt32](repeating: 0, count: pixels.count)
        for index in pixels.indices {
            let a = pixels[index]
            let b = other.pixels[index]
            var worst: UInt32 = 0
            for shift in stride(from: 0, through: 24, by: 8) {
                let x = (a >> UInt32(shift)) & 0xFF
                let y = (b >> UInt32(shift)) & 0xFF
                worst = max(worst, x > y ? x - y : y - x)
            }
            if worst > UInt32(tolerance) {
                differing += 1
                diff[index] = 0xFFFF_0000
            } else {
                let grey = (((a >> 16) & 0xFF) + ((a >> 8) & 0xFF) + (a & 0xFF)) / 3 / 3 + 170
                diff[index] = 0xFF00_0000 | grey << 16 | grey << 8 | grey
            }
        }
        return (differing, PixelImage(width: width, height: height, pixels: diff))
    }
}

private final class PNGSource {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
}
