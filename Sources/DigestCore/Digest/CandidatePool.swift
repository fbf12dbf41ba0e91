/// The articles that may be picked this run, newest first, with a topic index for ranking.
///
/// Built once per run from the articles published in the fortnight before the week's end (with a day
/// of slack either side for time zones); each user then takes the ones inside their own window.
///
/// Ranking uses one bit set per topic over the articles (bit *i* is article *i*, newest first).
/// Articles are read level by level (most shared topics first, starting at the most topics any
/// article carries), newest first within a level, stopping at the limit. A word's level masks (for
/// 64 articles: which share at least 1, 2, … of the user's topics) are worked out from the user's
/// topic sets the first time a scan reaches that word, so a user whose best level fills the picks
/// early costs a few words, not the whole catalogue.
public struct CandidatePool: Sendable {
    /// Newest first; ties broken by id so picks are deterministic.
    public let articles: [Article]
    /// For each topic, the articles that carry it, as bits.
    let topicBits: [String: [UInt64]]
    /// Words per bit set.
    let words: Int
    /// The most distinct topics any article carries: no article shares more with a user.
    let maxTopicsPerArticle: Int

    public init(articles: [Article]) {
        let sorted = articles.sorted {
            $0.publishedAt != $1.publishedAt ? $0.publishedAt > $1.publishedAt : $0.id < $1.id
        }
        let words = (sorted.count + 63) / 64
        var bits: [String: [UInt64]] = [:]
        var most = 0
        for (index, article) in sorted.enumerated() {
            let topics = Set(article.topics)
            most = max(most, topics.count)
            for topic in topics {
                bits[topic, default: [UInt64](repeating: 0, count: words)][index >> 6] |= 1 << UInt64(index & 63)
            }
        }
        self.articles = sorted
        self.topicBits = bits
        self.words = words
        self.maxTopicsPerArticle = most
    }

    /// Up to `limit` articles published in `[from, until)`, not in `exclude`, ranked by how many of
    /// `topics` they share, then by recency.
    public func pick(
        limit: Int, publishedFrom from: Int64, until: Int64, topics: some Sequence<String>,
        excluding exclude: Set<String>
    ) -> [Article] {
        guard limit > 0, !articles.isEmpty else { return [] }
        let sets = topics.compactMap { topicBits[$0] }
        let words = self.words
        let top = min(sets.count, maxTopicsPerArticle)
        let tail = articles.count & 63
        let lastMask: UInt64 = tail == 0 ? ~0 : (1 << UInt64(tail)) - 1
        // atLeast[(level - 1) * words + word]: the word's articles sharing at least `level` topics,
        // for levels 1...top, filled for words 0..<ready.
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: max(1, top * words)) { atLeast in
            var ready = 0
            func prepare(through word: Int) {
                while ready <= word {
                    for level in 0..<top { atLeast[level * words + ready] = 0 }
                    for set in sets {
                        let bits = set[ready]
                        var slot = (top - 1) * words + ready
                        while slot >= words {
                            atLeast[slot] |= atLeast[slot - words] & bits
                            slot -= words
                        }
                        atLeast[ready] |= bits
                    }
                    ready += 1
                }
            }
            var picked: [Article] = []
            picked.reserveCapacity(limit)
            for level in stride(from: top, through: 0, by: -1) {
                for word in 0..<words {
                    var matching: UInt64 = word == words - 1 ? lastMask : ~0
                    if top > 0 {
                        prepare(through: word)
                        if level > 0 { matching &= atLeast[(level - 1) * words + word] }
                        if level < top { matching &= ~atLeast[level * words + word] }
                    }
                    while matching != 0 {
                        let index = word << 6 | matching.trailingZeroBitCount
                        matching &= matching - 1
                        let article = articles[index]
                        guard article.publishedAt >= from, article.publishedAt < until, !exclude.contains(article.id) else {
                            continue
                        }
                        picked.append(article)
                        if picked.count == limit { return picked }
                    }
                }
            }
            return picked
        }
    }
}
