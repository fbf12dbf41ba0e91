package import DigestCore
import Foundation

/// A deterministic reading history over the last weeks (two by default): the demo writes it as JSON
/// Lines (``DemoDataset``), the benchmark (`digest-bench generate`) as rows of a SQLite file. The
/// same parameters give the same history, draw for draw.
///
/// The articles are drawn when the history is made; the users, each with their devices and reads,
/// one at a time by ``nextUser()``, so a history of millions of users never sits in memory.
///
/// ```swift
/// var history = DemoHistory(week: week, users: 1000, reads: 10_000)
/// for article in history.articles { … }
/// while let user = history.nextUser() { … user.reader … user.reads … }
/// ```
package struct DemoHistory: Sendable {
    /// One user, with their devices and reads.
    package struct User: Sendable, Hashable {
        /// 0, 1, 2, … in the order ``nextUser()`` hands them out; the id is `u<index + 1>`.
        package var index: Int
        package var reader: Reader
        /// In time order, each at a second of its own.
        package var reads: [Read]
    }

    /// One read by a user.
    package struct Read: Sendable, Hashable {
        /// The index of the article in ``DemoHistory/articles``.
        package var article: Int
        /// Unix seconds, after the article was published.
        package var readAt: Int64
        package var seconds: Int
    }

    /// The catalogue: ids `a1`, `a2`, … in four languages round robin, 1–3 distinct topics, 70% with
    /// an image, published over the weeks of reads (the first eight within the first hour, so that
    /// every read has something published before it).
    package let articles: [Article]

    private var random: SplitMix64
    private let locales: [String]
    /// `fr-FR` (no templates) is added only to the default locales.
    private let addsUnknownLocale: Bool
    private let percentWithoutDevices: Int
    private let percentAPNs: Int
    private let percentWebPush: Int
    private let webPushBase: String
    private let readCounts: [Int32]
    /// The articles' publication times (sorted) and reading minutes, by index.
    private let published: [Int64]
    private let minutes: [Int]
    private var nextIndex = 0
    private let weekEnd: Int64
    private let windowStart: Int64
    private let lastWeekStart: Int64

    /// - Parameters:
    ///   - week: the last week of reads.
    ///   - weeks: how many weeks of reads, up to `week` (at least 2).
    ///   - users: users `u1`…; each has 1–3 devices (android 60%, ios 30%, web 10%), 2% opted out.
    ///   - percentWithoutDevices: users with no device at all (0: none, and no draw for it, so the
    ///     default history stays what the benchmark's figures were measured on).
    ///   - percentAPNs: iOS devices that talk to APNs directly (a 64-digit hex token, provider
    ///     `apns`), chosen by their token without a draw: the rest of the history is the same
    ///     whatever the share.
    ///   - percentWebPush: web devices subscribed with standard Web Push (provider `webpush`, an
    ///     endpoint under `webPushBase` and real keys: ``DemoWebPush``), chosen likewise.
    ///   - reads: reads in all, exactly; per user exponential around the mean, a user in ten reading
    ///     only in the week before.
    ///   - articles: at least 1.
    ///   - seed: the same seed, the same history.
    ///   - locales: the users' locales (default ``DemoVocabulary/locales`` and 1% `fr-FR`).
    ///   - imageBase: where the articles' images live.
    ///   - imageNames: file names under `imageBase`, shared round robin by the articles that have an
    ///     image; nil: one `<article id>.jpg` per article.
    package init(
        week: ISOWeek, weeks: Int = 2, users: Int, reads: Int, articles: Int = 400, seed: UInt64 = 2026,
        locales: [String]? = nil, percentWithoutDevices: Int = 0, percentAPNs: Int = 0, percentWebPush: Int = 0,
        webPushBase: String = DemoWebPush.defaultBase, imageBase: String = "https://images.digest.example", imageNames: [String]? = nil
    ) {
        precondition(users > 0 && reads >= 0 && articles > 0, "a history needs users and articles")
        precondition(
            weeks >= 2 && [percentWithoutDevices, percentAPNs, percentWebPush].allSatisfy((0...100).contains), "at least two weeks; percentages")
        self.percentAPNs = percentAPNs
        self.percentWebPush = percentWebPush
        self.webPushBase = webPushBase
        var random = SplitMix64(seed: seed)
        weekEnd = Int64(week.next.monday.daysSinceEpoch) * 86_400
        windowStart = weekEnd - Int64(weeks) * 7 * 86_400
        self.percentWithoutDevices = percentWithoutDevices
        lastWeekStart = weekEnd - 7 * 86_400
        self.locales = locales ?? DemoVocabulary.locales
        addsUnknownLocale = locales == nil

        // Articles, sorted by publication.
        var published: [Int64] = []
        for index in 0..<articles {
            published.append(
                index < 8
                    ? windowStart + Int64(random.below(3600))
                    : windowStart + 3600 + Int64(random.below(Int(weekEnd - windowStart) - 2 * 3600)))
        }
        published.sort()
        var catalogue: [Article] = []
        var imagesGiven = 0
        for index in 0..<articles {
            let language = DemoVocabulary.languages[index % DemoVocabulary.languages.count]
            let topicCount = random.inRange(1...3)
            var topics: [String] = []
            while topics.count < topicCount {
                let topic = DemoVocabulary.topics[random.below(DemoVocabulary.topics.count)]
                if !topics.contains(topic) { topics.append(topic) }
            }
            let id = "a\(index + 1)"
            let minutes = random.inRange(2...18)
            let title = DemoVocabulary.title(language: language, topic: topics[0], random: &random)
            var imageURL: String?
            if random.chance(70) {
                let name = imageNames.flatMap { $0.isEmpty ? nil : $0[imagesGiven % $0.count] } ?? "\(id).jpg"
                imagesGiven += 1
                imageURL = "\(imageBase)/\(name)"
            }
            catalogue.append(
                Article(
                    id: id, title: title, url: "https://news.digest.example/\(language)/\(id)", imageURL: imageURL,
                    topics: topics, publishedAt: published[index], readingMinutes: minutes, language: language))
        }
        self.articles = catalogue
        self.published = published
        minutes = catalogue.map(\.readingMinutes)

        // Reads per user: exponential around the mean (a few heavy readers, many light ones), then
        // nudged until the total is exactly `reads`.
        let mean = Double(reads) / Double(users)
        var counts = [Int32](repeating: 0, count: users)
        var total = 0
        for index in 0..<users {
            let count = min(Int((-Foundation.log(random.unit()) * mean).rounded()), Int(mean * 20) + 1)
            counts[index] = Int32(count)
            total += count
        }
        while total != reads {
            let index = random.below(users)
            if total < reads {
                counts[index] += 1
                total += 1
            } else if counts[index] > 0 {
                counts[index] -= 1
                total -= 1
            }
        }
        readCounts = counts
        self.random = random
    }

    /// The FNV-1a hash of a token, which picks the devices of a provider without a draw.
    static func hash(_ token: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    /// A web device: through FCM, or for `percentWebPush` in a hundred (by the token's hash) a standard
    /// Web Push subscription drawn from the token (``DemoWebPush/device(token:base:)``).
    static func webDevice(token: String, percentWebPush: Int, base: String) -> Device {
        guard percentWebPush > 0, Int(hash(token) % 100) < percentWebPush else { return Device(token: token, platform: .web) }
        return DemoWebPush.device(token: token, base: base)
    }

    /// An iOS device: through FCM, or for `percentAPNs` in a hundred (by the token's hash) an APNs
    /// device whose token (32 bytes, lower-case hex) is drawn from the FCM token's hash.
    static func iOSDevice(token: String, percentAPNs: Int) -> Device {
        let hash = hash(token)
        guard percentAPNs > 0, Int(hash % 100) < percentAPNs else { return Device(token: token, platform: .ios) }
        var random = SplitMix64(seed: hash)
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for _ in 0..<4 {
            var bits = random.next()
            for _ in 0..<16 {
                hex.append(digits[Int(bits & 15)])
                bits >>= 4
            }
        }
        return Device(token: String(decoding: hex, as: UTF8.self), platform: .ios, provider: .apns)
    }

    /// The next user with their devices and reads; nil after the last.
    package mutating func nextUser() -> User? {
        guard nextIndex < readCounts.count else { return nil }
        let index = nextIndex
        nextIndex += 1
        var random = self.random
        defer { self.random = random }

        var locale = locales[random.below(locales.count)]
        if random.chance(1) && addsUnknownLocale { locale = "fr-FR" }  // no templates: falls back to English
        var zone = DemoVocabulary.zones[random.below(DemoVocabulary.zones.count)]
        if random.below(500) == 0 { zone = "Mars/Olympus" }  // unknown: UTC
        let optedOut = random.chance(2)
        var deviceCount = random.below(100) < 55 ? 1 : (random.below(100) < 65 ? 2 : 3)
        if percentWithoutDevices > 0 && random.chance(percentWithoutDevices) { deviceCount = 0 }
        var devices: [Device] = []
        for _ in 0..<deviceCount {
            let token = DemoVocabulary.token(random: &random)
            let roll = random.below(100)
            let platform: Platform = roll < 60 ? .android : (roll < 90 ? .ios : .web)
            switch platform {
            case .ios: devices.append(Self.iOSDevice(token: token, percentAPNs: percentAPNs))
            case .web: devices.append(Self.webDevice(token: token, percentWebPush: percentWebPush, base: webPushBase))
            case .android: devices.append(Device(token: token, platform: platform))
            }
        }
        let reader = Reader(id: "u\(index + 1)", locale: locale, timeZone: zone, optedOut: optedOut, devices: devices)

        // Languages read: the locale's (English for a locale without templates); a reader in four
        // also reads a second language (English, or Russian for English readers), a read in three.
        let languages = DemoVocabulary.languages
        let own = languages.firstIndex { LanguageTag.primary($0) == LanguageTag.primary(locale) } ?? 0
        let second: Int? = random.chance(25) ? (own == 0 ? languages.firstIndex(of: "ru") ?? 0 : 0) : nil

        // Reads: over every week, or (one user in ten) only before the last one: re-engagement.
        let count = Int(readCounts[index])
        guard count > 0 else { return User(index: index, reader: reader, reads: []) }
        let from = windowStart + 3600
        let until = random.chance(10) ? lastWeekStart : weekEnd
        var times: [Int64] = []
        times.reserveCapacity(count)
        for _ in 0..<count { times.append(from + Int64(random.below(Int(until - from)))) }
        times.sort()
        var reads: [Read] = []
        reads.reserveCapacity(count)
        var previous = Int64.min
        for var at in times {
            if at <= previous { at = previous + 1 }  // the key (user, read_at, article) stays unique
            previous = at
            // Published before the read: mostly one of the ~60 latest, sometimes any.
            let available = publishedBefore(at)
            var article = random.chance(70)
                ? available - 1 - random.below(min(available, 60))
                : random.below(available)
            // The nearest article in the language read, earlier if there is one (articles take languages
            // round robin).
            let language = second.map { random.chance(33) ? $0 : own } ?? own
            let back = ((article - language) % languages.count + languages.count) % languages.count
            if article - back >= 0 {
                article -= back
            } else if article + languages.count - back < available {
                article += languages.count - back
            }
            reads.append(Read(article: article, readAt: at, seconds: random.inRange(20...(minutes[article] * 90))))
        }
        return User(index: index, reader: reader, reads: reads)
    }

    /// How many articles came out before `instant` (a prefix: they are in order of publication).
    private func publishedBefore(_ instant: Int64) -> Int {
        var low = 0
        var high = published.count
        while low < high {
            let middle = (low + high) / 2
            if published[middle] < instant { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension SplitMix64 {
    fileprivate mutating func below(_ bound: Int) -> Int { next(below: bound) }

    fileprivate mutating func inRange(_ range: ClosedRange<Int>) -> Int { next(in: range) }

    /// Uniform in (0, 1].
    fileprivate mutating func unit() -> Double { (Double(next() >> 11) + 1) / 9_007_199_254_740_992.0 }

    /// `true` with probability `percent` / 100.
    fileprivate mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}
