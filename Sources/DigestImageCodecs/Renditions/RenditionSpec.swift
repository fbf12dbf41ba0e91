/// One file to make from a source image: its pixel size (the source is cover-cropped to this
/// aspect ratio, centred), its byte limit and its JPEG quality.
public struct RenditionSpec: Sendable, Hashable {
    /// `hero` or `icon`: part of the file's hash, so renditions of one source never share a name.
    public var name: String
    public var width: Int
    public var height: Int
    /// The file must be smaller than this; JPEG quality steps down until it is.
    public var maxBytes: Int
    /// The first JPEG quality tried.
    public var quality: Int
    /// GIF sources are passed through unchanged for this rendition (within `maxBytes`).
    public var passesGIFThrough: Bool

    public init(name: String, width: Int, height: Int, maxBytes: Int, quality: Int = 82, passesGIFThrough: Bool = false) {
        precondition(width > 0 && height > 0 && maxBytes > 0 && (1...100).contains(quality))
        self.name = name
        self.width = width
        self.height = height
        self.maxBytes = maxBytes
        self.quality = quality
        self.passesGIFThrough = passesGIFThrough
    }

    /// Android big picture, iOS attachment, web image: 1024×512, under 1 MB, GIF passed through.
    public static let hero = RenditionSpec(name: "hero", width: 1024, height: 512, maxBytes: 1_000_000, passesGIFThrough: true)
    /// Android large icon (64 dp at 4×), web icon: 256×256.
    public static let icon = RenditionSpec(name: "icon", width: 256, height: 256, maxBytes: 1_000_000)

    /// What identifies the rendition in a file name (changing any of it changes the name).
    package var identity: String { "\(name):\(width)x\(height):q\(quality):max\(maxBytes):v1" }
}

/// A finished rendition: the file's bytes and what they are.
public struct RenderedImage: Sendable {
    public var spec: RenditionSpec
    /// `image/jpeg`, `image/png` or `image/gif`.
    public var mimeType: String
    public var width: Int
    public var height: Int
    public var data: [UInt8]
    /// The JPEG quality used (nil for PNG and GIF).
    public var quality: Int?
}

/// A cover crop: the centred part of a `sourceWidth`×`sourceHeight` image with the target's aspect ratio.
func coverCrop(sourceWidth: Int, sourceHeight: Int, targetWidth: Int, targetHeight: Int) -> Rect {
    let sw = Double(sourceWidth), sh = Double(sourceHeight)
    let targetAspect = Double(targetWidth) / Double(targetHeight)
    if sw / sh > targetAspect {
        let w = sh * targetAspect
        return Rect(x: (sw - w) / 2, y: 0, width: w, height: sh)
    } else {
        let h = sw / targetAspect
        return Rect(x: 0, y: (sh - h) / 2, width: sw, height: h)
    }
}
