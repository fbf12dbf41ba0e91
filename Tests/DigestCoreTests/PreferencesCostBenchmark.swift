import Foundation
import Testing

@testable import DigestCore

#if canImport(Glibc)
    import Glibc
#endif

/// What preferences cost the composer (issue 41's bench, in process and without a store): 100,000
/// readers composed as the run does, in batches of 1,000, once with default preferences and once
/// with 30% of them having some (mutes, follows, paces of 2 and 4 weeks from various weeks, pauses),
/// in 5 interleaved pairs (A B, B A, …), in CPU time per user. Off unless `DIGEST_PREFERENCES_BENCH`
/// is set; meaningful in a release build:
///
/// ```
/// DIGEST_PREFERENCES_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter PreferencesCostBenchmark
/// ```
@Suite("Preferences cost", .enabled(if: ProcessInfo.processInfo.environment["DIGEST_PREFERENCES_BENCH"] != nil))
struct PreferencesCostBenchmark {
    static let week = ISOWeek(year: 2026, week: 47)!
    static let monday: Int64 = 1_794_787_200
    static let day: Int64 = 86_400
    static let now: Int64 = monday + 7 * day + 6 * 3600
    static let topics = (0..<30).map { "topic\($0)" }
    static let languages = ["en", "ru", "pl"]
    static let zones = ["UTC", "Europe/Warsaw", "America/New_York", "Asia/Shanghai"]

    /// A deterministic generator (SplitMix64).
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    /// `worst`: every reader with preferences has the dearest kind (`DIGEST_PREFERENCES_BENCH_MIX=worst`).
    static func data(users: Int, worst: Bool = false) -> (articles: [Article], readers: [Reader], preferred: [Reader], histories: [ReaderHistory]) {
        var random = Random(state: 41)
        let articles = (0..<2_000).map { index in
            Article(
                id: "a\(index)", title: "Article \(index) about \(topics[index % topics.count])", url: "https://news.example/\(index)",
                imageURL: nil, topics: [topics[random.below(topics.count)], topics[random.below(topics.count)]],
                publishedAt: monday + 7 * day - Int64(random.below(28 * 86_400)), readingMinutes: 1 + random.below(12),
                language: languages[random.below(languages.count)])
        }
        var readers: [Reader] = [], preferred: [Reader] = [], histories: [ReaderHistory] = []
        readers.reserveCapacity(users)
        for index in 0..<users {
            let reader = Reader(
                id: "u\(index)", locale: languages[index % languages.count], timeZone: zones[index % zones.count], optedOut: false,
                devices: [Device(token: "token-\(index)", platform: .android)])
            readers.append(reader)
            var chosen = reader
            if random.below(100) < 30 {
                var preferences = ReaderPreferences()
                switch worst ? 5 : random.below(5) {
                case 0: preferences.mute = [topics[random.below(topics.count)], topics[random.below(topics.count)]]
                case 1: preferences.follow = [topics[random.below(topics.count)]]
                case 2:
                    preferences.every = [2, 4][random.below(2)]
                    preferences.from = ISOWeek(year: 2026, week: 40 + random.below(8))
                case 3: preferences.pausedUntil = CivilDate(year: 2026, month: 11, day: 15 + random.below(20))
                case 4:
                    preferences.mute = [topics[random.below(topics.count)]]
                    preferences.follow = [topics[random.below(topics.count)]]
                    preferences.every = 2
                    preferences.from = ISOWeek(year: 2026, week: 45)
                default:
                    // The dearest: two mutes, a follow and a monthly pace due this week.
                    preferences.mute = [topics[random.below(topics.count)], topics[random.below(topics.count)]]
                    preferences.follow = [topics[random.below(topics.count)]]
                    preferences.every = 4
                    preferences.from = ISOWeek(year: 2026, week: 43)
                }
                chosen.preferences = preferences
            }
            preferred.append(chosen)
            let reads = (0..<10).map { _ in
                let article = articles[random.below(articles.count)]
                return ReadEvent(
                    articleID: article.id, topics: article.topics, readAt: monday + 7 * day - Int64(random.below(28 * 86_400)),
                    seconds: 30 + random.below(600), language: article.language)
            }.sorted { $0.readAt < $1.readAt }
            histories.append(ReaderHistory(reads: reads))
        }
        return (articles, readers, preferred, histories)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func compose(_ composer: BatchComposer, _ readers: [Reader], _ histories: [ReaderHistory]) async -> (Double, RunCounters) {
        var counters = RunCounters()
        let start = cpuSeconds()
        for (number, first) in stride(from: 0, to: readers.count, by: 1_000).enumerated() {
            let end = min(readers.count, first + 1_000)
            let batch = await composer.compose(Array(readers[first..<end]), histories: Array(histories[first..<end]), batch: number)
            counters.add(batch.counters)
        }
        return (cpuSeconds() - start, counters)
    }

    @Test func preferencesCostLittle() async throws {
        let users = Int(ProcessInfo.processInfo.environment["DIGEST_PREFERENCES_BENCH_USERS"] ?? "") ?? 100_000
        let worst = ProcessInfo.processInfo.environment["DIGEST_PREFERENCES_BENCH_MIX"] == "worst"
        let (articles, readers, preferred, histories) = Self.data(users: users, worst: worst)
        let templates = try TemplateCatalog(directory: templatesDirectory)
        func composer() -> BatchComposer {
            BatchComposer(configuration: .init(week: Self.week), articles: articles, templates: templates, attachments: NoAttachments(), now: Self.now)
        }
        // One warm-up of each.
        _ = await Self.compose(composer(), Array(readers.prefix(5_000)), Array(histories.prefix(5_000)))
        _ = await Self.compose(composer(), Array(preferred.prefix(5_000)), Array(histories.prefix(5_000)))
        var plain: [Double] = [], chosen: [Double] = []
        var counters = (plain: RunCounters(), chosen: RunCounters())
        for pair in 0..<5 {
            for side in pair % 2 == 0 ? [false, true] : [true, false] {
                let (seconds, batch) = await Self.compose(composer(), side ? preferred : readers, histories)
                if side {
                    chosen.append(seconds)
                    counters.chosen = batch
                } else {
                    plain.append(seconds)
                    counters.plain = batch
                }
            }
        }
        func median(_ seconds: [Double]) -> Double { seconds.sorted()[seconds.count / 2] }
        let a = median(plain) / Double(users) * 1e6, b = median(chosen) / Double(users) * 1e6
        // Per digested reader too: the paces and pauses skip some readers, which costs less.
        let aDigested = median(plain) / Double(counters.plain.digested) * 1e6
        let bDigested = median(chosen) / Double(counters.chosen.digested) * 1e6
        print(
            String(
                format: "preferences bench%@: %d users, CPU (median of 5) per user: none %.2f µs, 30%% with preferences %.2f µs (%+.1f%%); per digested user: %.2f µs, %.2f µs (%+.1f%%); A %@ s; B %@ s; B skipped %@",
                worst ? " (worst mix)" : "", users, a, b, (b / a - 1) * 100, aDigested, bDigested, (bDigested / aDigested - 1) * 100,
                plain.map { String(format: "%.2f", $0) }.joined(separator: " "),
                chosen.map { String(format: "%.2f", $0) }.joined(separator: " "),
                counters.chosen.skipped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
        #expect(counters.chosen.users == users && counters.plain.users == users)
    }
}
