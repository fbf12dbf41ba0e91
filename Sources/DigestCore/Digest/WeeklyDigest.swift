/// A user's week of reading: what the notification is built from.
public struct WeeklyDigest: Sendable {
    public let reader: Reader
    public let window: WeekWindow
    public let stats: WeeklyStats
    /// Up to five unread articles, best first.
    public let picks: [Article]
    /// How many weeks the stats and picks cover, the week itself the last of them (a reader's pace,
    /// ``ReaderPreferences/coveredWeeks``); the previous numbers are those of as many weeks before.
    package let coveredWeeks: Int

    public init(reader: Reader, window: WeekWindow, stats: WeeklyStats, picks: [Article], coveredWeeks: Int = 1) {
        self.reader = reader
        self.window = window
        self.stats = stats
        self.picks = picks
        self.coveredWeeks = max(1, coveredWeeks)
    }

    /// A user who read nothing this week gets the re-engagement template.
    public var isReengagement: Bool { stats.articlesRead == 0 }

    /// `<week>:<user id>`, the digest's id in messages.
    public var digestID: String { "\(window.week):\(reader.id)" }
}

/// The numbers of a user's week.
public struct WeeklyStats: Sendable, Hashable {
    /// Distinct articles read in the week (in the weeks a digest covers, ``WeeklyDigest/coveredWeeks``;
    /// so for the other numbers, and the previous ones are of as many weeks before them).
    public var articlesRead: Int
    /// Reading time, rounded to whole minutes.
    public var minutesRead: Int
    /// Days of the week (in the user's zone) with at least one read.
    public var activeDays: Int
    /// The topic read most often; ties go to the alphabetically first.
    public var topTopic: String?
    public var previousArticlesRead: Int
    public var previousMinutesRead: Int

    public init(
        articlesRead: Int, minutesRead: Int, activeDays: Int, topTopic: String?,
        previousArticlesRead: Int, previousMinutesRead: Int
    ) {
        self.articlesRead = articlesRead
        self.minutesRead = minutesRead
        self.activeDays = activeDays
        self.topTopic = topTopic
        self.previousArticlesRead = previousArticlesRead
        self.previousMinutesRead = previousMinutesRead
    }

    /// Minutes read against the previous week, in percent; `nil` when the previous week had none.
    public var minutesChangePercent: Int? {
        guard previousMinutesRead > 0 else { return nil }
        let delta = Double(minutesRead - previousMinutesRead) * 100 / Double(previousMinutesRead)
        return Int(delta.rounded())
    }
}
