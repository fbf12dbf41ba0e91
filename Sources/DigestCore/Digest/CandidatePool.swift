/// The articles that may be picked this run, newest first, with a topic index for ranking.
///
/// Built once per run from the articles published in the fortnight before the week's end (with a day
/// of slack either side for time zones); each user then takes the ones inside their own window.
///
/// Ranking uses one bit set per topic over the articles (bit *i* is article *i*, newest first).
/// A user's overlap counts are added up in bit planes (a binary counter kept word-wise), so a pick
/// costs a few operations per 64 articles and topic instead of one per posting, and the articles
/// are then read level by level (most shared topics first), newest first within a level, stopping
/// at the limit.
public struct CandidatePool: Sendable {
    /// Newest first; ties broken by id so picks are deterministic.
    public let articles: [Article]
    /// For each topic, the articles that carry it, as bits.
    let topicBits: [String: [UInt64]]
    /// Words per bit set.
    let words: Int

    public init(articles: [Article]) {
        let sorted = articles.sorted {
            $0.publishedAt != $1.publishedAt ? $0.publishedAt > $1.publishedAt : $0.id < $1.id
        }
        let words = (sorted.count + 63) / 64
        var bits: [String: [UInt64]] = [:]
        for (index, article) in sorted.enumerated() {
            for topic in Set(article.topics) {
                bits[topic, default: [UInt64](repeating: 0, count: words)][index >> 6] |= 1 << UInt64(index & 63)
            }
        }
        self.articles = sorted
        self.topicBits = bits
        self.words = words
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
        // Plane p, word w at [p * words + w]: bit p of the overlap count of the 64 articles in word w.
        let planeCount = max(1, Int.bitWidth - sets.count.leadingZeroBitCount)
        let tail = articles.count & 63
        let lastMask: UInt64 = tail == 0 ? ~0 : (1 << UInt64(tail)) - 1
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: planeCount * words) { planes in
            planes.initialize(repeating: 0)
            for set in sets {
                set.withUnsafeBufferPointer { bits in
                    for word in 0..<words {
                        var carry = bits[word]
                        var slot = word
                        while carry != 0 {
                            let next = planes[slot] & carry
                            planes[slot] ^= carry
                            carry = next
                            slot += words
                        }
                    }
                }
            }
            var picked: [Article] = []
            picked.reserveCapacity(limit)
            for level in stride(from: sets.count, through: 0, by: -1) {
                for word in 0..<words {
                    var matching: UInt64 = word == words - 1 ? lastMask : ~0
                    var slot = word
                    for plane in 0..<planeCount {
                        matching &= (level >> plane) & 1 == 1 ? planes[slot] : ~planes[slot]
                        if matching == 0 { break }
                        slot += words
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
