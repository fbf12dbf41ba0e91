/// One file made from an article's image, as a device will download it.
public struct Rendition: Sendable, Hashable {
    /// Public URL of the file.
    public var url: String
    /// `image/jpeg`, `image/png` or `image/gif`.
    public var mimeType: String
    public var width: Int
    public var height: Int
    public var byteCount: Int

    public init(url: String, mimeType: String, width: Int, height: Int, byteCount: Int) {
        self.url = url
        self.mimeType = mimeType
        self.width = width
        self.height = height
        self.byteCount = byteCount
    }
}

/// The files made for one image: the 2:1 hero (big picture, attachment, web image) and the square icon.
public struct ImageRenditions: Sendable, Hashable {
    public var hero: Rendition
    public var icon: Rendition?

    public init(hero: Rendition, icon: Rendition?) {
        self.hero = hero
        self.icon = icon
    }
}

/// What the run got for an image URL.
public enum ImageOutcome: Sendable, Hashable {
    case ready(ImageRenditions)
    /// No renditions; the reason is recorded on the message and counted in the report.
    case unavailable(reason: String)
}

/// Gives the run the renditions of an article image. The run asks once per picked top article; the
/// provider fetches each URL at most once per run.
public protocol AttachmentProvider: Sendable {
    func renditions(forImageAt url: String) async -> ImageOutcome
}

/// An attachment provider that counts what it did (fetched, reused, failed by reason); the run's
/// summary shows these counts.
public protocol AttachmentStatistics: Sendable {
    func statistics() async -> [String: Int]
}

/// The provider used when no attachment store is configured: every image is unavailable.
public struct NoAttachments: AttachmentProvider {
    public init() {}

    public func renditions(forImageAt url: String) async -> ImageOutcome {
        .unavailable(reason: "attachments not configured")
    }
}
