/// Turns source bytes into renditions: sniff, check limits, decode (shrinking on load where the
/// decoder can), cover-crop, resample, encode. Pure CPU work on the calling thread.
///
/// ```swift
/// let files = try RenditionMaker().render(bytes, specs: [.hero, .icon])
/// ```
public struct RenditionMaker: Sendable {
    /// Limits and choices.
    public struct Configuration: Sendable {
        /// Sources with more pixels are refused before any pixel is decoded.
        public var maxPixels = 50_000_000
        /// Bound on libjpeg's own allocations (a progressive file's coefficients), bytes.
        public var maxDecoderMemory = 192 << 20
        /// Bound on the scans of a progressive JPEG.
        public var maxProgressiveScans = 300
        /// JPEG quality never goes below this when stepping down to meet a byte limit.
        public var minimumQuality = 40
        /// How far quality steps down each time.
        public var qualityStep = 8
        /// Let libjpeg decode at 1/2, 1/4 or 1/8 scale when the rendition is that much smaller.
        public var shrinkOnLoad = true

        public init() {}
    }

    public var configuration: Configuration

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The renditions of `source`, one per spec, in order; a GIF gives only the specs that pass GIFs
    /// through. Throws an `ImageError` whose reason says why the source cannot be used.
    public func render(_ source: [UInt8], specs: [RenditionSpec]) throws(ImageError) -> [RenderedImage] {
        precondition(!specs.isEmpty)
        let kind = ImageKind(sniffing: source)
        if kind == .gif { return try passGIFThrough(source, specs: specs) }
        var rendered: [RenderedImage] = []
        for image in try resample(source, specs: specs, kind: kind) {
            rendered.append(try encode(image))
        }
        return rendered
    }

    /// Renditions before encoding: premultiplied pixels, oriented for display.
    struct Resampled {
        var spec: RenditionSpec
        var pixels: PixelBuffer
        /// The source had transparency (pixels are premultiplied).
        var sourceHasAlpha: Bool
    }

    /// Decodes and resamples `source` for every spec (JPEG and PNG only).
    func resample(_ source: [UInt8], specs: [RenditionSpec], kind: ImageKind? = nil) throws(ImageError) -> [Resampled] {
        let kind = kind ?? ImageKind(sniffing: source)
        switch kind {
        case .jpeg:
            return zip(specs, try resampleJPEG(source, specs: specs)).map { Resampled(spec: $0, pixels: $1, sourceHasAlpha: false) }
        case .png: return try resamplePNG(source, specs: specs)
        case .gif: throw ImageError(.unsupportedType, "GIFs are passed through, not decoded", context: ["type": "gif"])
        case .empty: throw ImageError(.empty, "the file is empty")
        case .webp, .svg:
            let kind = ImageKind(sniffing: source)
            throw ImageError(.unsupportedType, "\(kind.rawValue) is not accepted as a notification image", context: ["type": kind.rawValue])
        case .html: throw ImageError(.notAnImage, "the file is an HTML page, not an image")
        case .unknown: throw ImageError(.notAnImage, "the file is not a JPEG, PNG or GIF image")
        }
    }

    // MARK: JPEG

    private func resampleJPEG(_ source: [UInt8], specs: [RenditionSpec]) throws(ImageError) -> [PixelBuffer] {
        let decoder = try JPEGDecoder()
        let resized: [PixelBuffer] = try source.withImageBytes { (data) throws(ImageError) -> [PixelBuffer] in
            defer { decoder.abort() }
            let header = try decoder.readHeader(
                data, maxMemory: configuration.maxDecoderMemory, maxScans: configuration.maxProgressiveScans)
            try checkSize(width: header.width, height: header.height)
            let plans = specs.map { CropPlan(spec: $0, width: header.width, height: header.height, orientation: header.orientation) }
            let scale = configuration.shrinkOnLoad ? Self.shrinkFactor(plans) : 1
            // Columns to decode: every crop plus the filter's reach, at the decoded scale.
            let fx = 1.0 / Double(scale)
            var columns = plans[0].stored.scaled(by: fx)
            for plan in plans.dropFirst() { columns = columns.union(plan.stored.scaled(by: fx)) }
            let reach = plans.map { $0.filterReach(scale: scale) }.max() ?? 4
            let cropX = max(0, Int((columns.x - reach).rounded(.down)))
            let cropEnd = Int((columns.maxX + reach).rounded(.up))
            let output = try decoder.start(scale: scale, cmyk: header.isCMYK, cropX: cropX, cropWidth: max(1, cropEnd - cropX))
            // libjpeg's scaled size is ceil(size / scale): map crops with the exact factors.
            let sx = Double(output.scaledWidth) / Double(header.width)
            let sy = Double(output.scaledHeight) / Double(header.height)
            let resamplers = plans.map { plan in
                var rect = plan.stored
                rect = Rect(x: rect.x * sx - Double(output.xOffset), y: rect.y * sy, width: rect.width * sx, height: rect.height * sy)
                return StreamingResampler(
                    inputWidth: output.width, inputHeight: output.scaledHeight, source: rect,
                    outputWidth: plan.storedTargetWidth, outputHeight: plan.storedTargetHeight)
            }
            let first = resamplers.map(\.rows.lowerBound).min() ?? 0
            let end = resamplers.map(\.rows.upperBound).max() ?? 0
            try decoder.skip(first)
            let stride = output.width * 4
            let batch = 16
            let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: stride * batch)
            defer { buffer.deallocate() }
            var y = first
            while y < end {
                let read = try decoder.read(into: buffer, stride: stride, rows: min(batch, end - y))
                guard read > 0 else { throw ImageError(.truncated, "the JPEG data ended before its last row") }
                for r in 0..<read {
                    let row = buffer + r * stride
                    if header.isCMYK { Self.convertCMYK(row, count: output.width, inverted: header.adobe) }
                    for resampler in resamplers { resampler.consume(row: row, y: y + r) }
                }
                y += read
            }
            return zip(plans, resamplers).map { plan, resampler in
                resampler.finish(premultiplied: false).oriented(plan.orientation)
            }
        }
        return resized
    }

    /// The largest of 8, 4, 2, 1 at which every crop still has at least its rendition's pixels.
    static func shrinkFactor(_ plans: [CropPlan]) -> Int {
        for factor in [8, 4, 2] {
            let fits = plans.allSatisfy { plan in
                plan.stored.width / Double(factor) >= Double(plan.storedTargetWidth)
                    && plan.stored.height / Double(factor) >= Double(plan.storedTargetHeight)
            }
            if fits { return factor }
        }
        return 1
    }

    /// CMYK (inverted, as Adobe writes it, or plain) to RGBX in place.
    static func convertCMYK(_ row: UnsafeMutablePointer<UInt8>, count: Int, inverted: Bool) {
        for i in 0..<count {
            let p = row + i * 4
            var c = UInt32(p[0]), m = UInt32(p[1]), y = UInt32(p[2]), k = UInt32(p[3])
            if !inverted {
                c = 255 - c
                m = 255 - m
                y = 255 - y
                k = 255 - k
            }
            p[0] = UInt8((c * k + 127) / 255)
            p[1] = UInt8((m * k + 127) / 255)
            p[2] = UInt8((y * k + 127) / 255)
            p[3] = 255
        }
    }

    // MARK: PNG

    private func resamplePNG(_ source: [UInt8], specs: [RenditionSpec]) throws(ImageError) -> [Resampled] {
        var decoded = try source.withImageBytes { (data) throws(ImageError) -> PixelBuffer in
            try PNGCodec.decode(data) { (header) throws(ImageError) in
                try checkSize(width: header.width, height: header.height)
            }
        }
        let transparent = decoded.hasTransparency
        if transparent { decoded.premultiply() }
        return specs.map { spec in
            let plan = CropPlan(spec: spec, width: decoded.width, height: decoded.height, orientation: .up)
            let resampler = StreamingResampler(
                inputWidth: decoded.width, inputHeight: decoded.height, source: plan.stored,
                outputWidth: spec.width, outputHeight: spec.height)
            decoded.bytes.withUnsafeBufferPointer { pixels in
                for y in resampler.rows {
                    resampler.consume(row: pixels.baseAddress! + y * decoded.stride, y: y)
                }
            }
            return Resampled(spec: spec, pixels: resampler.finish(premultiplied: transparent), sourceHasAlpha: transparent)
        }
    }

    /// PNG when the rendition has real transparency and fits its limit; otherwise JPEG (flattened on
    /// white when it had transparency).
    private func encode(_ image: Resampled) throws(ImageError) -> RenderedImage {
        var pixels = image.pixels
        let spec = image.spec
        if image.sourceHasAlpha && pixels.hasTransparency {
            var straight = pixels
            straight.unpremultiply()
            let png = try PNGCodec.encode(straight)
            if png.count < spec.maxBytes {
                return RenderedImage(spec: spec, mimeType: "image/png", width: pixels.width, height: pixels.height, data: png)
            }
            pixels.flattenPremultipliedOnWhite()
        }
        return try encodeJPEG(pixels, spec: spec)
    }

    // MARK: GIF

    private func passGIFThrough(_ source: [UInt8], specs: [RenditionSpec]) throws(ImageError) -> [RenderedImage] {
        let header = try GIFHeader(source)
        try checkSize(width: header.width, height: header.height)
        var rendered: [RenderedImage] = []
        for spec in specs where spec.passesGIFThrough {
            guard source.count < spec.maxBytes else {
                throw ImageError(
                    .renditionTooLarge, "the GIF is larger than the \(spec.name) limit and GIFs are passed through unchanged",
                    context: ["bytes": "\(source.count)", "limit": "\(spec.maxBytes)"])
            }
            rendered.append(RenderedImage(spec: spec, mimeType: "image/gif", width: header.width, height: header.height, data: source))
        }
        return rendered
    }

    // MARK: Shared

    private func checkSize(width: Int, height: Int) throws(ImageError) {
        guard width > 0, height > 0 else {
            throw ImageError(.zeroSize, "the image is \(width)×\(height) pixels", context: ["width": "\(width)", "height": "\(height)"])
        }
        guard width.multipliedReportingOverflow(by: height).partialValue <= configuration.maxPixels,
            width <= 1 << 24, height <= 1 << 24
        else {
            throw ImageError(
                .tooManyPixels, "the image claims \(width)×\(height) pixels, more than \(configuration.maxPixels)",
                context: ["width": "\(width)", "height": "\(height)", "limit": "\(configuration.maxPixels)"])
        }
    }

    private func encodeJPEG(_ pixels: PixelBuffer, spec: RenditionSpec) throws(ImageError) -> RenderedImage {
        let encoder = try JPEGEncoder()
        var quality = spec.quality
        while true {
            let data = try pixels.bytes.withImageBytes { (raw) throws(ImageError) in
                try encoder.encode(raw, width: pixels.width, height: pixels.height, stride: pixels.stride, quality: quality)
            }
            if data.count < spec.maxBytes {
                return RenderedImage(spec: spec, mimeType: "image/jpeg", width: pixels.width, height: pixels.height, data: data, quality: quality)
            }
            let next = quality - configuration.qualityStep
            guard next >= configuration.minimumQuality else {
                throw ImageError(
                    .renditionTooLarge, "the \(spec.name) rendition is over its byte limit even at quality \(quality)",
                    context: ["bytes": "\(data.count)", "limit": "\(spec.maxBytes)"])
            }
            quality = next
        }
    }
}

/// Where a rendition's crop lies in the stored (not yet oriented) image.
struct CropPlan {
    let orientation: Orientation
    /// The crop in stored pixel coordinates.
    let stored: Rect
    /// The rendition's size before orienting (width and height swapped for 90° turns).
    let storedTargetWidth: Int
    let storedTargetHeight: Int

    init(spec: RenditionSpec, width: Int, height: Int, orientation: Orientation) {
        self.orientation = orientation
        let display = orientation.displaySize(width: width, height: height)
        let crop = coverCrop(sourceWidth: display.width, sourceHeight: display.height, targetWidth: spec.width, targetHeight: spec.height)
        stored = orientation.storedRect(crop, width: Double(width), height: Double(height))
        (storedTargetWidth, storedTargetHeight) = orientation.transposes ? (spec.height, spec.width) : (spec.width, spec.height)
    }

    /// How far (in decoded pixels) the filter reads beyond the crop, at decoding scale 1/`scale`.
    func filterReach(scale: Int) -> Double {
        let ratio = max(stored.width / Double(scale) / Double(storedTargetWidth), 1)
        return AxisWeights.support * ratio + 2
    }
}
