import CPangoCairo
import Foundation

/// A rectangle in 1× units.
struct Rect: Sendable, Hashable {
    var x: Double
    var y: Double
    var width: Double
    var height: Double

    var maxX: Double { x + width }
    var maxY: Double { y + height }
}

/// A Cairo image surface and its drawing context, owned together and freed in `deinit`. Drawing
/// happens in 1× units; the context is scaled so the PNG has `scale` pixels per unit.
final class Canvas {
    let surface: OpaquePointer
    let cr: OpaquePointer
    let width: Double
    let height: Double
    let scale: Int

    init(width: Double, height: Double, scale: Int) throws(PreviewError) {
        self.width = width
        self.height = height
        self.scale = scale
        let pixelWidth = Int32((width * Double(scale)).rounded(.up))
        let pixelHeight = Int32((height * Double(scale)).rounded(.up))
        guard let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, pixelWidth, pixelHeight) else {
            throw PreviewError(.cairo, "cairo could not create a \(pixelWidth)×\(pixelHeight) surface")
        }
        let status = cairo_surface_status(surface)
        guard status == CAIRO_STATUS_SUCCESS, let cr = cairo_create(surface) else {
            cairo_surface_destroy(surface)
            throw PreviewError(.cairo, "cairo surface \(pixelWidth)×\(pixelHeight): \(String(cString: cairo_status_to_string(status)))")
        }
        self.surface = surface
        self.cr = cr
        cairo_scale(cr, Double(scale), Double(scale))
    }

    deinit {
        cairo_destroy(cr)
        cairo_surface_destroy(surface)
    }

    var pixelWidth: Int { Int(cairo_image_surface_get_width(surface)) }
    var pixelHeight: Int { Int(cairo_image_surface_get_height(surface)) }

    func fill(_ color: Color) {
        cairo_set_source_rgba(cr, color.red, color.green, color.blue, color.alpha)
        cairo_paint(cr)
    }

    /// A rounded-rectangle path (not drawn).
    func roundedRect(_ rect: Rect, radius: Double) {
        let r = min(radius, rect.width / 2, rect.height / 2)
        cairo_new_sub_path(cr)
        cairo_arc(cr, rect.maxX - r, rect.y + r, r, -Double.pi / 2, 0)
        cairo_arc(cr, rect.maxX - r, rect.maxY - r, r, 0, Double.pi / 2)
        cairo_arc(cr, rect.x + r, rect.maxY - r, r, Double.pi / 2, Double.pi)
        cairo_arc(cr, rect.x + r, rect.y + r, r, Double.pi, 3 * Double.pi / 2)
        cairo_close_path(cr)
    }

    func fill(_ rect: Rect, radius: Double = 0, color: Color) {
        roundedRect(rect, radius: radius)
        cairo_set_source_rgba(cr, color.red, color.green, color.blue, color.alpha)
        cairo_fill(cr)
    }

    func stroke(_ rect: Rect, radius: Double = 0, color: Color, lineWidth: Double = 1) {
        roundedRect(Rect(x: rect.x + lineWidth / 2, y: rect.y + lineWidth / 2, width: rect.width - lineWidth, height: rect.height - lineWidth), radius: radius)
        cairo_set_source_rgba(cr, color.red, color.green, color.blue, color.alpha)
        cairo_set_line_width(cr, lineWidth)
        cairo_stroke(cr)
    }

    /// A soft shadow under a card: a few offset translucent rounded rectangles.
    func shadow(_ rect: Rect, radius: Double, strength: Double = 0.06) {
        for step in 1...3 {
            let grow = Double(step)
            fill(
                Rect(x: rect.x - grow / 2, y: rect.y + grow / 2, width: rect.width + grow, height: rect.height + grow),
                radius: radius + grow / 2, color: Color(hex: 0x000000, alpha: strength / Double(step)))
        }
    }

    func verticalGradient(_ rect: Rect, top: Color, bottom: Color) {
        guard let pattern = cairo_pattern_create_linear(0, rect.y, 0, rect.maxY) else { return }
        cairo_pattern_add_color_stop_rgba(pattern, 0, top.red, top.green, top.blue, top.alpha)
        cairo_pattern_add_color_stop_rgba(pattern, 1, bottom.red, bottom.green, bottom.blue, bottom.alpha)
        cairo_rectangle(cr, rect.x, rect.y, rect.width, rect.height)
        cairo_set_source(cr, pattern)
        cairo_fill(cr)
        cairo_pattern_destroy(pattern)
    }

    /// A chevron pointing down (expand) or up (collapse), centred on (`x`, `y`).
    func chevron(x: Double, y: Double, size: Double, up: Bool, color: Color) {
        let half = size / 2
        let dy = up ? -half / 2 : half / 2
        cairo_move_to(cr, x - half, y - dy)
        cairo_line_to(cr, x, y + dy)
        cairo_line_to(cr, x + half, y - dy)
        cairo_set_source_rgba(cr, color.red, color.green, color.blue, color.alpha)
        cairo_set_line_width(cr, 1.5)
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
        cairo_stroke(cr)
    }

    /// Draws `bitmap` into `rect`, clipped to its rounded corners. `cover` fills the rect and crops the
    /// overflow around the centre (Android's centre-crop); otherwise the image is stretched to the rect,
    /// which callers size to the image's aspect.
    func draw(_ bitmap: Bitmap, in rect: Rect, radius: Double, cover: Bool) {
        cairo_save(cr)
        roundedRect(rect, radius: radius)
        cairo_clip(cr)
        let sx = rect.width / Double(bitmap.width)
        let sy = rect.height / Double(bitmap.height)
        let (scaleX, scaleY) = cover ? (max(sx, sy), max(sx, sy)) : (sx, sy)
        let drawnWidth = Double(bitmap.width) * scaleX
        let drawnHeight = Double(bitmap.height) * scaleY
        cairo_translate(cr, rect.x + (rect.width - drawnWidth) / 2, rect.y + (rect.height - drawnHeight) / 2)
        cairo_scale(cr, scaleX, scaleY)
        cairo_set_source_surface(cr, bitmap.surface, 0, 0)
        cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_GOOD)
        cairo_paint(cr)
        cairo_restore(cr)
    }

    /// The PNG encoding of the surface (8-bit RGB: every canvas is painted opaque first), written
    /// by libpng's simplified API with its fast setting into one upper-bound buffer.
    func png() throws(PreviewError) -> [UInt8] {
        cairo_surface_flush(surface)
        guard let data = cairo_image_surface_get_data(surface) else {
            throw PreviewError(.cairo, "cairo surface has no pixels")
        }
        let width = pixelWidth
        let height = pixelHeight
        let stride = Int(cairo_image_surface_get_stride(surface))
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        rgb.withUnsafeMutableBufferPointer { out in
            for y in 0..<height {
                let row = UnsafeRawPointer(data + y * stride).assumingMemoryBound(to: UInt32.self)
                var o = y * width * 3
                for x in 0..<width {
                    let pixel = row[x]
                    let alpha = pixel >> 24
                    var red = (pixel >> 16) & 0xFF
                    var green = (pixel >> 8) & 0xFF
                    var blue = pixel & 0xFF
                    if alpha != 255 && alpha != 0 {
                        red = min(255, red * 255 / alpha)
                        green = min(255, green * 255 / alpha)
                        blue = min(255, blue * 255 / alpha)
                    }
                    out[o] = UInt8(red)
                    out[o + 1] = UInt8(green)
                    out[o + 2] = UInt8(blue)
                    o += 3
                }
            }
        }
        var image = png_image()
        image.version = CPC_PNG_IMAGE_VERSION
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = CPC_PNG_FORMAT_RGB
        image.flags = CPC_PNG_IMAGE_FLAG_FAST
        // Deflate never grows data by more than a few bytes per 16 KB block; add room for headers.
        var capacity = rgb.count + height + rgb.count / 1000 + 64 * 1024
        var output = [UInt8](repeating: 0, count: capacity)
        let status = png_image_write_to_memory(&image, &output, &capacity, 0, rgb, Int32(width * 3), nil)
        defer { png_image_free(&image) }
        guard status != 0 else {
            let message = withUnsafeBytes(of: image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw PreviewError(.cairo, "libpng could not write the PNG: \(message)")
        }
        output.removeSubrange(capacity...)
        return output
    }
}
