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

    public init(
        id: String, title: String, url: String, imageURL: String?, topics: [String],
        publishedAt: Int64, readingMinutes: Int
    ) {
        self.id = id
        self.title = title
        self.url = url
        self.imageURL = imageURL
        self.topics = topics
        self.publishedAt = publishedAt
        self.readingMinutes = readingMinutes
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

    public init(articleID: String, topics: [String], readAt: Int64, seconds: Int) {
        self.articleID = articleID
        self.topics = topics
        self.readAt = readAt
        self.seconds = seconds
    }
}
