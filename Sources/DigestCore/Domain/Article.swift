/// An article of the catalogue.
public struct Article: Sendable, Hashable {
    public var id: String
    public var title: String
    public var url: String
    public var imageURL: String?
    public var topics: [String]
    /// Unix seconds.
    public var publishedAt: Int64
    public var readingMinutes: Int
    /// BCP 47 tag of the article's language (`pl`, `zh-Hans`); `nil` when unknown: a candidate for
    /// every reader.
    public var language: String?

    public init(
        id: String, title: String, url: String, imageURL: String?, topics: [String],
        publishedAt: Int64, readingMinutes: Int, language: String? = nil
    ) {
        self.id = id
        self.title = title
        self.url = url
        self.imageURL = imageURL
        self.topics = topics
        self.publishedAt = publishedAt
        self.readingMinutes = readingMinutes
        self.language = language
    }
}

/// One read of an article by a user.
public struct ReadEvent: Sendable, Hashable {
    public var articleID: String
    /// Topics of the article read (carried so stats need no catalogue look-up).
    public var topics: [String]
    /// Unix seconds.
    public var readAt: Int64
    public var seconds: Int
    /// The language of the article read (carried like its topics), if known.
    public var language: String?

    public init(articleID: String, topics: [String], readAt: Int64, seconds: Int, language: String? = nil) {
        self.articleID = articleID
        self.topics = topics
        self.readAt = readAt
        self.seconds = seconds
        self.language = language
    }
}
