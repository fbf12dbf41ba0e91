import CGdkPixbuf
import CPangoCairo
import Foundation

/// A decoded picture as a Cairo image surface (premultiplied ARGB32), owned and freed in `deinit`.
final class Bitmap {
    let surface: OpaquePointer
    let width: Int
    let height: Int

    /// Files larger than this are not decoded (renditions are well under 1 MB; iOS allows 10 MB).
    static let maxFileBytes = 10 * 1024 * 1024
    /// Pictures with more pixels are not decoded.
    static let maxPixels = 50_000_000

    private init(surface: OpaquePointer, width: Int, height: Int) {
        self.surface = surface
        self.width = width
        self.height = height
    }

    deinit { cairo_surface_destroy(surface) }

    /// Decodes a JPEG, PNG or GIF (first frame) file with GdkPixbuf; the reason on failure.
    static func load(path: String) -> Result<Bitmap, ImageProblem> {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = attributes[.size] as? Int
        else { return .failure(ImageProblem("file not found")) }
        guard size <= maxFileBytes else { return .failure(ImageProblem("file over 10 MB")) }
        var width: Int32 = 0
        var height: Int32 = 0
        guard gdk_pixbuf_get_file_info(path, &width, &height) != nil, width > 0, height > 0 else {
            return .failure(ImageProblem("not a picture GdkPixbuf can read"))
        }
        guard Int(width) * Int(height) <= maxPixels else { return .failure(ImageProblem("over 50 megapixels")) }
        var error: UnsafeMutablePointer<GError>?
        guard let pixbuf = gdk_pixbuf_new_from_file(path, &error) else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "decode failed"
            if let error { g_error_free(error) }
            return .failure(ImageProblem(message))
        }
        defer { g_object_unref(UnsafeMutableRawPointer(pixbuf)) }
        return fromPixbuf(pixbuf).map { .success($0) } ?? .failure(ImageProblem("unsupported pixel layout"))
    }

    /// Copies 8-bit RGB(A) pixels into a premultiplied ARGB32 surface.
    private static func fromPixbuf(_ pixbuf: OpaquePointer) -> Bitmap? {
        let width = Int(gdk_pixbuf_get_width(pixbuf))
        let height = Int(gdk_pixbuf_get_height(pixbuf))
        let channels = Int(gdk_pixbuf_get_n_channels(pixbuf))
        let hasAlpha = gdk_pixbuf_get_has_alpha(pixbuf) != 0
        let sourceStride = Int(gdk_pixbuf_get_rowstride(pixbuf))
        guard gdk_pixbuf_get_bits_per_sample(pixbuf) == 8, channels == (hasAlpha ? 4 : 3),
            let source = gdk_pixbuf_read_pixels(pixbuf),
            let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, Int32(width), Int32(height))
        else { return nil }
        guard cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS, let target = cairo_image_surface_get_data(surface) else {
            cairo_surface_destroy(surface)
            return nil
        }
        let targetStride = Int(cairo_image_surface_get_stride(surface))
        for y in 0..<height {
            let sourceRow = source + y * sourceStride
            let targetRow = UnsafeMutableRawPointer(target + y * targetStride).assumingMemoryBound(to: UInt32.self)
            for x in 0..<width {
                let pixel = sourceRow + x * channels
                let alpha = hasAlpha ? UInt32(pixel[3]) : 255
                var red = UInt32(pixel[0])
                var green = UInt32(pixel[1])
                var blue = UInt32(pixel[2])
                if alpha != 255 {
                    red = (red * alpha + 127) / 255
                    green = (green * alpha + 127) / 255
                    blue = (blue * alpha + 127) / 255
                }
                targetRow[x] = alpha << 24 | red << 16 | green << 8 | blue
            }
        }
        cairo_surface_mark_dirty(surface)
        return Bitmap(surface: surface, width: width, height: height)
    }
}

/// Why a picture could not be shown; drawn on the preview as a note.
struct ImageProblem: Error, Sendable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
