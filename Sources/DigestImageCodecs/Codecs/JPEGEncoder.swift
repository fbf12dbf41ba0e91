import CImageShim

/// A libjpeg-turbo compressor, allocated once at a stable address and freed in `deinit`.
package final class JPEGEncoder {
    /// How the pixels are laid out and stored.
    package enum Layout {
        /// 4 bytes a pixel (R, G, B, ignored), stored as YCbCr.
        case rgbx
        /// 1 byte a pixel.
        case gray
        /// 4 bytes a pixel, CMYK as given, stored as CMYK (Adobe marker).
        case cmyk
        /// 4 bytes a pixel, CMYK as given, stored as YCCK (Adobe marker).
        case cmykAsYCCK
        /// 4 bytes a pixel (R, G, B, ignored), stored as RGB without colour transform.
        case rgbxAsRGB

        var shimValue: Int32 {
            switch self {
            case .rgbx: Int32(DIGEST_JPEG_IN_RGBX)
            case .gray: Int32(DIGEST_JPEG_IN_GRAY)
            case .cmyk: Int32(DIGEST_JPEG_IN_CMYK)
            case .cmykAsYCCK: Int32(DIGEST_JPEG_IN_CMYK_AS_YCCK)
            case .rgbxAsRGB: Int32(DIGEST_JPEG_IN_RGBX_AS_RGB)
            }
        }
    }

    private let handle: OpaquePointer

    package init() throws(ImageError) {
        guard let handle = digest_jpeg_encoder_create() else {
            throw ImageError(.corrupt, "cannot allocate a JPEG encoder")
        }
        self.handle = handle
    }

    deinit { digest_jpeg_encoder_destroy(handle) }

    /// Encodes `width`×`height` pixels, `stride` bytes a row; `app1` is written as an APP1 marker.
    package func encode(
        _ pixels: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, layout: Layout = .rgbx,
        quality: Int, progressive: Bool = false, app1: [UInt8]? = nil
    ) throws(ImageError) -> [UInt8] {
        precondition(pixels.count >= stride * (height - 1) + width, "pixel buffer smaller than the image")
        var output: UnsafePointer<UInt8>?
        var size = 0
        let status: Int32 = (app1 ?? []).withUnsafeBufferPointer { marker in
            digest_jpeg_encode(
                handle, pixels.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(width), UInt32(height), stride,
                layout.shimValue, Int32(quality), progressive ? 1 : 0, marker.baseAddress, marker.count,
                &output, &size)
        }
        guard status == DIGEST_IMAGE_OK, let output else {
            throw ImageError(
                .corrupt, "libjpeg failed encoding: \(String(cString: digest_jpeg_encoder_message(handle)))",
                context: ["library": "libjpeg-turbo", "status": "\(status)"])
        }
        return Array(UnsafeBufferPointer(start: output, count: size))
    }
}
