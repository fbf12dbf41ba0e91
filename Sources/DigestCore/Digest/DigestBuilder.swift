/// Turns a user's reads into their ``WeeklyDigest``: stats in the user's zone and picks.
public struct DigestBuilder: Sendable {
    /// How the digest is built.
    public struct Configuration: Sendable {
        /// At most this many picks.
        public var maxPicks: Int = 5
        /// Picks are published at most this long before the week's end.
        public var freshnessSeconds: Int64 = 14 * 86_400

        public init() {}
    }

    public let pool: CandidatePool
    public let configuration: Configuration

    public init(pool: CandidatePool, configuration: Configuration = .init()) {
        self.pool = pool
        self.configuration = configuration
    }

    /// Builds the digest from every read the store returned for the user since the window's start of
    /// the previous week (reads after the week still count as "already read").
    public func build(reader: Reader, window: WeekWindow, reads: [ReadEvent]) -> WeeklyDigest {
        // Sized once: growing a set from empty reallocates and rehashes several times for ten reads.
        var weekArticles = Set<String>(minimumCapacity: reads.count)
        var previousArticles = Set<String>(minimumCapacity: reads.count)
        var weekSeconds = 0
        var previousSeconds = 0
        var activeDays: UInt16 = 0  // bit d: day d of the window (0 to 13) had a read
        var weekTopics: [String: Int] = [:]
        var olderTopics: [String: Int] = [:]
        var readIDs = Set<String>(minimumCapacity: reads.count)
        for read in reads {
            readIDs.insert(read.articleID)
            guard let day = window.dayIndex(of: read.readAt) else { continue }
            if day >= 7 {
                weekArticles.insert(read.articleID)
                weekSeconds += max(0, read.seconds)
                activeDays |= 1 << UInt16(day)
                for topic in read.topics { weekTopics[topic, default: 0] += 1 }
            } else {
                previousArticles.insert(read.articleID)
                previousSeconds += max(0, read.seconds)
                for topic in read.topics { olderTopics[topic, default: 0] += 1 }
            }
        }
        let topTopic = weekTopics.max { a, b in a.value != b.value ? a.value < b.value : a.key > b.key }?.key
        let stats = WeeklyStats(
            articlesRead: weekArticles.count,
            minutesRead: Self.minutes(weekSeconds),
            activeDays: activeDays.nonzeroBitCount,
            topTopic: topTopic,
            previousArticlesRead: previousArticles.count,
            previousMinutesRead: Self.minutes(previousSeconds))
        // A user with no reads this week is ranked on what they read before, if anything.
        let interests = weekTopics.isEmpty ? olderTopics : weekTopics
        let picks = pool.pick(
            limit: configuration.maxPicks,
            publishedFrom: window.end - configuration.freshnessSeconds,
            until: window.end,
            topics: interests.keys,
            excluding: readIDs)
        return WeeklyDigest(reader: reader, window: window, stats: stats, picks: picks)
    }

    static func minutes(_ seconds: Int) -> Int { (seconds + 30) / 60 }
}
