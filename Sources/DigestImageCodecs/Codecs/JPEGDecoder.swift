import CImageShim

/// A libjpeg-turbo decompressor, allocated once at a stable address and freed in `deinit`.
///
/// Every libjpeg call goes through `CImageShim`, which turns libjpeg's error exits into a status and a
/// message. The data being decoded is passed as a pointer valid for one `withUnsafeBytes` scope: call
/// `readHeader` … `abort` inside that scope.
final class JPEGDecoder {
    /// What the header says.
    struct Header {
        var width: Int
        var height: Int
        var colorSpace: Int32
        var progressive: Bool
        /// CMYK values are stored inverted (Adobe/Photoshop convention).
        var adobe: Bool
        var orientation: Orientation
        var isCMYK: Bool { colorSpace == Int32(DIGEST_JPEG_CMYK) || colorSpace == Int32(DIGEST_JPEG_YCCK) }
    }

    /// The rows being delivered after `start`.
    struct Output {
        var scaledWidth: Int
        var scaledHeight: Int
        var xOffset: Int
        var width: Int
    }

    private let handle: OpaquePointer

    init() throws(ImageError) {
        guard let handle = digest_jpeg_decoder_create() else {
            throw ImageError(.corrupt, "cannot allocate a JPEG decoder")
        }
        self.handle = handle
    }

    deinit { digest_jpeg_decoder_destroy(handle) }

    /// Reads the header of `data`; `data` must stay valid until `abort()`.
    func readHeader(_ data: UnsafeRawBufferPointer, maxMemory: Int, maxScans: Int) throws(ImageError) -> Header {
        var info = digest_jpeg_info()
        let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let status = digest_jpeg_read_header(handle, base, data.count, maxMemory, Int32(maxScans), &info)
        guard status == DIGEST_IMAGE_OK else { throw failure("reading the JPEG header", status: status) }
        var orientation = Orientation.up
        if let exif = info.exif, info.exif_length > 0 {
            orientation = ExifOrientation.read(UnsafeRawBufferPointer(start: exif, count: info.exif_length))
        }
        return Header(
            width: Int(info.width), height: Int(info.height), colorSpace: info.color_space,
            progressive: info.progressive != 0, adobe: info.saw_adobe_marker != 0, orientation: orientation)
    }

    /// Starts decoding at 1/`scale` with 4 bytes a pixel, keeping columns from `cropX` (`cropWidth` 0: all).
    func start(scale: Int, cmyk: Bool, cropX: Int, cropWidth: Int) throws(ImageError) -> Output {
        var output = digest_jpeg_output()
        let status = digest_jpeg_start(handle, Int32(scale), cmyk ? 1 : 0, UInt32(cropX), UInt32(cropWidth), &output)
        guard status == DIGEST_IMAGE_OK else { throw failure("starting the JPEG decoder", status: status) }
        return Output(
            scaledWidth: Int(output.scaled_width), scaledHeight: Int(output.scaled_height),
            xOffset: Int(output.x_offset), width: Int(output.width))
    }

    /// Skips `rows` rows.
    func skip(_ rows: Int) throws(ImageError) {
        guard rows > 0 else { return }
        var skipped: UInt32 = 0
        let status = digest_jpeg_skip(handle, UInt32(rows), &skipped)
        guard status == DIGEST_IMAGE_OK else { throw failure("skipping JPEG rows", status: status) }
    }

    /// Reads up to `rows` (at most 16) rows into `buffer`, `stride` bytes apart; returns how many.
    func read(into buffer: UnsafeMutablePointer<UInt8>, stride: Int, rows: Int) throws(ImageError) -> Int {
        var read: UInt32 = 0
        let status = digest_jpeg_read(handle, buffer, stride, UInt32(min(rows, 16)), &read)
        guard status == DIGEST_IMAGE_OK else { throw failure("decoding JPEG rows", status: status) }
        return Int(read)
    }

    /// Warnings libjpeg reported (corrupt data it decoded past).
    var warnings: Int { Int(digest_jpeg_decoder_warnings(handle)) }

    /// Ends the image; the decoder can read another.
    func abort() { digest_jpeg_abort(handle) }

    private func failure(_ doing: String, status: Int32) -> ImageError {
        let message = String(cString: digest_jpeg_decoder_message(handle))
        let truncated = digest_jpeg_decoder_truncated(handle) != 0
        let code: ImageError.Code =
            truncated ? .truncated
            : message.hasPrefix("Empty JPEG image") ? .zeroSize
            : message.hasPrefix("Maximum supported image dimension") ? .tooManyPixels : .corrupt
        return ImageError(
            code, "libjpeg failed \(doing): \(message)",
            context: ["library": "libjpeg-turbo", "status": "\(status)"])
    }
}
