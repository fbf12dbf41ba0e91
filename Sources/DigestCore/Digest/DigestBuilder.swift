/// What the store knows of a reader that their digest needs.
public struct ReaderHistory: Sendable, Hashable {
    /// Their reads since ``DigestBuilder/historyStart(of:)``, oldest first (reads after the week
    /// count as already read).
    public var reads: [ReadEvent]
    /// Candidate articles they read before those reads (a republished story read weeks ago); few,
    /// so looked up in turn.
    public var readEarlier: [String]
    /// Articles picked for them in the previous weeks' digests (a few a week).
    public var recentPicks: [String]

    public init(reads: [ReadEvent], readEarlier: [String] = [], recentPicks: [String] = []) {
        self.reads = reads
        self.readEarlier = readEarlier
        self.recentPicks = recentPicks
    }
}

/// Turns a user's reads into their ``WeeklyDigest``: stats in the user's zone and picks.
///
/// Picks are articles the reader never read (whatever the date of the read) and was not offered in
/// the previous ``Configuration/noRepeatWeeks`` weeks, in the language of their locale or one they
/// read in the last ``Configuration/interestWeeks`` weeks (or with no language), ranked by their
/// topics over those weeks, the week itself weighing most.
public struct DigestBuilder: Sendable {
    /// How the digest is built.
    public struct Configuration: Sendable {
        /// At most this many picks.
        public var maxPicks: Int = 5
        /// Picks are published at most this long before the week's end.
        public var freshnessSeconds: Int64 = 14 * 86_400
        /// The weight of a read's topics by how many weeks before the digest's week it was (index 0:
        /// the week itself); its count is how many weeks of reads shape interests and languages.
        public var weekWeights: [Int] = [8, 4, 2, 1]
        /// A reader with no read in the week and the weeks before it, this many in all, is dormant
        /// and gets no digest; 0: never.
        public var dormantAfterWeeks: Int = 4
        /// Articles picked in this many previous weeks are not picked again.
        public var noRepeatWeeks: Int = 2

        public init() {}

        /// How many weeks of reads a digest needs, the week itself included.
        public var historyWeeks: Int { max(2, weekWeights.count, dormantAfterWeeks) }
    }

    public let pool: CandidatePool
    public let configuration: Configuration

    public init(pool: CandidatePool, configuration: Configuration = .init()) {
        self.pool = pool
        self.configuration = configuration
    }

    static let weekSeconds: Int64 = 7 * 86_400

    /// Where a reader's reads start: Monday 00:00 local of the first week of
    /// ``Configuration/historyWeeks`` (the hour a daylight-saving change moves it does not matter).
    public func historyStart(of window: WeekWindow) -> Int64 {
        window.start - Int64(configuration.historyWeeks - 1) * Self.weekSeconds
    }

    /// Where the reads of a digest covering `span` start: as ``historyStart(of:)`` with the weeks it
    /// looks at for a pace of N weeks (the N weeks compared with, interests over N times as many
    /// weeks), and no later than the span's first local midnight.
    package func historyStart(of window: WeekWindow, span: CoveredSpan?) -> Int64 {
        guard let span else { return historyStart(of: window) }
        let weeks = max(2 * span.weeks, configuration.weekWeights.count * span.weeks, configuration.dormantAfterWeeks)
        return min(window.start - Int64(weeks - 1) * Self.weekSeconds, span.previousStart)
    }

    /// How long before the week's end a pick of a digest covering `weeks` weeks may be published:
    /// the freshness, at least those weeks.
    package func freshness(weeks: Int) -> Int64 {
        max(configuration.freshnessSeconds, Int64(weeks) * Self.weekSeconds)
    }

    /// Whether the reader read nothing in the week and the ``Configuration/dormantAfterWeeks``
    /// weeks up to it.
    public func isDormant(window: WeekWindow, reads: [ReadEvent]) -> Bool {
        let weeks = configuration.dormantAfterWeeks
        guard weeks > 0 else { return false }
        let from = window.start - Int64(weeks - 1) * Self.weekSeconds
        return !reads.contains { $0.readAt >= from && $0.readAt < window.end }
    }

    /// Builds the digest from the reader's history (see ``ReaderHistory``), with the reader's
    /// preferences: no pick with a muted topic, the first from a followed topic whenever one is
    /// eligible, and with a pace of N weeks (`span`, from ``WeekCalendar/span(forZone:weeks:)``) the
    /// stats, picks and interests over the last N weeks, compared with the N weeks before.
    public func build(reader: Reader, window: WeekWindow, history: ReaderHistory) -> WeeklyDigest {
        build(reader: reader, window: window, history: history, span: nil)
    }

    /// `fewer`: the topics held back for this digest (``ReaderPreferences/fewerTopics(dueAt:)``): at
    /// most one pick carries one of them, never the first (so never the Image variant's picture).
    package func build(
        reader: Reader, window: WeekWindow, history: ReaderHistory, span: CoveredSpan?, fewer fewerTopics: [String] = []
    ) -> WeeklyDigest {
        let reads = history.reads
        // The weeks covered (1 without a span) and the local midnights of them and the weeks before.
        let covered = span?.weeks ?? 1
        let dayStarts = span?.dayStarts ?? window.dayStarts
        let firstCoveredDay = 7 * covered
        // A reader's reads of a few weeks, their topics and languages are few: counted in small
        // arrays searched in turn (no hashing), which become hashed past a few dozen. Each article is
        // looked up once, in `readIDs`; the week's and the weeks before's are sets of its places there.
        var weekArticles = PlaceSet()
        var previousArticles = PlaceSet()
        var weekSeconds = 0
        var previousSeconds = 0
        var activeDays: UInt64 = 0  // bit d: day d of the days (0 to 14 × covered − 1) had a read
        // The interests' topics, with how often the week's reads carried each (its top topic).
        var interests = SmallCounter()
        // Tags as read (few distinct ones), made primary subtags once below.
        var readLanguages: [String] = []
        var lastLanguage: String?
        // Every article read (the earlier reads and last weeks' picks are asked separately, below).
        var readIDs = SmallSet()
        let weights = configuration.weekWeights
        // Interests weigh periods of `covered` weeks each as `weights` weighs weeks.
        let interestStart = window.start - Int64(weights.count * covered - 1) * Self.weekSeconds
        for read in reads {
            let place = readIDs.insert(read.articleID)
            if read.readAt >= interestStart, let language = read.language, language != lastLanguage {
                if !readLanguages.contains(language) { readLanguages.append(language) }
                lastLanguage = language
            }
            guard read.readAt >= interestStart, read.readAt < window.end else { continue }
            // Weeks before the digest's week, 0 for the week itself.
            let weeksBefore = Int((window.start + Self.weekSeconds - 1 - read.readAt) / Self.weekSeconds)
            let weight = weights[max(0, weeksBefore) / covered]
            let day = Self.dayIndex(of: read.readAt, in: dayStarts)
            let inWeek = day.map { $0 >= firstCoveredDay } ?? false
            for topic in read.topics { interests.add(weight, to: topic, inWeek: inWeek) }
            guard let day else { continue }
            if inWeek {
                weekArticles.insert(place)
                weekSeconds += max(0, read.seconds)
                activeDays |= 1 << UInt64(day)
            } else {
                previousArticles.insert(place)
                previousSeconds += max(0, read.seconds)
            }
        }
        // Primary subtags, each once (a few: a list, not a hashed set).
        var languages: [String] = []
        for tag in readLanguages {
            if let primary = LanguageTag.primary(tag), !languages.contains(primary) { languages.append(primary) }
        }
        if let own = LanguageTag.primary(reader.locale), !languages.contains(own) { languages.append(own) }
        let topTopic = interests.entries.lazy.filter { $0.week > 0 }
            .max { a, b in a.week != b.week ? a.week < b.week : a.key > b.key }?.key
        let stats = WeeklyStats(
            articlesRead: weekArticles.count,
            minutesRead: Self.minutes(weekSeconds, articles: weekArticles.count),
            activeDays: activeDays.nonzeroBitCount,
            topTopic: topTopic,
            previousArticlesRead: previousArticles.count,
            previousMinutesRead: Self.minutes(previousSeconds, articles: previousArticles.count))
        let preferences = reader.preferences
        let publishedFrom = window.end - freshness(weeks: covered)
        // Labelled as `pick` takes them, so the array is not converted (copied) again on the way.
        let weighted: [(topic: String, weight: Int)] = interests.entries.map { (topic: $0.key, weight: $0.weight) }
        // "Fewer" topics (not muted ones, which no pick has anyway) are held back like muted ones, and
        // one of their articles is let in below; without any, this is the reader's mute list as it is.
        let fewer = fewerTopics.isEmpty ? [] : fewerTopics.filter { !preferences.mute.contains($0) }
        let held = fewer.isEmpty ? preferences.mute : preferences.mute + fewer
        // (The exclusions are passed inline, not as a closure value, so nothing is boxed per reader.)
        var picks = pool.pick(
            limit: configuration.maxPicks, publishedFrom: publishedFrom, until: window.end, weights: weighted,
            languages: languages, muted: held
        ) { readIDs.contains($0) || history.readEarlier.contains($0) || history.recentPicks.contains($0) }
        if !preferences.follow.isEmpty, !(picks.first.map { preferences.follows(topics: $0.topics) } ?? false) {
            // The best eligible article of a followed topic first (ranked as every pick is), then the
            // rest as they came. Picks are the best eligible articles: a followed one among them is the
            // best of its topics; else the followed topics' articles are scored alone.
            if let index = picks.firstIndex(where: { preferences.follows(topics: $0.topics) }) {
                picks.insert(picks.remove(at: index), at: 0)
            } else if let first = pool.best(
                publishedFrom: publishedFrom, until: window.end, weights: weighted, languages: languages, muted: held,
                within: preferences.follow.filter { !held.contains($0) }
            ) { readIDs.contains($0) || history.readEarlier.contains($0) || history.recentPicks.contains($0) } {
                picks.insert(first, at: 0)
                if picks.count > configuration.maxPicks { picks.removeLast(picks.count - configuration.maxPicks) }
            }
        }
        if !fewer.isEmpty, !picks.isEmpty {
            // The best article of a held-back topic, had they not been held back, keeps its place among
            // the picks (but never the first), and is the only one of them.
            let unheld = pool.pick(
                limit: configuration.maxPicks, publishedFrom: publishedFrom, until: window.end, weights: weighted,
                languages: languages, muted: preferences.mute
            ) { readIDs.contains($0) || history.readEarlier.contains($0) || history.recentPicks.contains($0) }
            if let index = unheld.firstIndex(where: { $0.topics.contains(where: fewer.contains) }) {
                picks.insert(unheld[index], at: min(max(1, index), picks.count))
                if picks.count > configuration.maxPicks { picks.removeLast(picks.count - configuration.maxPicks) }
            }
        }
        return WeeklyDigest(reader: reader, window: window, stats: stats, picks: picks, coveredWeeks: covered)
    }

    /// The day (an index into `dayStarts`' days) an instant falls on, or `nil` outside them.
    static func dayIndex(of instant: Int64, in dayStarts: [Int64]) -> Int? {
        let last = dayStarts.count - 1
        guard instant >= dayStarts[0], instant < dayStarts[last] else { return nil }
        var low = 0
        var high = last
        while high - low > 1 {
            let mid = (low + high) / 2
            if dayStarts[mid] <= instant { low = mid } else { high = mid }
        }
        return low
    }

    /// Whole minutes, at least 1 when anything was read.
    static func minutes(_ seconds: Int, articles: Int) -> Int {
        let minutes = (seconds + 30) / 60
        return articles > 0 ? max(1, minutes) : minutes
    }
}

/// Distinct strings, each with its place in first-seen order: an array searched in turn while
/// small, hashed past ``limit``.
struct SmallSet {
    static let limit = 32
    private var small: [String] = []
    private var large: [String: Int]?
    private(set) var count = 0

    /// Adds `value` if it is new; its place among the distinct values either way.
    @discardableResult
    mutating func insert(_ value: String) -> Int {
        if large != nil {
            if let place = large![value] { return place }
            large![value] = count
        } else {
            if let place = small.firstIndex(of: value) { return place }
            small.append(value)
            if small.count > Self.limit {
                large = Dictionary(uniqueKeysWithValues: small.enumerated().map { ($1, $0) })
                small = []
            }
        }
        count += 1
        return count - 1
    }

    func contains(_ value: String) -> Bool { large.map { $0[value] != nil } ?? small.contains(value) }
}

/// Places of a ``SmallSet`` (small integers): bits of one word, a hashed set past it.
struct PlaceSet {
    private var word: UInt64 = 0
    private var more: Set<Int>?

    var count: Int { word.nonzeroBitCount + (more?.count ?? 0) }

    mutating func insert(_ place: Int) {
        if place < 64 {
            word |= 1 << UInt64(place)
        } else {
            more = more ?? []
            more!.insert(place)
        }
    }
}

/// Weights by topic, in first-seen order, each with how many of the week's reads carried it: an
/// array searched in turn while small, hashed past ``SmallSet/limit`` keys.
struct SmallCounter {
    private(set) var entries: [(key: String, weight: Int, week: Int)] = []
    private var positions: [String: Int]?

    /// Adds `amount` to `key`'s weight, and one to its count of the week's reads when `inWeek`.
    mutating func add(_ amount: Int, to key: String, inWeek: Bool) {
        let week = inWeek ? 1 : 0
        if let positions {
            if let index = positions[key] {
                entries[index].weight += amount
                entries[index].week += week
            } else {
                self.positions![key] = entries.count
                entries.append((key, amount, week))
            }
            return
        }
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].weight += amount
            entries[index].week += week
            return
        }
        entries.append((key, amount, week))
        if entries.count > SmallSet.limit {
            positions = Dictionary(uniqueKeysWithValues: entries.enumerated().map { ($1.key, $0) })
        }
    }
}
